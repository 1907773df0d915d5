"""Row-format file sink: records encoded to part files under a base path, per bucket.

Records go to hidden in-progress files (``.part-...inprogress.<id>``) so readers of the
directory never see partial output. At the end of every epoch each in-progress file is
closed and becomes pending; it is renamed to its final name
``<prefix>-<uid>-<subtask>-<n><suffix>`` at once (at-least-once, or no checkpointing), or
when the checkpoint covering the epoch completes (exactly-once). Part numbers continue
from the previous epoch's operator state, so a re-run epoch writes the same names again.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from fsspec.core import url_to_fs

from lockgate.runtime.operators import Operator, OperatorContext

_JAVA_PATTERN = (
    ("yyyy", "%Y"),
    ("MM", "%m"),
    ("dd", "%d"),
    ("HH", "%H"),
    ("mm", "%M"),
    ("ss", "%S"),
)


class SinkError(RuntimeError):
    """A sink cannot write where it was told to."""


@dataclass(frozen=True)
class BucketAssigner:
    """Which sub-directory of the base path a record goes to."""

    date_format: str | None = None  # None: the base path itself
    timezone_id: str | None = None

    def strftime_pattern(self) -> str:
        pattern = self.date_format or ""
        for java, python in _JAVA_PATTERN:
            pattern = pattern.replace(java, python)
        return pattern


@dataclass(frozen=True)
class FileSinkSettings:
    base_path: str
    encoder: Any
    part_prefix: str = "part"
    part_suffix: str = ""
    part_size: int = 128 * 1024 * 1024
    bucket_assigner: BucketAssigner = BucketAssigner("yyyy-MM-dd--HH")

    def validate(self) -> None:
        fs, root = url_to_fs(self.base_path)
        probe = f"{root.rstrip('/')}/.lockgate-probe-{uuid.uuid4().hex}"
        try:
            fs.makedirs(root, exist_ok=True)
            fs.pipe_file(probe, b"")
            fs.rm(probe)
        except OSError as exc:
            raise SinkError(
                f"FileSink base path is not writable: {self.base_path} ({exc})"
            ) from exc


class _PartFile:
    __slots__ = ("final", "handle", "path", "size")

    def __init__(self, handle: Any, path: str, final: str):
        self.handle = handle
        self.path = path
        self.final = final
        self.size = 0


def commit_part(committable: list[Any]) -> None:
    """Make one pending part file visible; safe to repeat (Flink's committers must be)."""
    _, pending_url, final_url = committable
    fs, pending = url_to_fs(pending_url)
    _, final = url_to_fs(final_url)
    if fs.exists(pending):
        fs.mv(pending, final)
    elif not fs.exists(final):
        raise SinkError(
            f"FileSink cannot commit {final_url}: its pending file {pending_url} is gone"
        )


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
        self.encode = settings.encoder.encode
        self.next_part = 0
        self.open_files: dict[str, _PartFile] = {}
        self.pending: list[list[Any]] = []  # [epoch, pending url, final url]
        assigner = settings.bucket_assigner
        self.bucket_pattern = assigner.strftime_pattern()
        self.zone = ZoneInfo(assigner.timezone_id) if assigner.timezone_id else None
        self.bucket_second = -1
        self.bucket = ""

    def open(self) -> None:
        """Discard hidden files of this subtask that no committable refers to.

        They are in-progress files of a failed attempt, or pending files of epochs after
        the checkpoint this subtask was restored from: never to be published.
        """
        settings = self.settings
        hidden = f".{settings.part_prefix}-{self.ctx.uid}-{self.ctx.index}-*.inprogress.*"
        found = self.fs.glob(f"{self.root}/{hidden}") + self.fs.glob(f"{self.root}/**/{hidden}")
        keep = {url_to_fs(entry[1])[1] for entry in self.pending}
        for path in set(found) - keep:
            self.fs.rm(path)

    def snapshot_state(self) -> dict[str, Any]:
        return {"next_part": self.next_part, "committables": [list(e) for e in self.pending]}

    def restore_state(self, state: dict[str, Any]) -> None:
        self.next_part = int(state["next_part"])
        self.pending = [list(entry) for entry in state.get("committables", ())]

    def notify_checkpoint_complete(self, epoch: int) -> None:
        self.pending = [entry for entry in self.pending if entry[0] > epoch]

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
        name = f"{settings.part_prefix}-{self.ctx.uid}-{self.ctx.index}-{self.next_part}"
        self.next_part += 1
        path = f"{directory}/.{name}{settings.part_suffix}.inprogress.{uuid.uuid4().hex}"
        self.fs.makedirs(directory, exist_ok=True)
        part = _PartFile(
            self.fs.open(path, "wb"), path, f"{directory}/{name}{settings.part_suffix}"
        )
        self.open_files[bucket] = part
        return part

    def process(self, value: Any) -> None:
        try:
            data = self.encode(value)
        except Exception as exc:
            raise self.failure(exc, value, "the FileSink encoder") from exc
        bucket = self._current_bucket()
        part = self.open_files.get(bucket) or self._open(bucket)
        part.handle.write(data)
        part.size += len(data)
        if part.size >= self.settings.part_size:
            self._roll(bucket)

    def _roll(self, bucket: str) -> None:
        part = self.open_files.pop(bucket)
        part.handle.close()
        unstrip = self.fs.unstrip_protocol
        self.pending.append([self.ctx.epoch, unstrip(part.path), unstrip(part.final)])

    def end_epoch(self) -> None:
        """Roll every open part file (pre-commit); publish now unless exactly-once."""
        for bucket in list(self.open_files):
            self._roll(bucket)
        if not self.ctx.commit_on_checkpoint:
            for entry in self.pending:
                commit_part(entry)
            self.pending.clear()


def file_sink_writer(settings: FileSinkSettings):
    def create(ctx: OperatorContext) -> FileSinkWriter:
        return FileSinkWriter(ctx, settings)

    return create


__all__ = ["BucketAssigner", "FileSinkSettings", "SinkError", "commit_part", "file_sink_writer"]
