"""Checkpoints: the ``_metadata`` format, the coordinator and retained checkpoints, savepoints,
the shared-state registry, and the assignment of state to subtasks on a restore."""
