"""What a running job shows the outside: its status, plan, epochs, checkpoints, failures
and configuration, as one record.

The Dispatcher's job driver writes it to the job store after every change, and the REST API,
the Web UI and the CLI read it there; ``lockgate run`` draws its terminal view from it in
process. It is built from the JobRunner while the job's thread runs, so it reads only
copies of what that thread appends to (deques and dicts copied whole, which CPython does
without letting the other thread in).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lockgate.common.job_status import JobStatus
from lockgate.common.records import Record
from lockgate.graph.job_graph import SHIP_STRATEGIES, JobGraph
from lockgate.runtime.messages.metric_value import MetricValue

if TYPE_CHECKING:
    from lockgate.runtime.jobmaster.job_runner import JobRunner

FORMAT = "lockgate-job-report"
VERSION = 1

# Parts of configuration keys whose values are hidden, as Flink hides them
_SENSITIVE = (
    "password",
    "secret",
    "token",
    "apikey",
    "api-key",
    "access.key",
    "access-key",
    "account.key",
    "credential",
    "auth-params",
    "jaas.config",
    "http-headers",
)
HIDDEN = "******"


def masked(configuration: dict[str, str]) -> dict[str, str]:
    return {
        key: HIDDEN if any(part in key.lower() for part in _SENSITIVE) else value
        for key, value in configuration.items()
    }


def vertex_id(head_uid: str) -> str:
    """A task's 32-hex id (Flink's JobVertexID), from its first operator's uid: the same in
    every run of the job."""
    return hashlib.blake2b(head_uid.encode(), digest_size=16).hexdigest()


@dataclass(frozen=True)
class OperatorReport(Record):
    uid: str
    name: str


@dataclass(frozen=True)
class VertexInput(Record):
    vertex: int  # index of the sending vertex
    ship_strategy: str


@dataclass(frozen=True)
class VertexReport(Record):
    index: int
    id: str  # 32 hex digits
    name: str
    parallelism: int
    max_parallelism: int
    operators: list[OperatorReport]
    inputs: list[VertexInput]


@dataclass(frozen=True)
class EpochReport(Record):
    epoch: int
    end_time_ms: int
    records: int  # read by the sources
    duration_ms: float
    state_bytes: int
    state_entries: int
    checkpoint_id: int | None


@dataclass(frozen=True)
class CheckpointReport(Record):
    id: int
    epoch: int
    status: str  # COMPLETED or FAILED
    trigger_time_ms: int
    duration_ms: float
    size_bytes: int
    written_bytes: int
    state_size_per_operator: dict[str, int]
    path: str | None
    failure: str | None


@dataclass(frozen=True)
class CheckpointCounts(Record):
    completed: int
    failed: int
    restored: int


@dataclass(frozen=True)
class CheckpointingReport(Record):
    interval_ms: int | None  # None: checkpointing off
    mode: str  # EXACTLY_ONCE or AT_LEAST_ONCE
    timeout_ms: int
    min_pause_ms: int
    tolerable_failures: int
    num_retained: int
    retention: str
    storage: str | None  # the job's checkpoint directory; None: in driver memory
    state_backend: str
    incremental: bool


@dataclass(frozen=True)
class FailureReport(Record):
    timestamp_ms: int
    exception: str
    message: str
    stacktrace: str


@dataclass(frozen=True)
class SubtaskMetrics(Record):
    """What a subtask's operator reported at the end of its latest accepted epoch: Flink's
    numRecordsIn and numRecordsOut, and the metrics its function registered."""

    uid: str
    subtask: int
    values: dict[str, MetricValue]


@dataclass(frozen=True)
class JobReport(Record, format=FORMAT, version=VERSION):
    job_id: str
    job_name: str
    status: str  # a JobStatus name
    start_time_ms: int
    end_time_ms: int | None
    written_ms: int
    spark_app_id: str
    spark_ui: str | None
    vertices: list[VertexReport]
    epochs: list[EpochReport]  # the most recent
    checkpointing: CheckpointingReport
    checkpoint_counts: CheckpointCounts
    checkpoints: list[CheckpointReport]  # the most recent
    restored_from: str | None  # the checkpoint or savepoint the job resumed from
    failures: list[FailureReport]  # the most recent
    restarts: int
    configuration: dict[str, str]  # sensitive values hidden
    # operator uid -> its event time, the least over its subtasks (absent: none yet)
    watermarks: dict[str, int]
    metrics: list[SubtaskMetrics]

    @property
    def job_status(self) -> JobStatus:
        return JobStatus[self.status]


def vertex_reports(job: JobGraph) -> list[VertexReport]:
    return [
        VertexReport(
            vertex.id,
            vertex_id(vertex.head.uid),
            vertex.name,
            vertex.parallelism,
            vertex.max_parallelism,
            [OperatorReport(node.uid, node.name) for node in vertex.nodes],
            [
                VertexInput(edge.source.id, SHIP_STRATEGIES[edge.partitioning.kind])
                for edge in vertex.inputs
            ],
        )
        for vertex in job.vertices
    ]


def job_report(runner: JobRunner) -> JobReport:
    """The job as it is now (from any thread)."""
    master = runner.master
    ctx = master.ctx
    settings = ctx.settings
    summary = ctx.summary
    coordinator = ctx.coordinator
    status = runner.status()
    checkpoint = settings.checkpoint
    now_ms = int(time.time() * 1000)
    end_ms = None
    if status.is_globally_terminal_state() and summary.finished is not None:
        end_ms = summary.started_at_ms + int((summary.finished - summary.started) * 1000)
    resumed = master.failover.resumed_from
    return JobReport(
        job_id=settings.job_id,
        job_name=settings.job_name,
        status=status.name,
        start_time_ms=summary.started_at_ms,
        end_time_ms=end_ms,
        written_ms=now_ms,
        spark_app_id=str(master.sc.applicationId),
        spark_ui=master.sc.uiWebUrl,
        vertices=vertex_reports(ctx.job),
        epochs=[
            EpochReport(
                e.epoch,
                e.end_time_ms,
                e.records,
                e.duration_ms,
                e.state_bytes,
                e.state_entries,
                e.checkpoint_id,
            )
            for e in list(summary.epochs)
        ],
        checkpointing=CheckpointingReport(
            checkpoint.interval_ms,
            "EXACTLY_ONCE" if checkpoint.exactly_once else "AT_LEAST_ONCE",
            checkpoint.timeout_ms,
            checkpoint.min_pause_ms,
            checkpoint.tolerable_failures,
            checkpoint.num_retained,
            checkpoint.retention,
            settings.checkpoint_dir,
            settings.keyed_state.backend,
            settings.keyed_state.incremental,
        ),
        checkpoint_counts=CheckpointCounts(
            coordinator.completed_count, coordinator.failed_count, int(resumed is not None)
        ),
        checkpoints=[
            CheckpointReport(
                c.id,
                c.epoch,
                c.status,
                int(c.trigger_timestamp * 1000),
                c.duration_ms,
                c.size_bytes,
                c.written_bytes,
                dict(c.state_size_per_operator),
                c.path,
                c.failure,
            )
            for c in list(coordinator.history)
        ],
        restored_from=(resumed.path if resumed is not None else None),
        failures=[
            FailureReport(f.timestamp_ms, f.exception, f.message, f.stacktrace)
            for f in list(summary.failures)
        ],
        restarts=summary.restarts,
        configuration=masked(dict(settings.configuration)),
        watermarks=operator_watermarks(ctx.state.watermarks),
        metrics=[
            SubtaskMetrics(uid, subtask, dict(values))
            for (uid, subtask), values in sorted(summary.metrics.items())
        ],
    )


def operator_watermarks(by_task: dict[int, dict[int, dict[str, int]]]) -> dict[str, int]:
    """Each operator's watermark: the least over its subtasks (copied item by item: the
    job's thread replaces entries as epochs are accepted)."""
    least: dict[str, int] = {}
    for _, subtasks in list(by_task.items()):
        for _, uids in list(subtasks.items()):
            for uid, watermark in list(uids.items()):
                least[uid] = min(watermark, least.get(uid, watermark))
    return least
