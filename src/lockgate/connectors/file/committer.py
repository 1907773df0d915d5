"""The FileSink's committer on the driver (Flink's Sink V2 ``Committer``)."""

from __future__ import annotations

import posixpath
from typing import Any

from fsspec.core import url_to_fs

from lockgate.connectors.file.committable import PartCommittable, commit_part
from lockgate.connectors.file.sink import SinkError
from lockgate.core.fs.storage import Storage
from lockgate.core.two_phase_commit import Committer


class FileCommitter(Committer):
    """Commits the FileSink's pending part files on the driver, only under its base path:
    a committable is read from a checkpoint, and the checkpoint does not decide where the
    sink writes."""

    def __init__(self, base_path: str):
        self.base = Storage(base_path)

    def commit(self, committable: Any) -> None:
        commit_part(self._part(committable))

    def may_stage(self, url: str) -> bool:
        relative = self.base.relative_of(url)
        return relative is not None and _is_pending_name(posixpath.basename(relative))

    def staged_files(self, committable: Any) -> list[str]:
        return [self._part(committable).pending]

    def abort(self, url: str) -> None:
        fs, path = url_to_fs(url)
        if fs.exists(path):
            fs.rm(path)

    def _part(self, committable: Any) -> PartCommittable:
        part = PartCommittable.read(committable)
        final = self.base.relative_of(part.final)
        pending = self.base.relative_of(part.pending)
        if final is None or pending is None:
            raise SinkError(
                f"a FileSink committable names {part.final} (pending {part.pending}), outside "
                f"the sink's base path {self.base.url}: not committed (a checkpoint of a job "
                f"whose sink wrote elsewhere is restored with that sink's base path)"
            )
        directory, name = posixpath.split(final)
        pending_directory, pending_name = posixpath.split(pending)
        if (
            pending_directory != directory
            or name.startswith(".")
            or not pending_name.startswith(f".{name}.inprogress.")
        ):
            raise SinkError(
                f"a FileSink committable's pending file {part.pending} is not the pending "
                f"file of {part.final}: not committed"
            )
        return part


def _is_pending_name(name: str) -> bool:
    """A hidden in-progress part file (``FileSinkWriter._open``)."""
    return name.startswith(".") and ".inprogress." in name
