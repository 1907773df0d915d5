"""``JobID``: a job's identity, 32 hex characters as Flink prints it."""

from __future__ import annotations


class JobID:
    __slots__ = ("_hex",)

    def __init__(self, hex_id: str):
        self._hex = hex_id

    def __str__(self) -> str:
        return self._hex

    def __repr__(self) -> str:
        return f"JobID({self._hex})"

    # PyFlink's JobID compares by identity; two handles on one job should be equal
    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobID) and other._hex == self._hex

    def __hash__(self) -> int:
        return hash(self._hex)
