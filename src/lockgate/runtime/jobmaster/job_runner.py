"""A job run on a thread of the driver (``execute``, ``execute_async``), or epoch by epoch
in the thread that collects its results (``execute_and_collect``): its status, its result,
and cancellation and savepoints asked for from any thread."""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Generator
from concurrent.futures import Future

from lockgate.common.job_execution_result import JobExecutionResult
from lockgate.common.job_status import JobStatus
from lockgate.runtime.errors import JobCancellationError, JobExecutionError
from lockgate.runtime.jobmaster.job_master import JobMaster
from lockgate.runtime.jobmaster.job_summary import EpochResult, JobFailure

log = logging.getLogger(__name__)

# How long a job that still runs when the interpreter exits gets to stop after its epoch:
# its thread dies with the interpreter, which would leave the epoch's staged files to the
# next run's cleanup.
_EXIT_GRACE_S = 60.0


class JobRunner:
    def __init__(self, master: JobMaster):
        self.master = master
        self.job_id = master.ctx.settings.job_id
        self.result: Future[JobExecutionResult] = Future()
        self._ended: Future[JobStatus] = Future()
        self._lock = threading.Lock()
        self._cancelling = False
        self._started = False
        self._thread = threading.Thread(
            target=self._run, name=f"lockgate-job-{self.job_id}", daemon=True
        )

    def start(self) -> None:
        """Run the job on a thread of its own."""
        self._started = True
        atexit.register(self._stop_at_exit)
        self._thread.start()

    @property
    def on_own_thread(self) -> bool:
        """Whether the job runs by itself (``start``), not as its results are read."""
        return self._thread.ident is not None

    def status(self) -> JobStatus:
        if self._ended.done():
            return self._ended.result()
        with self._lock:
            if self._cancelling:
                return JobStatus.CANCELLING
        if not self._started:
            return JobStatus.CREATED
        return JobStatus.RESTARTING if self.master.failover.restarting else JobStatus.RUNNING

    def cancel(self) -> Future[None]:
        """Stop after the running epoch; the future completes once the job is cancelled,
        and fails if it ended otherwise."""
        with self._lock:
            self._cancelling = not self._ended.done()
        if self._cancelling:
            self.master.cancel()
        cancelled: Future[None] = Future()

        def ended(status: Future[JobStatus]) -> None:
            if status.result() is JobStatus.CANCELED:
                cancelled.set_result(None)
            else:
                cancelled.set_exception(
                    JobExecutionError(
                        f"job {self.job_id} was not cancelled: it is {status.result().name}"
                    )
                )

        self._ended.add_done_callback(ended)
        return cancelled

    def trigger_savepoint(self, directory: str | None, stop: bool, drain: bool) -> Future[str]:
        return self.master.trigger_savepoint(directory, stop, drain)

    def wait(self, timeout_s: float | None = None) -> JobStatus | None:
        """The status the job ended with, once it has (None: still running after
        ``timeout_s``)."""
        try:
            return self._ended.result(timeout_s)
        except TimeoutError:
            return None

    def epochs(self) -> Generator[EpochResult, None, None]:
        """Run the job in the calling thread, an epoch per item; closing it stops the job."""
        self._started = True
        # the status goes first: who sees the result sees the status it ended with
        try:
            yield from self.master.run()
        except GeneratorExit:
            self._ended.set_result(JobStatus.CANCELED)
            self.result.set_exception(JobCancellationError(f"job {self.job_id} was cancelled"))
            raise
        except BaseException as exc:
            self.master.summary.failures.append(JobFailure.of(exc))
            self._ended.set_result(JobStatus.FAILED)
            self.result.set_exception(exc)
            raise
        if self.master.finished:
            self._ended.set_result(JobStatus.FINISHED)
            self.result.set_result(self.master.summary.execution_result())
        else:
            self._ended.set_result(JobStatus.CANCELED)
            self.result.set_exception(JobCancellationError(f"job {self.job_id} was cancelled"))

    def discard(self) -> None:
        """The job will not run: ``epochs`` was closed before its first epoch."""
        if not self._started:
            self._started = True
            self._ended.set_result(JobStatus.CANCELED)
            self.result.set_exception(JobCancellationError(f"job {self.job_id} was cancelled"))

    def _run(self) -> None:
        try:
            for _ in self.epochs():
                pass
        except BaseException:  # in self.result
            pass
        finally:
            atexit.unregister(self._stop_at_exit)

    def _stop_at_exit(self) -> None:
        if self._ended.done():
            return
        log.warning("the interpreter exits while job %s runs: cancelling it", self.job_id)
        self.cancel()
        self._thread.join(_EXIT_GRACE_S)
