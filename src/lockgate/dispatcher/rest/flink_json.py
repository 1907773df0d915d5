"""Jobs in the JSON shapes of Flink 2.3's REST API, field for field, so that Flink's CLI
(whose Jackson classes require every field they declare) and Flink users' scripts read
them unchanged.

lockgate's terms map onto Flink's: a job vertex is a task (a chain of operators), its
subtasks are Spark tasks; an epoch's end is where a checkpoint is taken, so a checkpoint's
duration is its epoch's. What Flink measures and lockgate has no counterpart for (bytes
sent between tasks, back-pressure time, unaligned checkpoint data) is reported as Flink
reports it when unmeasured: 0, with ``*-complete`` false.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from lockgate.common.version import __version__
from lockgate.dispatcher.dispatcher import JobView
from lockgate.runtime.jobmaster.job_report import CheckpointReport, JobReport, VertexReport
from lockgate.runtime.messages.metric_value import CounterValue
from lockgate.runtime.subtaskhost.metrics import NUM_RECORDS_IN, NUM_RECORDS_OUT

# Flink's task states, in the order its REST API lists them
TASK_STATES = (
    "SCHEDULED",
    "DEPLOYING",
    "RUNNING",
    "CREATED",
    "FINISHED",
    "CANCELING",
    "FAILED",
    "RECONCILING",
    "CANCELED",
    "INITIALIZING",
)
JOB_STATES = (
    "RESTARTING",
    "CREATED",
    "CANCELLING",
    "FAILING",
    "SUSPENDED",
    "CANCELED",
    "RECONCILING",
    "RUNNING",
    "FAILED",
    "INITIALIZING",
    "FINISHED",
)
TERMINAL = ("FINISHED", "CANCELED", "FAILED")
FLINK_VERSION = "2.3.0"  # the REST API whose shapes these are
REVISION = f"lockgate {__version__}"


def now_ms() -> int:
    return int(time.time() * 1000)


def task_state(job_status: str) -> str:
    """What each subtask of a job in ``job_status`` is: lockgate runs all of a job's tasks
    or none."""
    return {
        "RUNNING": "RUNNING",
        "FINISHED": "FINISHED",
        "CANCELED": "CANCELED",
        "FAILED": "FAILED",
        "CANCELLING": "CANCELING",
        "RESTARTING": "CANCELED",
    }.get(job_status, "CREATED")


def config() -> dict[str, Any]:
    offset = -time.timezone * 1000 if not time.daylight else -time.altzone * 1000
    return {
        "refresh-interval": 3000,
        "timezone-name": time.tzname[0],
        "timezone-offset": offset,
        "flink-version": FLINK_VERSION,
        "flink-revision": REVISION,
        "features": {
            "web-submit": False,
            "web-cancel": True,
            "web-rescale": False,
            "web-history": False,
        },
    }


def overview(jobs: list[JobView]) -> dict[str, Any]:
    def count(*states: str) -> int:
        return sum(1 for job in jobs if job.status in states)

    slots = sum(
        v.parallelism
        for job in jobs
        if job.status not in TERMINAL and job.report is not None
        for v in job.report.vertices
    )
    return {
        "taskmanagers": 1,
        "slots-total": slots,
        "slots-available": 0,
        "jobs-running": sum(1 for job in jobs if job.status not in TERMINAL),
        "jobs-finished": count("FINISHED"),
        "jobs-cancelled": count("CANCELED"),
        "jobs-failed": count("FAILED"),
        "flink-version": FLINK_VERSION,
        "flink-commit": REVISION,
    }


def jobs_ids(jobs: list[JobView]) -> dict[str, Any]:
    return {"jobs": [{"id": job.job_id, "status": job.status} for job in jobs]}


def _times(job: JobView) -> tuple[int, int, int]:
    """start, end (-1 while running), duration."""
    end = job.end_ms if job.end_ms is not None else -1
    duration = (job.end_ms if job.end_ms is not None else now_ms()) - job.start_ms
    return job.start_ms, end, duration


def _task_counts(job: JobView, keys: tuple[str, ...]) -> dict[str, int]:
    counts = dict.fromkeys(keys, 0)
    state = task_state(job.status)
    total = sum(v.parallelism for v in job.report.vertices) if job.report else 0
    if state.lower() in counts:
        counts[state.lower()] = total
    elif state in counts:
        counts[state] = total
    return counts


def job_details(job: JobView) -> dict[str, Any]:
    """One entry of ``/jobs/overview`` (Flink's JobDetails)."""
    start, end, duration = _times(job)
    tasks = _task_counts(
        job,
        (
            "running",
            "canceling",
            "canceled",
            "total",
            "created",
            "scheduled",
            "deploying",
            "reconciling",
            "finished",
            "initializing",
            "failed",
        ),
    )
    tasks["total"] = sum(v.parallelism for v in job.report.vertices) if job.report else 0
    return {
        "jid": job.job_id,
        "name": job.name,
        "jobType": "STREAMING",
        "schedulerType": "Default",
        "start-time": start,
        "end-time": end,
        "duration": duration,
        "state": job.status,
        "last-modification": _last_modification(job),
        "tasks": tasks,
        "pending-operators": 0,
    }


def jobs_overview(jobs: list[JobView]) -> dict[str, Any]:
    return {"jobs": [job_details(job) for job in jobs]}


def _last_modification(job: JobView) -> int:
    if job.end_ms is not None:
        return job.end_ms
    return job.report.written_ms if job.report is not None else job.start_ms


def _vertex(job: JobView, vertex: VertexReport) -> dict[str, Any]:
    start, end, duration = _times(job)
    state = task_state(job.status)
    tasks = dict.fromkeys(TASK_STATES, 0)
    tasks[state] = vertex.parallelism
    return {
        "id": vertex.id,
        "slotSharingGroupId": vertex.id,
        "name": vertex.name,
        "maxParallelism": vertex.max_parallelism,
        "parallelism": vertex.parallelism,
        "status": state,
        "start-time": start,
        "end-time": end,
        "duration": duration,
        "tasks": tasks,
        "metrics": _vertex_metrics(job.report, vertex) if job.report is not None else {},
    }


def _records(report: JobReport, uid: str, name: str) -> int | None:
    """The sum over an operator's subtasks of its counter ``name`` (None: not reported)."""
    counts = [
        value.count
        for subtask in report.metrics
        if subtask.uid == uid
        for metric, value in subtask.values.items()
        if metric == name and isinstance(value, CounterValue)
    ]
    return sum(counts) if counts else None


def _vertex_metrics(report: JobReport, vertex: VertexReport) -> dict[str, Any]:
    """A task's records in (its first operator's) and out (its last one's)."""
    read = _records(report, vertex.operators[0].uid, NUM_RECORDS_IN)
    written = _records(report, vertex.operators[-1].uid, NUM_RECORDS_OUT)
    return {
        "read-bytes": 0,
        "read-bytes-complete": False,
        "write-bytes": 0,
        "write-bytes-complete": False,
        "read-records": read or 0,
        "read-records-complete": read is not None,
        "write-records": written or 0,
        "write-records-complete": written is not None,
        "accumulated-backpressured-time": 0,
        "accumulated-idle-time": 0,
        "accumulated-busy-time": 0.0,
    }


def plan(job: JobView) -> dict[str, Any]:
    vertices = job.report.vertices if job.report is not None else []
    by_index = {v.index: v for v in vertices}
    nodes = []
    for vertex in vertices:
        node: dict[str, Any] = {
            "id": vertex.id,
            "operator": "",
            "parallelism": vertex.parallelism,
            "operator_strategy": "",
            "description": "<br/>+- ".join(o.name for o in vertex.operators) + "<br/>",
            "optimizer_properties": {},
        }
        if vertex.inputs:
            node["inputs"] = [
                {
                    "id": by_index[i.vertex].id,
                    "num": number,
                    "exchange": "pipelined_bounded",
                    "ship_strategy": i.ship_strategy,
                }
                for number, i in enumerate(vertex.inputs)
            ]
        nodes.append(node)
    return {"jid": job.job_id, "name": job.name, "type": "STREAMING", "nodes": nodes}


def job(job: JobView) -> dict[str, Any]:
    """``/jobs/:jobid`` (Flink's JobDetailsInfo)."""
    start, end, duration = _times(job)
    vertices = job.report.vertices if job.report is not None else []
    counts = dict.fromkeys(TASK_STATES, 0)
    counts[task_state(job.status)] = len(vertices)
    timestamps = dict.fromkeys(JOB_STATES, 0)
    timestamps["INITIALIZING"] = job.start_ms
    if job.report is not None:
        timestamps["CREATED"] = job.report.start_time_ms
        timestamps["RUNNING"] = job.report.start_time_ms
    if job.end_ms is not None:
        timestamps[job.status] = job.end_ms
    return {
        "jid": job.job_id,
        "application-id": job.job_id,
        "name": job.name,
        "isStoppable": False,
        "state": job.status,
        "job-type": "STREAMING",
        "schedulerType": "Default",
        "start-time": start,
        "end-time": end,
        "duration": duration,
        "maxParallelism": -1,
        "now": now_ms(),
        "timestamps": timestamps,
        "vertices": [_vertex(job, v) for v in vertices],
        "status-counts": counts,
        "plan": plan(job),
        "pending-operators": 0,
    }


def _statistics(values: list[int]) -> dict[str, Any]:
    if not values:
        return {"min": 0, "max": 0, "avg": 0, **dict.fromkeys(_QUANTILES, 0.0)}
    ordered = sorted(values)

    def quantile(q: float) -> float:
        return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])

    return {
        "min": ordered[0],
        "max": ordered[-1],
        "avg": int(statistics.fmean(ordered)),
        **{name: quantile(q) for name, q in _QUANTILES.items()},
    }


_QUANTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99, "p999": 0.999}


def _checkpoint(c: CheckpointReport, subtasks: int) -> dict[str, Any]:
    completed = c.status == "COMPLETED"
    entry: dict[str, Any] = {
        "className": "completed" if completed else "failed",
        "id": c.id,
        "status": c.status,
        "is_savepoint": False,
        "savepointFormat": None,
        "trigger_timestamp": c.trigger_time_ms,
        "latest_ack_timestamp": c.trigger_time_ms + int(c.duration_ms) if completed else -1,
        "checkpointed_size": c.written_bytes,
        "state_size": c.size_bytes,
        "end_to_end_duration": int(c.duration_ms),
        "alignment_buffered": 0,
        "processed_data": 0,
        "persisted_data": 0,
        "num_subtasks": subtasks,
        "num_acknowledged_subtasks": subtasks if completed else 0,
        "checkpoint_type": "CHECKPOINT",
        "tasks": {},
    }
    if completed:
        entry["external_path"] = c.path or "<checkpoint stored in driver memory>"
        entry["discarded"] = False
    else:
        entry["failure_timestamp"] = c.trigger_time_ms + int(c.duration_ms)
        entry["failure_message"] = c.failure
    return entry


def checkpoints(job: JobView) -> dict[str, Any]:
    """``/jobs/:jobid/checkpoints`` (Flink's CheckpointingStatistics)."""
    report = job.report
    history = list(reversed(report.checkpoints)) if report is not None else []
    subtasks = sum(v.parallelism for v in report.vertices) if report is not None else 0
    completed = [c for c in history if c.status == "COMPLETED"]
    failed = [c for c in history if c.status == "FAILED"]
    counts = report.checkpoint_counts if report is not None else None
    restored = None
    if report is not None and report.restored_from is not None:
        restored = {
            "id": 0,
            "restore_timestamp": report.start_time_ms,
            "is_savepoint": "/chk-" not in report.restored_from,
            "external_path": report.restored_from,
        }
    return {
        "counts": {
            "restored": counts.restored if counts else 0,
            "total": (counts.completed + counts.failed) if counts else 0,
            "in_progress": 0,
            "completed": counts.completed if counts else 0,
            "failed": counts.failed if counts else 0,
        },
        "summary": {
            "checkpointed_size": _statistics([c.written_bytes for c in completed]),
            "state_size": _statistics([c.size_bytes for c in completed]),
            "end_to_end_duration": _statistics([int(c.duration_ms) for c in completed]),
            "alignment_buffered": _statistics([0 for _ in completed]),
            "processed_data": _statistics([0 for _ in completed]),
            "persisted_data": _statistics([0 for _ in completed]),
        },
        "latest": {
            "completed": _checkpoint(completed[0], subtasks) if completed else None,
            "savepoint": None,
            "failed": _checkpoint(failed[0], subtasks) if failed else None,
            "restored": restored,
        },
        "history": [_checkpoint(c, subtasks) for c in history],
    }


def checkpoint_config(report: JobReport) -> dict[str, Any]:
    c = report.checkpointing
    retained = c.retention != "NO_EXTERNALIZED_CHECKPOINTS"
    return {
        "mode": c.mode.lower(),
        "interval": c.interval_ms if c.interval_ms is not None else 0x7FFFFFFFFFFFFFFF,
        "timeout": c.timeout_ms,
        "min_pause": c.min_pause_ms,
        "max_concurrent": 1,
        "externalization": {
            "enabled": retained,
            "delete_on_cancellation": c.retention != "RETAIN_ON_CANCELLATION",
        },
        "state_backend": (
            "EmbeddedRocksDBStateBackend" if c.state_backend == "rocksdb" else "HashMapStateBackend"
        ),
        "checkpoint_storage": (
            "FileSystemCheckpointStorage"
            if c.storage is not None
            else "JobManagerCheckpointStorage"
        ),
        "unaligned_checkpoints": False,
        "tolerable_failed_checkpoints": c.tolerable_failures,
        "aligned_checkpoint_timeout": 0,
        "checkpoints_after_tasks_finish": True,
        "state_changelog_enabled": False,
        "changelog_periodic_materialization_interval": 600000,
        "changelog_storage": "memory",
    }


def exceptions(job: JobView, max_exceptions: int) -> dict[str, Any]:
    """``/jobs/:jobid/exceptions`` (Flink's JobExceptionsInfoWithHistory)."""
    failures = list(reversed(job.report.failures)) if job.report is not None else []
    entries: list[dict[str, Any]] = [
        {
            "exceptionName": f.exception,
            "stacktrace": f.stacktrace,
            "timestamp": f.timestamp_ms,
            "failureLabels": {},
            "taskName": None,
            "endpoint": None,
            "taskManagerId": None,
            "concurrentExceptions": [],
        }
        for f in failures
    ]
    return {
        "exceptionHistory": {
            "entries": entries[:max_exceptions],
            "truncated": len(entries) > max_exceptions,
        }
    }


def job_config(job: JobView) -> dict[str, Any]:
    configuration = job.report.configuration if job.report is not None else {}
    return {
        "jid": job.job_id,
        "name": job.name,
        "execution-config": {
            "restart-strategy": configuration.get("restart-strategy.type", "default"),
            "job-parallelism": int(configuration.get("parallelism.default", "-1")),
            "object-reuse-mode": False,
            "user-config": dict(configuration),
        },
    }


def job_metrics(job: JobView) -> dict[str, str]:
    """The job-level metrics Flink has and lockgate measures, by name."""
    report = job.report
    values: dict[str, str] = {"uptime": str(_times(job)[2])}
    if report is None:
        return values
    values["numRestarts"] = str(report.restarts + max(job.attempts - 1, 0))
    counts = report.checkpoint_counts
    values["numberOfCompletedCheckpoints"] = str(counts.completed)
    values["numberOfFailedCheckpoints"] = str(counts.failed)
    values["totalNumberOfCheckpoints"] = str(counts.completed + counts.failed)
    values["numberOfInProgressCheckpoints"] = "0"
    completed = [c for c in report.checkpoints if c.status == "COMPLETED"]
    if completed:
        last = completed[-1]
        values["lastCheckpointDuration"] = str(int(last.duration_ms))
        values["lastCheckpointSize"] = str(last.written_bytes)
        values["lastCheckpointFullSize"] = str(last.size_bytes)
        values["lastCheckpointExternalPath"] = last.path or ""
        values["lastCompletedCheckpointId"] = str(last.id)
        values["lastCheckpointCompletedTimestamp"] = str(
            last.trigger_time_ms + int(last.duration_ms)
        )
    return values
