"""Row-format file sink: records encoded to part files under a base path, per bucket.

Records go to hidden in-progress files (``.part-...inprogress.<id>``) so readers of the
directory never see partial output. At the end of every epoch each in-progress file is
closed and becomes pending; it is renamed to its final name ``<prefix>-<writer>-<n><suffix>``
at once (at-least-once, or no checkpointing), or when the checkpoint covering the epoch
completes (exactly-once). ``<writer>`` is a random id of the writer instance (as in Flink's
FileSink): a run into the same directory again, a restart without state, or an epoch run a
second time writes new names, and a commit never replaces a file that exists.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem

from lockgate.runtime.subtaskhost.operators import Operator, OperatorContext
from lockgate.runtime.two_phase_commit import Committer

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


@dataclass(frozen=True)
class PartCommittable:
    """A pending part file of one epoch and the name it gets when committed."""

    epoch: int
    pending: str  # URL of the hidden pending file
    final: str  # URL it is committed to
    size: int  # bytes: a final file of another size is not this part

    def to_json(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "pending": self.pending,
            "final": self.final,
            "size": self.size,
        }

    @staticmethod
    def from_json(raw: Any) -> PartCommittable:
        try:
            committable = PartCommittable(
                int(raw["epoch"]), str(raw["pending"]), str(raw["final"]), int(raw["size"])
            )
        except (KeyError, TypeError, ValueError):
            raise SinkError(f"not a FileSink committable: {raw!r}") from None
        return committable


class FileCommitter(Committer):
    """Commits the FileSink's pending part files on the driver."""

    def commit(self, committable: Any) -> None:
        commit_part(PartCommittable.from_json(committable))

    def staged_files(self, committable: Any) -> list[str]:
        return [PartCommittable.from_json(committable).pending]


def commit_part(part: PartCommittable) -> None:
    """Make one pending part file visible; safe to repeat (Flink's committers must be).

    Never replaces a file: if the final name exists, it must be this very part (committed
    before, its pending file not yet removed; or a copy of it cut short on a file system that
    copies to rename), otherwise the commit fails naming the file.
    """
    fs, pending = url_to_fs(part.pending)
    _, final = url_to_fs(part.final)
    if fs.exists(pending):
        if fs.exists(final):
            _settle_existing(fs, pending, final, part)
            return
        _publish(fs, pending, final, part)
    elif not fs.exists(final):
        raise SinkError(
            f"FileSink cannot commit {part.final}: its pending file {part.pending} is gone"
        )
    elif fs.size(final) != part.size:
        raise _clobber_error(part, fs.size(final))


def _publish(fs: Any, pending: str, final: str, part: PartCommittable) -> None:
    if isinstance(fs, LocalFileSystem):
        try:
            os.link(pending, final)  # fails if the name exists: never replaces a file
        except FileExistsError:
            _settle_existing(fs, pending, final, part)
            return
        os.unlink(pending)
    else:
        fs.mv(pending, final)


def _settle_existing(fs: Any, pending: str, final: str, part: PartCommittable) -> None:
    final_data, pending_data = fs.cat_file(final), fs.cat_file(pending)
    if final_data == pending_data:
        fs.rm(pending)  # committed before; only the pending file was left
    elif len(final_data) < len(pending_data) and pending_data.startswith(final_data):
        fs.rm(final)  # an interrupted copy of this part, never complete, never committed
        _publish(fs, pending, final, part)
    else:
        raise _clobber_error(part, len(final_data))


def _clobber_error(part: PartCommittable, size: int) -> SinkError:
    return SinkError(
        f"FileSink cannot commit {part.final}: a file of other content ({size} bytes, the "
        f"part has {part.size}) exists under that name, and committed files are never replaced"
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
        self.pending = [PartCommittable.from_json(raw) for raw in state.get("committables", ())]

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
        self.pending.append(
            PartCommittable(self.ctx.epoch, unstrip(part.path), unstrip(part.final), part.size)
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


__all__ = [
    "BucketAssigner",
    "FileCommitter",
    "FileSinkSettings",
    "PartCommittable",
    "SinkError",
    "commit_part",
    "file_sink_writer",
]
