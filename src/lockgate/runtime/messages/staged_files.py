"""The staging record: which files one attempt of one subtask staged outside the job's
directories in one epoch (see ``jobmaster/staged_files.py`` for why and who deletes them).
Written by the attempt's host (``subtaskhost/staging_log.py``), read by the driver.
"""

from __future__ import annotations

from dataclasses import dataclass

from lockgate.common.records import Record

FORMAT = "lockgate-staged-files"
VERSION = 1


@dataclass(frozen=True)
class StagedFiles(Record, format=FORMAT, version=VERSION):
    """What one attempt of one subtask staged in one epoch."""

    epoch: int
    vertex: int
    subtask: int
    attempt: str
    files: tuple[str, ...]

    @property
    def name(self) -> str:
        return record_name(self.epoch, self.vertex, self.subtask, self.attempt)


def record_name(epoch: int, vertex: int, subtask: int, attempt: str) -> str:
    return f"e{epoch}/{vertex}-{subtask}-{attempt}.json"
