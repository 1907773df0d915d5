"""Checkpoint storage and (in later parts) the checkpoint coordinator and savepoints."""
