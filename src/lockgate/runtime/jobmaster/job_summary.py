"""What a job reports as it runs: statistics per epoch and checkpoint, restarts, and the
metrics of its operators."""

from __future__ import annotations

import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from lockgate.checkpoint.coordinator import CheckpointStats
from lockgate.common.job_execution_result import JobExecutionResult
from lockgate.common.job_id import JobID
from lockgate.runtime.messages.metric_value import MetricValue


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
    # operator uid -> its name, for every operator of the job
    operator_names: dict[str, str] = field(default_factory=dict)
    checkpoints: list[CheckpointStats] = field(default_factory=list)
    restarts: int = 0
    failures: deque[JobFailure] = field(default_factory=lambda: deque(maxlen=FAILURE_HISTORY))
    started: float = field(default_factory=time.monotonic)
    started_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))  # wall clock
    finished: float | None = None
    # (operator uid, subtask index) -> metric name -> its latest value: what the subtask
    # reported at the end of the last epoch accepted from it. Counts start again from zero
    # when a failover rebuilds the subtask, as in Flink. Replaced as a whole, never changed in
    # place: a reader on another thread takes the dict it finds.
    metrics: dict[tuple[str, int], dict[str, MetricValue]] = field(default_factory=dict)

    def update_metrics(self, reported: dict[tuple[str, int], dict[str, MetricValue]]) -> None:
        """Take the values of an accepted epoch."""
        self.metrics = {**self.metrics, **reported}

    def execution_result(self) -> JobExecutionResult:
        runtime_ms = int(((self.finished or 0) - self.started) * 1000)
        return JobExecutionResult(
            JobID(self.job_id),
            self.job_name,
            runtime_ms,
            list(self.epochs),
            self.checkpoints,
            self.restarts,
            self.metrics,
            self.operator_names,
        )
