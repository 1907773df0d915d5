"""State backends at PyFlink's path (``pyflink.datastream.state_backend``)."""

from __future__ import annotations


class StateBackend:
    backend_type = ""


class HashMapStateBackend(StateBackend):
    """Keyed state as Python dicts per key group in the subtask's memory."""

    backend_type = "hashmap"


__all__ = ["HashMapStateBackend", "StateBackend"]
