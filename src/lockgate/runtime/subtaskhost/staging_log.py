"""The staging log of one task attempt: each file a sink stages is recorded before it exists
(see ``jobmaster/staged_files.py``)."""

from __future__ import annotations

from dataclasses import replace

from lockgate.core.fs.storage import Storage
from lockgate.runtime.messages.staged_files import StagedFiles


class StagingLog:
    """The staging record of one attempt, rewritten before each new file."""

    def __init__(self, storage: Storage, epoch: int, vertex: int, subtask: int, attempt: str):
        self.storage = storage
        self.record = StagedFiles(epoch, vertex, subtask, attempt, ())

    def stage(self, url: str) -> None:
        self.record = replace(self.record, files=(*self.record.files, url))
        self.storage.write_json(self.record.name, self.record.to_json())
