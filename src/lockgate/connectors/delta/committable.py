"""The data files one subtask wrote for a Delta table in an epoch, and their commit: the
files of every subtask of a checkpoint added in one Delta commit, with the sink's
application transaction, which makes the commit happen once.

Delta's ``txn`` action records, per application id, the last version that application
committed, in the same commit as its files: a commit whose version the table already holds
is skipped, so a commit redone after a crash adds nothing twice. The version is the
``commit_version`` of the epoch the files were written in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any

from lockgate.common.records import Minimum, Record
from lockgate.connectors.delta.table import DeltaTableSpec
from lockgate.connectors.file.sink import SinkError
from lockgate.core.two_phase_commit import CommitFailedError, read_committable

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
        return read_committable(cls, raw, SinkError, "Delta sink")


def commit_files(table: DeltaTableSpec, app_id: str, parts: list[DeltaCommittable]) -> bool:
    """Add the files of the ``parts`` the table does not hold yet: those of a version
    above the application's last (a checkpoint may also hold parts of the one before,
    committed before its subtasks heard of it). Whether it added any.

    A table that changed under the job (another schema, partitioning or writer duties) is a
    ``DeltaTableError``, which fails the job: committing again would not help. A table that
    cannot be reached is a ``CommitFailedError``: the job fails over and commits again.
    """
    from deltalake.exceptions import DeltaError

    try:
        return _append(table, app_id, parts)
    except (DeltaError, OSError) as exc:
        raise CommitFailedError(
            f"Delta table {table.location}: commit of application {app_id} (versions up to "
            f"{max(p.version for p in parts)}) failed: {exc}"
        ) from exc


def _append(table: DeltaTableSpec, app_id: str, parts: list[DeltaCommittable]) -> bool:
    from deltalake import DeltaTable, Schema
    from deltalake.transaction import AddAction, CommitProperties, RemoveAction, Transaction

    delta = DeltaTable(table.location)  # the sink created it before the job
    committed = delta.transaction_version(app_id)
    fresh = [p for p in parts if committed is None or p.version > committed]
    if not any(p.files for p in fresh):
        return False  # committed before a crash: the restore's commit adds nothing
    table.check_table(delta)
    actions: list[AddAction | RemoveAction] = [
        AddAction(
            f.path,  # as on disk: delta-rs writes it to the log as a URI path
            f.size,
            f.partition_values,
            f.modification_time,
            True,
            json.dumps({"numRecords": f.records}),
        )
        for p in fresh
        for f in p.files
    ]
    transaction = Transaction(app_id, max(p.version for p in fresh))
    delta.create_write_transaction(
        actions,
        mode="append",
        schema=Schema.from_arrow(table.schema),
        partition_by=list(table.partition_columns) or None,
        commit_properties=CommitProperties(app_transactions=[transaction]),
    )
    return True
