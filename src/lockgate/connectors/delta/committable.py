"""The data files one subtask wrote for a Delta table since the last checkpoint, and the
application transaction that makes their commit happen once.

Delta's ``txn`` action records, per application id, the last version that application
committed, in the same commit as its files: a commit whose version the table already holds
is skipped, so a commit redone after a crash adds nothing twice. The version is
``generation << 32 | epoch`` of the epoch the files were written in: it grows with every
epoch of a run and with every restore (a restore that falls back to an older checkpoint runs
epoch numbers again, under a new generation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from lockgate.common.records import Minimum, Record, RecordFormatError
from lockgate.connectors.file.sink import SinkError

Count = Annotated[int, Minimum(0, "a count")]


@dataclass(frozen=True)
class DeltaDataFile(Record):
    """One Parquet data file, as its Delta ``add`` action names it."""

    path: str  # relative to the table, as written to disk (decoded)
    size: Count
    partition_values: dict[str, str | None]
    records: Count
    modification_time: Count  # ms since the epoch


@dataclass(frozen=True)
class DeltaCommittable(Record):
    """Files a subtask wrote in one epoch, to be added by the application transaction
    ``app_id`` at ``version``."""

    epoch: Count
    app_id: str
    version: Count
    files: tuple[DeltaDataFile, ...]

    @classmethod
    def read(cls, raw: Any) -> DeltaCommittable:
        try:
            return cls.from_json(raw, f"{raw!r:.120}")
        except RecordFormatError as exc:
            raise SinkError(f"not a Delta sink committable: {exc}") from None


def transaction_version(generation: int, epoch: int) -> int:
    return generation << 32 | epoch
