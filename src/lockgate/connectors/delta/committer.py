"""The Delta sink's committer on the driver: a checkpoint's data files, from every subtask,
added to the table in one Delta commit with the sink's application transaction, or skipped
if the table holds that transaction's version already (the commit was made before a crash).
"""

from __future__ import annotations

import json
import os
import posixpath
from typing import Any

from lockgate.connectors.delta.committable import DeltaCommittable
from lockgate.connectors.delta.table import DeltaTableError, DeltaTableSpec
from lockgate.core.two_phase_commit import CommitFailedError, Committer


class DeltaCommitter(Committer):
    def __init__(self, table: DeltaTableSpec):
        self.table = table

    def groups(self, committables: list[Any]) -> list[list[Any]]:
        # one Delta commit a checkpoint: readers see all of it or none
        return [committables] if committables else []

    def commit(self, committable: Any) -> None:
        self.commit_group([committable])

    def commit_group(self, group: list[Any]) -> None:
        committables = [self._read(raw) for raw in group]
        by_app: dict[str, list[DeltaCommittable]] = {}
        for committable in committables:
            by_app.setdefault(committable.app_id, []).append(committable)
        for app_id, parts in by_app.items():  # a restored foreign checkpoint's app differs
            self._commit(app_id, parts)

    def _commit(self, app_id: str, parts: list[DeltaCommittable]) -> None:
        """Add the files of the ``parts`` the table does not hold yet: those of a version
        above the application's last (a checkpoint may also hold parts of the one before,
        committed before its subtasks heard of it)."""
        from deltalake.exceptions import DeltaError

        location = self.table.location
        try:
            self._append(app_id, parts)
        except (DeltaError, OSError) as exc:
            raise CommitFailedError(
                f"Delta table {location}: commit of application {app_id} (versions up to "
                f"{max(p.version for p in parts)}) failed: {exc}"
            ) from exc

    def _append(self, app_id: str, parts: list[DeltaCommittable]) -> None:
        from deltalake import DeltaTable, Schema
        from deltalake.transaction import (
            AddAction,
            CommitProperties,
            RemoveAction,
            Transaction,
            create_table_with_add_actions,
        )

        location = self.table.location
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
        schema = Schema.from_arrow(self.table.schema)
        partition_by = list(self.table.partition_columns) or None
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

    def may_stage(self, url: str) -> bool:
        path = _local_path(url)
        if path is None:
            return False
        relative = os.path.relpath(path, self.table.location)
        name = posixpath.basename(relative)
        return (
            not relative.startswith("..")
            and not relative.startswith("_delta_log")
            and name.startswith("part-")
            and name.endswith(".parquet")
        )

    def staged_files(self, committable: Any) -> list[str]:
        location = self.table.location
        return [f"file://{location}/{f.path}" for f in self._read(committable).files]

    def abort(self, url: str) -> None:
        """Delete an uncommitted data file. A file that the table references is kept: its
        commit happened (a restore that falls back past a committed checkpoint must not take
        data out of the table)."""
        from deltalake import DeltaTable

        path = _local_path(url)
        if path is None or not os.path.exists(path):
            return
        location = self.table.location
        if DeltaTable.is_deltatable(location):
            referenced = {os.path.normpath(uri) for uri in DeltaTable(location).file_uris()}
            if path in referenced:
                return
        os.remove(path)

    def _read(self, raw: Any) -> DeltaCommittable:
        committable = DeltaCommittable.read(raw)
        for data_file in committable.files:
            path = os.path.normpath(os.path.join(self.table.location, data_file.path))
            if not self.may_stage(f"file://{path}"):
                raise DeltaTableError(
                    f"a Delta sink committable names {data_file.path}, which is not a data "
                    f"file of the table {self.table.location}: not committed"
                )
        return committable


def _local_path(url: str) -> str | None:
    if url.startswith("file://"):
        return os.path.normpath(url[len("file://") :])
    return None
