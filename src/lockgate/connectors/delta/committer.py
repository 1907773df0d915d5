"""The Delta sink's committer on the driver: a checkpoint's data files, from every subtask,
added to the table in one Delta commit (``commit_files``)."""

from __future__ import annotations

import os
import posixpath
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

from lockgate.connectors.delta.committable import DeltaCommittable, commit_files
from lockgate.connectors.delta.table import DeltaTableError, DeltaTableSpec
from lockgate.core.two_phase_commit import Committer


class DeltaCommitter(Committer):
    def __init__(self, table: DeltaTableSpec):
        self.table = table
        self._snapshot: Any = None  # the table as aborts last read it (a DeltaTable)

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
            commit_files(self.table, app_id, parts)

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
        commit happened (a restore that falls back past a committed checkpoint, a losing
        attempt that committed itself without exactly-once, must not take data out of the
        table). If the table cannot be read, the file stays too (an ``OSError``: the next
        sweep tries again)."""
        path = _local_path(url)
        if path is None or not os.path.exists(path):
            return
        if path not in self._referenced():
            os.remove(path)

    def _referenced(self) -> set[str]:
        """The data files of the table's latest version, as paths on disk."""
        from deltalake import DeltaTable
        from deltalake.exceptions import DeltaError

        location = self.table.location
        try:
            if self._snapshot is None:
                self._snapshot = DeltaTable(location)
            else:
                self._snapshot.update_incremental()  # reads only the commits since
            actions = pa.table(self._snapshot.get_add_actions(flatten=True))
        except DeltaError as exc:
            raise OSError(f"Delta table {location} cannot be read to abort files: {exc}") from exc
        # the log's paths are URIs: decoded once, they are the names on disk
        return {
            os.path.normpath(os.path.join(location, unquote(relative)))
            for relative in actions.column("path").to_pylist()
        }

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_snapshot": None}  # the driver's, not the tasks'

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
