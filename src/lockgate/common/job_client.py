"""``JobClient``: the handle on a job started with ``execute_async``, with PyFlink's methods.

Unlike PyFlink 2.3, whose savepoint calls fail, ``trigger_savepoint`` and
``stop_with_savepoint`` work: the savepoint is taken at the next epoch boundary.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Protocol

from lockgate.common.completable_future import CompletableFuture
from lockgate.common.job_execution_result import JobExecutionResult
from lockgate.common.job_id import JobID
from lockgate.common.job_status import JobStatus


class RunningJob(Protocol):
    """What runs the job (the runtime's ``JobRunner``)."""

    @property
    def job_id(self) -> str: ...

    @property
    def result(self) -> Future[JobExecutionResult]: ...

    def status(self) -> JobStatus: ...

    def cancel(self) -> Future[None]: ...

    def trigger_savepoint(self, directory: str | None, stop: bool, drain: bool) -> Future[str]: ...


class JobClient:
    def __init__(self, job: RunningJob):
        self._job = job
        self._job_id = JobID(job.job_id)

    def get_job_id(self) -> JobID:
        return self._job_id

    def get_job_status(self) -> CompletableFuture[JobStatus]:
        return CompletableFuture.completed(self._job.status())

    def cancel(self) -> CompletableFuture[None]:
        """Cancels the job; the future completes once it has stopped (after its running
        epoch), and fails if the job ended otherwise."""
        return CompletableFuture.of(self._job.cancel(), lambda _: None)

    def trigger_savepoint(self, savepoint_directory: str | None = None) -> CompletableFuture[str]:
        """A savepoint at the next epoch boundary; the future gives its path."""
        return self._savepoint(savepoint_directory, stop=False, drain=False)

    def stop_with_savepoint(
        self,
        advance_to_end_of_event_time: bool = False,
        savepoint_directory: str | None = None,
        *,
        advance_to_end_of_time: bool | None = None,
    ) -> CompletableFuture[str]:
        """A savepoint at the next epoch boundary, after which the job ends (its sinks commit
        with it). With ``advance_to_end_of_event_time`` (PyFlink's name;
        ``advance_to_end_of_time`` is the same), the watermark goes to the end of time
        first, so every window and timer fires."""
        drain = advance_to_end_of_event_time
        if advance_to_end_of_time is not None:
            drain = advance_to_end_of_time
        return self._savepoint(savepoint_directory, stop=True, drain=drain)

    def get_job_execution_result(self) -> CompletableFuture[JobExecutionResult]:
        """The result once the job ends; a cancelled job's raises ``JobCancellationError``,
        a failed one's the job's error."""
        return CompletableFuture.of(self._job.result, lambda result: result)

    def get_accumulators(self) -> CompletableFuture[dict[str, object]]:
        return CompletableFuture.completed({})  # lockgate has no accumulators

    def _savepoint(self, directory: str | None, stop: bool, drain: bool) -> CompletableFuture[str]:
        return CompletableFuture.of(self._job.trigger_savepoint(directory, stop, drain), str)
