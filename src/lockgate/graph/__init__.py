"""From API calls to an executable plan: transformations, StreamGraph, JobGraph."""
