"""What a job's driver reports, for the tests of the Dispatcher and the CLI (no Spark)."""

from __future__ import annotations

from lockgate.dispatcher.job_store import now_ms
from lockgate.runtime.jobmaster.job_report import CheckpointCounts, CheckpointingReport, JobReport


def report_of(job_id: str, status: str = "RUNNING") -> JobReport:
    """A driver's report of job ``job_id`` in ``status``, without checkpoints."""
    return JobReport(
        job_id=job_id,
        job_name="reported",
        status=status,
        start_time_ms=now_ms(),
        end_time_ms=None,
        written_ms=now_ms(),
        spark_app_id="local-1",
        spark_ui=None,
        vertices=[],
        epochs=[],
        checkpointing=CheckpointingReport(
            None,
            "EXACTLY_ONCE",
            600000,
            0,
            0,
            1,
            "NO_EXTERNALIZED_CHECKPOINTS",
            None,
            "hashmap",
            False,
        ),
        checkpoint_counts=CheckpointCounts(0, 0, 0),
        checkpoints=[],
        restored_from=None,
        failures=[],
        restarts=0,
        configuration={},
        watermarks={},
    )
