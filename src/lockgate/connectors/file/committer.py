"""The FileSink's committer on the driver (Flink's Sink V2 ``Committer``)."""

from __future__ import annotations

from typing import Any

from lockgate.connectors.file.committable import PartCommittable, commit_part
from lockgate.core.two_phase_commit import Committer


class FileCommitter(Committer):
    """Commits the FileSink's pending part files on the driver."""

    def commit(self, committable: Any) -> None:
        commit_part(PartCommittable.read(committable))

    def staged_files(self, committable: Any) -> list[str]:
        return [PartCommittable.read(committable).pending]
