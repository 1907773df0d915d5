"""One run of a submitted job's driver: ``python -m lockgate.dispatcher.job_driver <job dir>
<attempt> <dispatcher pid>``, started by the Dispatcher with its output going to the
attempt's ``driver.log``.

It runs the job file as ``__main__`` under a ``ProgramContext`` (the submission's
configuration, the attempt's job id and recovery path), reports each job the program runs
to the job store (``report.json``, when it changed), carries out the savepoint, stop and
cancel requests the Dispatcher leaves in ``commands/``, and before it exits writes how the
program ended (``outcome.json``). A driver that exits without one died (a signal, a lost
machine): the Dispatcher then runs the job again from its latest completed checkpoint. A
job the program leaves running (``execute_async``) is waited for, still reported; a cancel
while no job runs (none started yet, or the program does not return after its job ended)
ends the process.

The driver dies with the Dispatcher (Flink's JobMasters live in the Dispatcher's process),
and holds its attempt's lock while it lives: a Dispatcher started after a crash restarts
only jobs whose driver is gone, so two drivers of a job never run at once.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import logging
import os
import runpy
import signal
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Literal, NoReturn

from lockgate.common import config_options as options
from lockgate.common.job_status import JobStatus
from lockgate.dispatcher.job_store import (
    AttemptFiles,
    JobCommand,
    JobFiles,
    JobOutcome,
    TriggerOutcome,
    now_ms,
    write_record,
)
from lockgate.runtime.jobmaster import program_context
from lockgate.runtime.jobmaster.job_report import JobReport, job_report
from lockgate.runtime.jobmaster.job_runner import JobRunner

log = logging.getLogger(__name__)

REPORT_INTERVAL_S = 0.5
_PR_SET_PDEATHSIG = 1
_OUTCOMES: dict[JobStatus, Literal["FINISHED", "CANCELED", "FAILED"]] = {
    JobStatus.FINISHED: "FINISHED",
    JobStatus.CANCELED: "CANCELED",
    JobStatus.FAILED: "FAILED",
}


class JobReporter:
    """The program's JobListener: writes the running job's report and carries out the
    Dispatcher's requests, on a thread of its own."""

    def __init__(self, files: AttemptFiles):
        self.files = files
        self.runner: JobRunner | None = None
        self._seen: set[str] = set()
        self._waiting: list[JobCommand] = []  # arrived before the program started a job
        self._written: JobReport | None = None  # the last report written, but its time
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="lockgate-job-reporter")

    def start(self) -> None:
        self._thread.start()

    def job_started(self, runner: JobRunner) -> None:
        self.runner = runner

    def close(self) -> None:
        """The program is over: write the last report and fail what is still asked for."""
        self._stop.set()
        self._thread.join()
        self._write_report()
        for command in self._waiting:
            self._outcome(command, None, "the job ended before the request was carried out")

    def _loop(self) -> None:
        while not self._stop.wait(REPORT_INTERVAL_S):
            try:
                self._take_commands()
                self._write_report()
            except Exception:  # a report missed is written again next time
                log.exception("could not report the job to the Dispatcher")

    def _write_report(self) -> None:
        """The job's report, if it changed: a job may sit idle for weeks."""
        if self.runner is None:
            return
        report = job_report(self.runner)
        if dataclasses.replace(report, written_ms=0) != self._written:
            write_record(self.files.report_path, report)
            self._written = dataclasses.replace(report, written_ms=0)

    def _take_commands(self) -> None:
        for command in self.files.commands_waiting(self._seen):
            self._seen.add(command.trigger_id)
            self._waiting.append(command)
        runner = self.runner
        no_job = runner is None or runner.wait(0) is not None
        if no_job and any(command.kind == "cancel" for command in self._waiting):
            self._end_program(runner)
        if runner is None:
            return
        waiting, self._waiting = self._waiting, []
        for command in waiting:
            log.info("carrying out %s request %s", command.kind, command.trigger_id)
            if command.kind == "cancel":
                runner.cancel()
                continue
            future = runner.trigger_savepoint(
                command.target_directory, command.kind == "stop", command.drain
            )
            future.add_done_callback(functools.partial(self._savepoint_done, command))

    def _end_program(self, runner: JobRunner | None) -> NoReturn:
        """A cancel while no job runs: the program has not started one, or has not
        returned after it ended. Nothing of lockgate's runs that a stop would have to wind
        down, so this process ends here, saying how."""
        status = runner.wait(0) if runner is not None else None
        for command in self._waiting:
            if command.kind != "cancel":
                self._outcome(command, None, "the job was cancelled before it ran the request")
        if status is None:
            outcome = JobOutcome("CANCELED", now_ms(), "cancelled before its job file ran a job")
        else:
            self._write_report()
            outcome = JobOutcome(
                _OUTCOMES[status],
                now_ms(),
                f"the job {status.name.lower()}; its job file did not return after it, and was "
                "ended by a cancel",
            )
        write_record(self.files.outcome_path, outcome)
        log.warning("%s", outcome.reason)
        logging.shutdown()
        os._exit(0)

    def _savepoint_done(self, command: JobCommand, future: Future[str]) -> None:
        error = future.exception()
        if error is None:
            self._outcome(command, future.result(), None)
        else:
            self._outcome(command, None, str(error))

    def _outcome(self, command: JobCommand, location: str | None, failure: str | None) -> None:
        outcome = TriggerOutcome(
            command.trigger_id, "COMPLETED" if failure is None else "FAILED", location, failure
        )
        write_record(self.files.triggers / f"{command.trigger_id}.json", outcome)


def run(job: JobFiles, attempt_files: AttemptFiles) -> JobOutcome:
    """Run the job file; how it ended."""
    attempt = attempt_files.attempt()
    submission = job.submission()
    configuration = dict(submission.configuration)
    if attempt.recovery_path is not None:
        configuration[options.STATE_RECOVERY_PATH.key] = attempt.recovery_path
    reporter = JobReporter(attempt_files)
    earlier = tuple(
        a.attempt().job_id for a in job.attempts() if a.attempt().number < attempt.number
    )
    program_context.install(
        program_context.ProgramContext(
            configuration, attempt.job_id, reporter, earlier_runs=earlier
        )
    )
    program = job.program()
    sys.argv = [str(program), *submission.arguments]
    sys.path.insert(0, str(program.parent))
    reporter.start()
    failure: BaseException | None = None
    try:
        runpy.run_path(str(program), run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            failure = exc
    except BaseException as exc:
        failure = exc
        log.error("the job file %s failed", program.name, exc_info=exc)
    runner = reporter.runner
    if runner is not None and failure is None and runner.on_own_thread:
        runner.wait()  # a job the file left running (execute_async) goes on, reported
    reporter.close()
    status = runner.wait(0) if runner is not None else None
    if status is JobStatus.CANCELED:
        return JobOutcome("CANCELED", now_ms(), "the job was cancelled")  # whatever it raised
    if failure is not None:
        reason = f"exit code {failure.code}" if isinstance(failure, SystemExit) else str(failure)
        return JobOutcome("FAILED", now_ms(), reason or type(failure).__name__)
    if runner is None:
        return JobOutcome(
            "FAILED",
            now_ms(),
            f"the job file {program.name} ended without running a job (env.execute())",
        )
    if status is None:  # an execute_and_collect whose results it left unread
        return JobOutcome("CANCELED", now_ms(), f"the job file {program.name} ended before its job")
    if status is JobStatus.FAILED:  # the program caught the job's error
        return JobOutcome("FAILED", now_ms(), "the job failed")
    return JobOutcome("FINISHED", now_ms(), "the job finished")


def _die_with(parent: int) -> None:
    """End this process when ``parent`` (the Dispatcher) dies, as the kernel allows."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the line above
        os._exit(1)


def main(argv: list[str]) -> int:
    job_dir, attempt, parent = argv
    _die_with(int(parent))
    job = JobFiles(Path(job_dir))
    attempt_files = AttemptFiles(job.directory / "attempts" / attempt)
    job.hold_lock()  # released by the kernel when this process ends
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    outcome = run(job, attempt_files)
    write_record(attempt_files.outcome_path, outcome)
    log.info("job %s: %s (%s)", job.job_id, outcome.status, outcome.reason)
    return 0 if outcome.status != "FAILED" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
