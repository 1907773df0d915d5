"""The FileSink's writer in a subtask host: records written into hidden in-progress part files
(by the sink's row or bulk format), rolled into pending parts at the end of every epoch (the
pre-commit).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from fsspec.core import url_to_fs

from lockgate.connectors.file.committable import PartCommittable, commit_part
from lockgate.connectors.file.part_format import PartWriter
from lockgate.connectors.file.sink import FileSinkSettings
from lockgate.runtime.subtaskhost.operators import Operator, OperatorContext


class _PartFile:
    __slots__ = ("final", "path", "write", "writer")

    def __init__(self, writer: PartWriter, path: str, final: str):
        self.writer = writer
        self.write = writer.write
        self.path = path
        self.final = final


class FileSinkWriter(Operator):
    """Writes part files; publishes them per epoch, or when a checkpoint completes.

    With exactly-once checkpointing, files rolled at the end of an epoch stay hidden as
    pending committables in the operator state until the checkpoint that covers the epoch
    completes and the job master commits them (two-phase commit).
    """

    def __init__(self, ctx: OperatorContext, settings: FileSinkSettings):
        super().__init__(ctx)
        self.settings = settings
        self.fs, root = url_to_fs(settings.base_path)
        self.root = root.rstrip("/")
        self.part_format = settings.part_format
        self.writer_id = str(uuid.uuid4())  # new per instance: names never repeat
        self.next_part = 0
        self.open_files: dict[str, _PartFile] = {}
        self.pending: list[PartCommittable] = []
        assigner = settings.bucket_assigner
        self.bucket_pattern = assigner.strftime_pattern()
        self.zone = ZoneInfo(assigner.timezone_id) if assigner.timezone_id else None
        self.bucket_second = -1
        self.bucket = ""

    def snapshot_state(self) -> dict[str, Any]:
        return {
            "next_part": self.next_part,
            "committables": [part.to_json() for part in self.pending],
        }

    def restore_state(self, state: dict[str, Any]) -> None:
        self.next_part = int(state["next_part"])
        self.pending = [PartCommittable.read(raw) for raw in state.get("committables", ())]

    def notify_checkpoint_complete(self, epoch: int) -> None:
        self.pending = [part for part in self.pending if part.epoch > epoch]

    def _current_bucket(self) -> str:
        if not self.bucket_pattern:
            return ""
        now = int(time.time())
        if now != self.bucket_second:
            moment = datetime.fromtimestamp(now, self.zone or UTC)
            if self.zone is None:
                moment = moment.astimezone()
            self.bucket = moment.strftime(self.bucket_pattern)
            self.bucket_second = now
        return self.bucket

    def _open(self, bucket: str) -> _PartFile:
        settings = self.settings
        directory = f"{self.root}/{bucket}" if bucket else self.root
        name = f"{settings.part_prefix}-{self.writer_id}-{self.next_part}"
        self.next_part += 1
        path = f"{directory}/.{name}{settings.part_suffix}.inprogress.{uuid.uuid4().hex}"
        staging = self.ctx.staging
        if staging is None:
            raise RuntimeError("a FileSink part file opened outside an epoch (no staging log)")
        staging.stage(self.fs.unstrip_protocol(path))  # recorded before it exists
        self.fs.makedirs(directory, exist_ok=True)
        writer = self.part_format.open(self.fs.open(path, "wb"))
        part = _PartFile(writer, path, f"{directory}/{name}{settings.part_suffix}")
        self.open_files[bucket] = part
        return part

    def process(self, value: Any) -> None:
        bucket = self._current_bucket()
        part = self.open_files.get(bucket) or self._open(bucket)
        try:
            size = part.write(value)
        except Exception as exc:
            raise self.failure(exc, value, self.part_format.what) from exc
        if size >= self.settings.part_size:
            self._roll(bucket)

    def _roll(self, bucket: str) -> None:
        part = self.open_files.pop(bucket)
        try:
            size = part.writer.close()
        except Exception as exc:
            raise self.failure(
                exc, what=f"{self.part_format.what}, completing {part.path}"
            ) from exc
        unstrip = self.fs.unstrip_protocol
        self.pending.append(
            PartCommittable(self.ctx.epoch, unstrip(part.path), unstrip(part.final), size)
        )

    def end_epoch(self) -> None:
        """Roll every open part file (pre-commit); publish now unless exactly-once."""
        for bucket in list(self.open_files):
            self._roll(bucket)
        if not self.ctx.commit_on_checkpoint:
            for part in self.pending:
                commit_part(part)
            self.pending.clear()


def file_sink_writer(settings: FileSinkSettings) -> Callable[[OperatorContext], FileSinkWriter]:
    def create(ctx: OperatorContext) -> FileSinkWriter:
        return FileSinkWriter(ctx, settings)

    return create
