"""``JobExecutionResult``: what a job that ended reports, as PyFlink's does, plus lockgate's
figures per epoch and checkpoint."""

from __future__ import annotations

from typing import Any

from lockgate.common.job_id import JobID


class JobExecutionResult:
    def __init__(
        self,
        job_id: JobID,
        job_name: str,
        net_runtime_ms: int,
        epochs: list[Any],  # the runtime's EpochStats, the most recent epochs
        checkpoints: list[Any],  # its CheckpointStats
        restarts: int,
        # (operator uid, subtask) -> metric name -> the runtime's MetricValue, the last reported
        metrics: dict[tuple[str, int], dict[str, Any]],
        operator_names: dict[str, str],  # operator uid -> its name
    ):
        self._job_id = job_id
        self.job_name = job_name
        self._net_runtime_ms = net_runtime_ms
        self.epochs = epochs
        self.checkpoints = checkpoints
        self.restarts = restarts
        self.metrics = metrics
        self.operator_names = operator_names

    def get_job_id(self) -> JobID:
        return self._job_id

    def get_net_runtime(self) -> int:
        """Milliseconds."""
        return self._net_runtime_ms

    def get_accumulator_result(self, accumulator_name: str) -> Any:
        return None  # lockgate has no accumulators

    def get_all_accumulator_results(self) -> dict[str, Any]:
        return {}

    def __str__(self) -> str:
        return (
            f"Program execution finished\nJob with JobID {self._job_id} has finished.\n"
            f"Job Runtime: {self._net_runtime_ms} ms\n"
        )

    def __repr__(self) -> str:
        return (
            f"JobExecutionResult(job_id={self._job_id}, net_runtime={self._net_runtime_ms} ms, "
            f"epochs={len(self.epochs)})"
        )
