"""The Dispatcher: accepts job files, runs each in a driver process of its own, and keeps
each job going through the death of its driver or of the Dispatcher itself.

Every job is watched by one asyncio task on the Dispatcher's event loop (``_supervise``):
it starts a driver attempt and waits for it to exit. A driver that wrote how its program
ended ends the job. One that died without a word (SIGKILL, a crash) is a failure of the
job, which its own restart strategy judges (``restart-strategy.*``, as configured by the
submission or the program): the next attempt resumes from the latest completed
checkpoint, of this attempt or an earlier one, or from where the job started. A Dispatcher
started again (``recover``) resumes every job its job store shows unfinished, as Flink's
Dispatcher recovers its jobs from its HA store: that restart is not the job's failure.

Drivers are started from the event loop's thread, the main one: a driver's
parent-death signal fires when the thread that started it ends.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lockgate.checkpoint.coordinator import checkpoint_number
from lockgate.common import config_options as options
from lockgate.common.records import RecordFormatError
from lockgate.core.fs.storage import Storage, is_writable
from lockgate.dispatcher.job_store import (
    PROGRAM_NAME,
    AttemptFiles,
    JobCommand,
    JobFiles,
    JobOutcome,
    JobStore,
    JobSubmission,
    now_ms,
)
from lockgate.runtime.jobmaster.job_report import JobReport
from lockgate.runtime.jobmaster.restart import RestartStrategy, restart_strategy
from lockgate.runtime.jobmaster.restart import now_ms as restart_clock_ms

log = logging.getLogger(__name__)


class DispatcherError(Exception):
    """A request the Dispatcher refuses; ``status`` is its HTTP status."""

    status = 400


class JobNotFound(DispatcherError):
    status = 404


class TriggerNotFound(DispatcherError):
    status = 404


class JobNotRunning(DispatcherError):
    status = 409


class JobDamaged(DispatcherError):
    status = 500


@dataclass(frozen=True)
class JobView:
    """A job as the REST API shows it."""

    job_id: str
    name: str
    status: str  # Flink's job status names, INITIALIZING until its driver reports
    start_ms: int
    end_ms: int | None
    report: JobReport | None  # the latest attempt's, or the newest any attempt wrote
    attempts: int
    outcome: JobOutcome | None


@dataclass(frozen=True)
class TriggerView:
    status: Literal["IN_PROGRESS", "COMPLETED", "FAILED"]
    location: str | None
    failure: str | None


class Dispatcher:
    def __init__(self, home: Path, max_program_bytes: int, loop: asyncio.AbstractEventLoop):
        self.store = JobStore(home)
        self.max_program_bytes = max_program_bytes
        # Requests are served on worker threads; jobs are watched on the loop
        self._loop = loop
        self._tasks: dict[str, concurrent.futures.Future[None]] = {}
        self._cancel: dict[str, asyncio.Event] = {}
        self._restarting: set[str] = set()  # between a driver's death and its next attempt
        self._warned: set[str] = set()

    # Jobs ------------------------------------------------------------------------------

    def submit(
        self, program_name: str, program: bytes, arguments: list[str], configuration: dict[str, str]
    ) -> str:
        if not PROGRAM_NAME.fullmatch(program_name):
            raise DispatcherError(
                f"job file name {program_name!r} is not a Python file name (letters, digits, "
                "'_', '.', '-', ending in .py, no directories)"
            )
        if len(program) > self.max_program_bytes:
            raise DispatcherError(
                f"job file {program_name} has {len(program)} bytes, more than the "
                f"{self.max_program_bytes} this Dispatcher accepts"
            )
        try:
            compile(program, program_name, "exec")
        except (SyntaxError, ValueError) as exc:
            raise DispatcherError(f"job file {program_name} is not valid Python: {exc}") from None
        except (RecursionError, MemoryError):  # the parser's and compiler's limits
            raise DispatcherError(
                f"job file {program_name} is nested too deeply for Python to compile"
            ) from None
        try:
            options.validate(configuration)
        except options.ConfigurationError as exc:
            raise DispatcherError(str(exc)) from None
        job_id = uuid.uuid4().hex
        submission = JobSubmission(job_id, program_name, arguments, configuration, now_ms())
        files = self.store.create(submission, program)
        log.info("job %s submitted: %s %s", job_id, program_name, " ".join(arguments))
        self._watch(files, resume=False)
        return job_id

    def recover(self) -> None:
        """Resume every job the store shows unfinished (after the Dispatcher was killed)."""
        for files in self.store.jobs():
            try:
                if files.outcome() is not None:
                    continue
                latest = files.latest_attempt()
                stopped = "the Dispatcher stopped"
                ended = _ended_without_restart(latest, stopped) if latest else None
            except RecordFormatError as exc:  # without its records, a resume could start over
                files.end(JobOutcome("FAILED", now_ms(), f"the job cannot be resumed: {exc}"))
                log.error("job %s cannot be resumed: %s", files.job_id, exc)
                continue
            if ended is not None:  # its driver ended it, or was to, as the last Dispatcher died
                files.end(ended)
                continue
            log.warning("job %s was running when the Dispatcher stopped: resuming it", files.job_id)
            self._watch(files, resume=True)

    def jobs(self) -> list[JobView]:
        views = []
        for files in self.store.jobs():
            try:
                views.append(self._view(files))
            except RecordFormatError as exc:  # one job's damaged files hide only that job
                self._warn_once(str(exc), "job %s is left out: %s", files.job_id, exc)
        return sorted(views, key=lambda view: view.start_ms, reverse=True)

    def job(self, job_id: str) -> JobView:
        try:
            return self._view(self._files(job_id))
        except RecordFormatError as exc:
            raise JobDamaged(f"job {job_id} cannot be shown: {exc}") from None

    def cancel(self, job_id: str) -> None:
        """Cancel the job after its running epoch; cancelling a cancelled job again is no
        error (as in Flink), one that ended otherwise is."""
        files = self._files(job_id)
        outcome = files.outcome()
        if outcome is not None and outcome.status == "CANCELED":
            return
        if outcome is not None:
            raise JobNotRunning(f"job {job_id} is not running: it is {outcome.status}")
        attempt = files.latest_attempt()
        if attempt is not None:  # kept, so that a Dispatcher started again does not resume it
            _ask_cancel(attempt)
        cancelled = self._cancel.get(job_id)
        if cancelled is not None:  # its watcher: between attempts, or to the attempt starting
            self._loop.call_soon_threadsafe(cancelled.set)

    def trigger(
        self,
        job_id: str,
        kind: Literal["savepoint", "stop"],
        target: str | None,
        drain: bool,
        trigger_id: str | None = None,
    ) -> str:
        """Ask the job's driver for a savepoint (``stop``: and to end the job with it);
        the trigger id to ask about it with. A ``trigger_id`` the job knows already is
        answered with itself and triggers nothing (a client's retry, as in Flink)."""
        files = self._files(job_id)
        if trigger_id is not None and any(a.has_command(trigger_id) for a in files.attempts()):
            return trigger_id
        view = self._view(files)
        attempt = files.latest_attempt()
        if view.status != "RUNNING" or attempt is None or not files.driver_alive():
            raise JobNotRunning(f"job {job_id} is not running: it is {view.status}")
        configured = view.report.configuration if view.report is not None else {}
        target = target or configured.get(options.SAVEPOINT_DIR.key)
        if not target:
            raise DispatcherError(
                f"no savepoint directory: give one, or configure '{options.SAVEPOINT_DIR.key}'"
            )
        scheme, url, path = target.partition("://")
        local = not url or scheme == "file"  # relative to what? the driver's cwd is not ours
        if (local and not os.path.isabs(path if url else target)) or (url and not scheme):
            raise DispatcherError(f"savepoint directory {target!r} is not an absolute path or URL")
        try:
            writable = is_writable(target)
        except (ValueError, ImportError) as exc:  # fsspec's: an unknown scheme, a missing library
            raise DispatcherError(f"savepoint directory {target!r}: {exc}") from None
        if not writable:
            raise DispatcherError(f"savepoint directory {target} is not writable")
        trigger_id = trigger_id or uuid.uuid4().hex
        attempt.command(JobCommand(trigger_id, kind, target, drain))
        return trigger_id

    def trigger_status(self, job_id: str, trigger_id: str) -> TriggerView:
        files = self._files(job_id)
        attempts = files.attempts()
        for attempt in attempts:
            if not attempt.has_command(trigger_id):
                continue
            outcome = attempt.trigger_outcome(trigger_id)
            if outcome is not None:
                return TriggerView(outcome.status, outcome.location, outcome.failure)
            if attempt is attempts[-1] and files.driver_alive():
                return TriggerView("IN_PROGRESS", None, None)
            return TriggerView("FAILED", None, "the job's driver ended before the savepoint")
        raise TriggerNotFound(f"job {job_id} has no savepoint or stop request {trigger_id}")

    def close(self) -> None:
        """Stop watching (the drivers die with this process)."""
        for task in list(self._tasks.values()):
            task.cancel()

    # Inside ----------------------------------------------------------------------------

    def _files(self, job_id: str) -> JobFiles:
        files = self.store.get(job_id)
        if files is None:
            raise JobNotFound(f"no job with id {job_id}")
        return files

    def _view(self, files: JobFiles) -> JobView:
        submission = files.submission()
        outcome = files.outcome()
        attempts = files.attempts()
        latest = self._report(attempts[-1]) if attempts else None
        report = latest
        for attempt in reversed(attempts[:-1]):
            if report is not None:
                break
            report = self._report(attempt)
        status: str
        if outcome is not None:
            status = outcome.status
        elif files.job_id in self._restarting or (len(attempts) > 1 and latest is None):
            status = "RESTARTING"
        elif latest is None:
            status = "INITIALIZING"
        else:
            status = latest.status
        return JobView(
            files.job_id,
            report.job_name if report is not None else submission.program,
            status,
            submission.submitted_ms,
            outcome.ended_ms if outcome is not None else None,
            report,
            len(attempts),
            outcome,
        )

    def _report(self, attempt: AttemptFiles) -> JobReport | None:
        """The attempt's report, None if it cannot be read (a lockgate of another version
        wrote it): shown without one rather than not at all."""
        try:
            return attempt.report()
        except RecordFormatError as exc:
            self._warn_once(str(attempt.report_path), "shown without its report: %s", exc)
            return None

    def _warn_once(self, key: str, message: str, *args: object) -> None:
        if key not in self._warned:  # views are asked for every few seconds
            self._warned.add(key)
            log.warning(message, *args)

    def _watch(self, files: JobFiles, resume: bool) -> None:
        job_id = files.job_id
        self._cancel[job_id] = asyncio.Event()
        watching = self._supervise(files, resume)
        task = self._tasks[job_id] = asyncio.run_coroutine_threadsafe(watching, self._loop)

        def forget(_: concurrent.futures.Future[None]) -> None:  # a Dispatcher runs for months
            self._tasks.pop(job_id, None)
            self._cancel.pop(job_id, None)

        task.add_done_callback(forget)

    async def _supervise(self, files: JobFiles, resume: bool) -> None:
        try:
            await self._run_attempts(files, resume)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug of the Dispatcher's must not leave the job in limbo
            log.exception("job %s: the Dispatcher failed watching it", files.job_id)
            files.end(JobOutcome("FAILED", now_ms(), f"the Dispatcher failed: {exc}"))

    async def _run_attempts(self, files: JobFiles, resume: bool) -> None:
        job_id = files.job_id
        cancel = self._cancel[job_id]
        submission = files.submission()
        recovery = submission.configuration.get(options.STATE_RECOVERY_PATH.key)
        previous = files.latest_attempt()
        if resume and previous is not None:
            recovery = _latest_checkpoint(previous) or previous.attempt().recovery_path
        strategy: RestartStrategy | None = None
        while True:
            if cancel.is_set():
                files.end(JobOutcome("CANCELED", now_ms(), "cancelled while no driver ran"))
                return
            run_id = job_id if files.latest_attempt() is None else uuid.uuid4().hex
            attempt = files.new_attempt(run_id, recovery)
            self._restarting.discard(job_id)
            code = await self._run_driver(files, attempt, cancel)
            died = f"the job's driver died ({_exit_description(code)})"
            outcome = _ended_without_restart(attempt, died)
            if outcome is not None:
                files.end(outcome)
                log.info("job %s: %s", job_id, outcome.status)
                return
            self._restarting.add(job_id)
            report = attempt.report()
            configuration = report.configuration if report is not None else submission.configuration
            if strategy is None:
                checkpointing = (
                    report.checkpointing.interval_ms is not None
                    if report is not None
                    else options.CHECKPOINT_INTERVAL.read(configuration) is not None
                )
                strategy = restart_strategy(configuration, checkpointing)
            delay = strategy.next_delay_ms(restart_clock_ms())
            if delay is None:
                self._restarting.discard(job_id)
                files.end(
                    JobOutcome(
                        "FAILED",
                        now_ms(),
                        f"{died}; restart strategy {strategy.name}: no restarts left",
                    )
                )
                log.warning("job %s: %s, not restarted", job_id, died)
                return
            recovery = _latest_checkpoint(attempt) or recovery
            log.warning(
                "job %s: %s; restarting in %.0f ms from %s",
                job_id,
                died,
                delay,
                recovery or "its start",
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(cancel.wait(), delay / 1000)

    async def _run_driver(
        self, files: JobFiles, attempt: AttemptFiles, cancel: asyncio.Event
    ) -> int:
        number = attempt.attempt().number
        with open(attempt.log_path, "ab", buffering=0) as log_file:
            os.chmod(attempt.log_path, 0o600)
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "lockgate.dispatcher.job_driver",
                str(files.directory),
                str(number),
                str(os.getpid()),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                cwd=files.program_dir,
            )
        log.info("job %s: driver attempt %d started (pid %d)", files.job_id, number, process.pid)
        exited = asyncio.ensure_future(process.wait())
        cancelled = asyncio.ensure_future(cancel.wait())
        await asyncio.wait((exited, cancelled), return_when=asyncio.FIRST_COMPLETED)
        if not exited.done():  # a cancel may have gone to the attempt before this one
            _ask_cancel(attempt)
        cancelled.cancel()
        return await exited


def _ask_cancel(attempt: AttemptFiles) -> None:
    if not any(command.kind == "cancel" for command in attempt.commands_waiting(set())):
        attempt.command(JobCommand(uuid.uuid4().hex, "cancel", None, False))


def _ended_without_restart(attempt: AttemptFiles, died: str) -> JobOutcome | None:
    """How the job ends with this attempt, though its driver may have died before saying
    so: as it said; cancelled or stopped if that was asked of it (a stop once its savepoint
    completed, the job's end as in Flink); failed if its program ran several jobs, which a
    restart, running the program again, would resume from the last one's checkpoint. None:
    the job is restarted."""
    outcome = attempt.outcome()
    if outcome is not None:
        return outcome
    for command in attempt.commands_waiting(set()):
        if command.kind == "cancel":
            return JobOutcome("CANCELED", now_ms(), f"cancelled; {died} before it had ended")
        done = attempt.trigger_outcome(command.trigger_id)
        if command.kind == "stop" and done is not None and done.status == "COMPLETED":
            return JobOutcome(
                "FINISHED", now_ms(), f"stopped with savepoint {done.location}; {died}"
            )
    report = attempt.report()
    if report is not None and report.job_id != attempt.attempt().job_id:
        return JobOutcome(
            "FAILED",
            now_ms(),
            f"{died} after its job file had started more than one job: such a file is not "
            "restarted (it would run its first job again from the last one's checkpoint)",
        )
    return None


def _latest_checkpoint(attempt: AttemptFiles) -> str | None:
    """The newest ``chk-<n>`` with a ``_metadata`` that the attempt's job wrote (a damaged
    one makes the restore fall back to the one before it)."""
    report = attempt.report()
    if report is None or report.checkpointing.storage is None:
        return None
    root = Storage(report.checkpointing.storage)
    try:
        names = root.list("")
    except OSError:
        return None
    numbers = sorted((n for n in map(checkpoint_number, names) if n is not None), reverse=True)
    for number in numbers:
        if root.exists(f"chk-{number}/_metadata"):
            return root.url_of(f"chk-{number}")
    return None


def _exit_description(code: int) -> str:
    return f"signal {-code}" if code < 0 else f"exit code {code}"
