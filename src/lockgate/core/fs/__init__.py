"""File systems (Flink's ``core.fs``): any fsspec URL, written atomically. The state backends,
checkpoints, savepoints, the runtime and the connectors all read and write through it."""
