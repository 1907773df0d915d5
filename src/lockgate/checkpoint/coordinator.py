"""The CheckpointCoordinator: turns completed epochs into checkpoints and keeps them.

An epoch's end is a consistent cut (every subtask snapshots after its whole input), so a
checkpoint is the decision to keep one epoch's state versions: once every subtask has
acknowledged, ``_metadata`` is written (last, atomically), then sinks commit, then
checkpoints beyond the retained count are dropped together with the state files that no
retained checkpoint and no live state version still uses.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from lockgate.checkpoint import metadata
from lockgate.checkpoint.metadata import CheckpointMetadata, OperatorState
from lockgate.checkpoint.signing_key import CheckpointSigningKey
from lockgate.core.fs.storage import Storage, read_url


@dataclass
class CheckpointStats:
    """What a user sees per checkpoint (as Flink's checkpoint history)."""

    id: int
    epoch: int
    trigger_timestamp: float  # wall clock, seconds since the epoch
    duration_ms: float
    size_bytes: int  # all state the checkpoint refers to
    written_bytes: int  # state written since the previous checkpoint
    state_size_per_operator: dict[str, int]
    status: str  # COMPLETED or FAILED
    path: str | None = None
    failure: str | None = None


@dataclass
class CompletedCheckpoint:
    id: int
    epoch: int
    metadata: CheckpointMetadata  # with state file URLs made absolute
    path: str | None  # chk-<n> directory URL (None: held in driver memory)

    def files(self) -> set[str]:
        return set(self.metadata.files())


@dataclass
class CheckpointSettings:
    interval_ms: int | None
    min_pause_ms: int
    timeout_ms: int
    tolerable_failures: int
    num_retained: int
    retention: str  # NO_EXTERNALIZED_CHECKPOINTS / RETAIN_ON_CANCELLATION / ...
    exactly_once: bool

    @property
    def enabled(self) -> bool:
        return self.interval_ms is not None

    @property
    def commits_on_checkpoint(self) -> bool:
        """Sinks publish when a checkpoint completes (exactly-once), not after every epoch."""
        return self.enabled and self.exactly_once


@dataclass
class CheckpointCoordinator:
    settings: CheckpointSettings
    job_id: str
    job_root: Storage | None  # <checkpoint-dir>/<job-id>; None: checkpoints in driver memory
    signing_key: CheckpointSigningKey | None  # signs every _metadata it writes
    retained: list[CompletedCheckpoint] = field(default_factory=list)
    history_size: int = 10  # most recent checkpoints whose statistics are kept
    history: deque[CheckpointStats] = field(init=False)
    next_id: int = 1
    completed_count: int = 0  # over the job's life, beyond the history
    failed_count: int = 0
    consecutive_failures: int = 0
    last_trigger: float = field(default_factory=time.monotonic)
    last_completion: float = 0.0

    def __post_init__(self) -> None:
        self.history = deque(maxlen=self.history_size)

    def due(self, end_of_input: bool) -> bool:
        """Whether the epoch about to run ends with a checkpoint."""
        interval_ms = self.settings.interval_ms
        if interval_ms is None:
            return False
        if end_of_input:
            return True  # a finished bounded job's final checkpoint commits all output
        now = time.monotonic()
        return (
            now - self.last_trigger >= interval_ms / 1000
            and now - self.last_completion >= self.settings.min_pause_ms / 1000
        )

    def triggered(self) -> None:
        self.last_trigger = time.monotonic()

    @property
    def latest(self) -> CompletedCheckpoint | None:
        return self.retained[-1] if self.retained else None

    def complete(
        self,
        epoch: int,
        operators: dict[str, OperatorState],
        started: float,
        written_bytes: int,
        before_write: Callable[[int], None] = lambda checkpoint_id: None,
    ) -> CompletedCheckpoint:
        """Write ``_metadata`` for a fully acknowledged epoch and keep the checkpoint.

        ``before_write(checkpoint_id)`` runs just before ``_metadata`` is written (tests
        inject storage failures there). A failed write removes the checkpoint's directory:
        without ``_metadata`` it is not a checkpoint, and nothing else would delete it.
        """
        checkpoint_id = self.next_id  # a failed write leaves the id to ``failed``
        body = metadata.CheckpointMetadata(self.job_id, checkpoint_id, epoch, operators)
        path = None
        if self.job_root is not None:
            chk = self.job_root.child(f"chk-{checkpoint_id}")
            prefix = self.job_root.url_of("") + "/"

            def relative_path(url: str) -> str:
                if not url.startswith(prefix):
                    raise ValueError(
                        f"checkpoint {checkpoint_id} names the state file {url}, outside the "
                        f"job's directory {prefix}"
                    )
                return url[len(prefix) :]

            relative = body.map_files(relative_path)
            try:
                before_write(checkpoint_id)
                chk.write_bytes("_metadata", metadata.encode(relative, self.signing_key))
            except BaseException:
                chk.remove("")
                raise
            path = chk.url_of("")
        else:
            before_write(checkpoint_id)
        self.next_id += 1
        checkpoint = CompletedCheckpoint(checkpoint_id, epoch, body, path)
        self.retained.append(checkpoint)
        self.completed_count += 1
        self.consecutive_failures = 0
        self.last_completion = time.monotonic()
        sizes = {uid: operator.state_size() for uid, operator in operators.items()}
        self.history.append(
            CheckpointStats(
                checkpoint_id,
                epoch,
                time.time() - (time.perf_counter() - started),
                (time.perf_counter() - started) * 1000,
                sum(sizes.values()),
                written_bytes,
                sizes,
                "COMPLETED",
                path,
            )
        )
        return checkpoint

    def failed(self, epoch: int, reason: str, started: float) -> bool:
        """Record a failed checkpoint; True when more failures than tolerated have happened."""
        checkpoint_id = self.next_id
        self.next_id += 1
        self.failed_count += 1
        self.consecutive_failures += 1
        self.history.append(
            CheckpointStats(
                checkpoint_id,
                epoch,
                time.time(),
                (time.perf_counter() - started) * 1000,
                0,
                0,
                {},
                "FAILED",
                failure=reason,
            )
        )
        return self.consecutive_failures > self.settings.tolerable_failures

    def subsume(self) -> list[CompletedCheckpoint]:
        """Drop checkpoints beyond the retained count; returns them (their shared files are
        the SharedStateRegistry's to delete)."""
        dropped = []
        while len(self.retained) > self.settings.num_retained:
            dropped.append(self.retained.pop(0))
            if self.job_root is not None:
                self.job_root.remove(f"chk-{dropped[-1].id}")
        return dropped

    def shutdown(self, status: str) -> bool:
        """Apply Flink's retention when the job ends (FINISHED, CANCELED or FAILED).

        Returns whether retained checkpoints stay on storage.
        """
        if self.job_root is None:
            return False
        retention = self.settings.retention
        keep = bool(self.retained) and (
            (status == "CANCELED" and retention == "RETAIN_ON_CANCELLATION")
            or (status == "FAILED" and retention != "NO_EXTERNALIZED_CHECKPOINTS")
        )
        if not keep:
            self.job_root.remove("")
        return keep


def checkpoint_number(name: str) -> int | None:
    """n of a directory named ``chk-<n>``; None for any other name."""
    return int(name[4:]) if name.startswith("chk-") and name[4:].isdigit() else None


def with_absolute_files(
    body: CheckpointMetadata, directory_url: str, meta_url: str
) -> CheckpointMetadata:
    """``body`` (read from ``meta_url``) with the file paths it holds, relative to
    ``directory_url``, made URLs. Every path must lie inside that directory: a restore reads
    (and may later delete) what a checkpoint names, so one that names anything else is
    refused, naming the file and the reference."""
    prefix = directory_url + "/"

    def absolute(reference: str) -> str:
        problem = _outside(reference)
        if problem is not None:
            raise metadata.CheckpointFormatError(
                f"{meta_url} names the state file {reference!r}, which {problem}: a checkpoint "
                f"or savepoint refers only to files inside its own directory {directory_url}"
            )
        return prefix + reference

    return body.map_files(absolute)


def _outside(reference: str) -> str | None:
    """Why ``reference`` does not name a file inside the directory it is relative to."""
    if "://" in reference or reference.startswith("/"):
        return "is not a relative path"
    parts = reference.split("/")
    if ".." in parts or "." in parts or "" in parts:
        return "is not a plain relative path (it has '..', '.' or an empty part)"
    return None


def load_checkpoint(
    path: str, signing_key: CheckpointSigningKey | None
) -> tuple[CompletedCheckpoint, list[str]]:
    """Read a checkpoint from a ``chk-<n>`` directory or its ``_metadata``, signed with
    ``signing_key`` when there is one.

    A damaged ``_metadata`` makes the previous retained checkpoint of the same job the one
    to restore; the second value lists what was skipped and why. With a signing key nothing
    is skipped: a checkpoint that cannot be used is refused, since whoever can damage one
    can damage them all, and falling back would roll the job back to older state.
    """
    path = path.rstrip("/")
    chk_dir = path[: -len("/_metadata")] if path.endswith("/_metadata") else path
    job_root_url, _, name = chk_dir.rpartition("/")
    requested = checkpoint_number(name)
    if requested is None:
        raise metadata.CheckpointFormatError(
            f"state recovery path {path} is not a chk-<n> directory or its _metadata file"
        )
    job_root = Storage(job_root_url)
    if not job_root.exists(f"{name}/_metadata") and not job_root.exists(name):
        raise metadata.CheckpointFormatError(f"state recovery path {path} does not exist")
    numbers = (checkpoint_number(n) for n in job_root.list(""))
    candidates = sorted((n for n in numbers if n is not None), reverse=True)
    skipped: list[str] = []
    for checkpoint_id in [c for c in candidates if c <= requested]:
        meta_url = job_root.url_of(f"chk-{checkpoint_id}/_metadata")
        try:
            body = metadata.decode(read_url(meta_url), meta_url, signing_key)
            if body.checkpoint_id != checkpoint_id:
                raise metadata.CheckpointFormatError(
                    f"{meta_url} holds checkpoint {body.checkpoint_id}, not {checkpoint_id}"
                )
            absolute = with_absolute_files(body, job_root.url_of(""), meta_url)
        except FileNotFoundError:
            problem = f"{meta_url} is missing"
        except metadata.CheckpointSignatureError:
            raise
        except metadata.CheckpointFormatError as exc:
            problem = str(exc)
        else:
            return (
                CompletedCheckpoint(
                    body.checkpoint_id,
                    body.epoch,
                    absolute,
                    job_root.url_of(f"chk-{checkpoint_id}"),
                ),
                skipped,
            )
        if signing_key is not None:
            raise metadata.CheckpointSignatureError(
                f"{problem}: a job with a signing key does not fall back to an older checkpoint"
            )
        skipped.append(problem)
    reasons = "; ".join(skipped) or "no checkpoint found"
    raise metadata.CheckpointFormatError(f"no usable checkpoint at {path}: {reasons}")
