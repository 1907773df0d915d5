"""Records of collect sinks (``execute_and_collect``) on their way to the user."""

from __future__ import annotations

from typing import Any


class CollectedResults:
    """In exactly-once mode an epoch's records are held until a checkpoint covers it: a
    failover runs the epochs after the restored checkpoint again, and they collect their
    records again. Otherwise they are released after their epoch."""

    def __init__(self) -> None:
        self._held: list[Any] = []
        self._released: list[Any] = []

    def hold(self, records: list[Any]) -> None:
        self._held.extend(records)

    def release(self) -> None:
        """A checkpoint covers every held record (or none is needed): they may go out."""
        self._released.extend(self._held)
        self._held = []

    def drop_held(self) -> None:
        """A restore undid the epochs that collected the held records."""
        self._held = []

    @property
    def has_released(self) -> bool:
        return bool(self._released)

    def take(self) -> list[Any]:
        released, self._released = self._released, []
        return released
