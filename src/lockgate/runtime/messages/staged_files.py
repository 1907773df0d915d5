"""The staging record: which files one attempt of one subtask staged outside the job's
directories in one epoch (see ``jobmaster/staged_files.py`` for why and who deletes them).
Written by the attempt's host (``subtaskhost/staging_log.py``), read by the driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lockgate.common.records import RecordFormatError, envelope, field, open_envelope

FORMAT = "lockgate-staged-files"
VERSION = 1


@dataclass(frozen=True)
class StagedFiles:
    """What one attempt of one subtask staged in one epoch."""

    epoch: int
    vertex: int
    subtask: int
    attempt: str
    files: tuple[str, ...]

    @property
    def name(self) -> str:
        return record_name(self.epoch, self.vertex, self.subtask, self.attempt)

    def to_json(self) -> dict[str, Any]:
        return envelope(
            FORMAT,
            VERSION,
            {
                "epoch": self.epoch,
                "vertex": self.vertex,
                "subtask": self.subtask,
                "attempt": self.attempt,
                "files": list(self.files),
            },
        )

    @staticmethod
    def from_json(raw: object, where: str) -> StagedFiles:
        body = open_envelope(raw, FORMAT, VERSION, where)
        files = field(body, "files", list, where)
        if not all(isinstance(url, str) for url in files):
            raise RecordFormatError(f"{where}: field 'files' must list URLs")
        return StagedFiles(
            field(body, "epoch", int, where),
            field(body, "vertex", int, where),
            field(body, "subtask", int, where),
            field(body, "attempt", str, where),
            tuple(files),
        )


def record_name(epoch: int, vertex: int, subtask: int, attempt: str) -> str:
    return f"e{epoch}/{vertex}-{subtask}-{attempt}.json"
