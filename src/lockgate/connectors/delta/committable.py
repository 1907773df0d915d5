"""The data files one subtask wrote for a Delta table in an epoch, and their commit: the
files of every subtask of a checkpoint added in one Delta commit, with the sink's
application transaction, which makes the commit happen once.

Delta's ``txn`` action records, per application id, the last version that application
committed, in the same commit as its files: a commit whose version the table already holds
is skipped, so a commit redone after a crash adds nothing twice. The version is
``generation << 32 | epoch`` of the epoch the files were written in: it grows with every
epoch of a run and with every restore (a restore that falls back to an older checkpoint runs
epoch numbers again, under a new generation).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any

from lockgate.common.records import Minimum, Record, RecordFormatError
from lockgate.connectors.delta.table import DeltaTableSpec
from lockgate.connectors.file.sink import SinkError
from lockgate.core.two_phase_commit import CommitFailedError

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


def commit_files(table: DeltaTableSpec, app_id: str, parts: list[DeltaCommittable]) -> None:
    """Add the files of the ``parts`` the table does not hold yet: those of a version
    above the application's last (a checkpoint may also hold parts of the one before,
    committed before its subtasks heard of it)."""
    from deltalake.exceptions import DeltaError

    location = table.location
    try:
        _append(table, app_id, parts)
    except (DeltaError, OSError) as exc:
        raise CommitFailedError(
            f"Delta table {location}: commit of application {app_id} (versions up to "
            f"{max(p.version for p in parts)}) failed: {exc}"
        ) from exc


def _append(table: DeltaTableSpec, app_id: str, parts: list[DeltaCommittable]) -> None:
    from deltalake import DeltaTable, Schema
    from deltalake.transaction import (
        AddAction,
        CommitProperties,
        RemoveAction,
        Transaction,
        create_table_with_add_actions,
    )

    location = table.location
    exists = DeltaTable.is_deltatable(location)
    committed = DeltaTable(location).transaction_version(app_id) if exists else None
    fresh = [p for p in parts if committed is None or p.version > committed]
    files = [f for p in fresh for f in p.files]
    if not files:
        return  # committed before a crash: the restore's commit adds nothing
    properties = CommitProperties(
        app_transactions=[Transaction(app_id, max(p.version for p in fresh))]
    )
    adds = [
        AddAction(
            f.path,  # as on disk: delta-rs writes it to the log as a URI path
            f.size,
            f.partition_values,
            f.modification_time,
            True,
            json.dumps({"numRecords": f.records}),
        )
        for f in files
    ]
    schema = Schema.from_arrow(table.schema)
    partition_by = list(table.partition_columns) or None
    if not exists:
        # the first commit creates the table; a concurrent creator makes it fail, and the
        # failover commits again, then by appending
        create_table_with_add_actions(
            location,
            schema,
            adds,
            mode="error",
            partition_by=partition_by,
            commit_properties=properties,
        )
        return
    actions: list[AddAction | RemoveAction] = [*adds]
    DeltaTable(location).create_write_transaction(
        actions,
        mode="append",
        schema=schema,
        partition_by=partition_by,
        commit_properties=properties,
    )
