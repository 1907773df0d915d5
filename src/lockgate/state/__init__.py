"""State: key groups, stable key hashing, keyed state backends and their snapshots."""
