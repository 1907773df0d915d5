"""What a job reports as it runs: statistics per epoch and checkpoint, and restarts."""

from __future__ import annotations

import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from lockgate.checkpoint.coordinator import CheckpointStats
from lockgate.common.job_execution_result import JobExecutionResult
from lockgate.common.job_id import JobID


@dataclass
class EpochStats:
    epoch: int
    records: int
    duration_ms: float
    state_bytes: int
    state_entries: int
    restored_subtasks: int
    checkpoint_id: int | None = None
    sources_ahead: bool = False  # its source tasks ran while the epoch before it did
    end_time_ms: int = field(default_factory=lambda: int(time.time() * 1000))  # wall clock


@dataclass
class EpochResult:
    stats: EpochStats | None  # None: results released late, after a failure
    collected: list[Any]


@dataclass(frozen=True)
class JobFailure:
    """A failure of the job, as Flink's exception history keeps it."""

    timestamp_ms: int  # wall clock
    exception: str  # the exception's class, qualified
    message: str
    stacktrace: str

    @staticmethod
    def of(error: BaseException) -> JobFailure:
        kind = type(error)
        return JobFailure(
            int(time.time() * 1000),
            f"{kind.__module__}.{kind.__qualname__}",
            str(error),
            "".join(traceback.format_exception(error)),
        )


# How many failures a job keeps (Flink's web.exception-history-size)
FAILURE_HISTORY = 16


@dataclass
class JobSummary:
    job_id: str
    job_name: str
    epochs: deque[EpochStats]  # the most recent ones
    checkpoints: list[CheckpointStats] = field(default_factory=list)
    restarts: int = 0
    failures: deque[JobFailure] = field(default_factory=lambda: deque(maxlen=FAILURE_HISTORY))
    started: float = field(default_factory=time.monotonic)
    started_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))  # wall clock
    finished: float | None = None

    def execution_result(self) -> JobExecutionResult:
        runtime_ms = int(((self.finished or 0) - self.started) * 1000)
        return JobExecutionResult(
            JobID(self.job_id),
            self.job_name,
            runtime_ms,
            list(self.epochs),
            self.checkpoints,
            self.restarts,
        )
