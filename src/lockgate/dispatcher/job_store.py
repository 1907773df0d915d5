"""The Dispatcher's job store: each submitted job and each run of its driver, on disk under
the Dispatcher's home, so that a Dispatcher started again finds the jobs the killed one ran.

```
<home>/jobs/<job id>/submission.json        what was submitted (JobSubmission), written once
<home>/jobs/<job id>/program/<file>.py      the job file, as uploaded
<home>/jobs/<job id>/outcome.json           the job's end, once it is over (JobOutcome)
<home>/jobs/<job id>/attempts/<n>/          the n-th run of its driver:
    attempt.json                            how it was started (DriverAttempt)
    report.json                             the driver's JobReport, rewritten as the job runs
    driver.log                              the driver's stdout, stderr and logging
    commands/<trigger id>.json              savepoint, stop and cancel requests (JobCommand)
    triggers/<trigger id>.json              their outcome (TriggerOutcome)
    outcome.json                            how its program ended, if the driver could say
<home>/jobs/<job id>/driver.lock            held by the job's driver while it lives
```

Every file is written to a temporary name and renamed, and so is a job's or an attempt's
directory once its record is in it, so a reader (or a Dispatcher killed mid-write) sees a
whole record or none. Everything lies under the home, which is private to its user (0700).
Nothing here is ever deleted by lockgate but what a killed Dispatcher left half-made: a
job's files are its history.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from lockgate.common.records import Record
from lockgate.core.fs.private_directory import private_directory
from lockgate.runtime.jobmaster.job_report import JobReport

R = TypeVar("R", bound=Record)
JOB_ID = re.compile(r"[0-9a-f]{32}")
TRIGGER_ID = re.compile(r"[0-9a-f]{32}")
# A job file's name: what its driver runs (a .py file, no path)
PROGRAM_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,120}\.py")


@dataclass(frozen=True)
class JobSubmission(Record, format="lockgate-job-submission", version=1):
    job_id: str
    program: str  # the job file's name under program/
    arguments: list[str]
    configuration: dict[str, str]  # -D, -p, -s, -n as configuration keys
    submitted_ms: int


@dataclass(frozen=True)
class DriverAttempt(Record, format="lockgate-driver-attempt", version=1):
    number: int
    job_id: str  # the lockgate job id of this run: the job's own for the first, then new
    recovery_path: str | None  # the checkpoint or savepoint it resumes from
    started_ms: int


@dataclass(frozen=True)
class JobOutcome(Record, format="lockgate-job-outcome", version=1):
    status: Literal["FINISHED", "CANCELED", "FAILED"]
    ended_ms: int
    reason: str  # why, in a sentence (the failure's message)


@dataclass(frozen=True)
class JobCommand(Record, format="lockgate-job-command", version=1):
    trigger_id: str
    kind: Literal["savepoint", "stop", "cancel"]
    target_directory: str | None  # savepoint and stop
    drain: bool  # stop: advance to the end of event time first


@dataclass(frozen=True)
class TriggerOutcome(Record, format="lockgate-trigger-outcome", version=1):
    trigger_id: str
    status: Literal["COMPLETED", "FAILED"]
    location: str | None
    failure: str | None


def write_record(path: Path, record: Record) -> None:
    write_file(path, record.encode())


def write_file(path: Path, data: bytes) -> None:
    """``data`` at ``path``, whole or not at all, readable by this user only (requests are
    served on several threads: a retried savepoint request writes its command again)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(descriptor)
    os.replace(temporary, path)


def read_record(path: Path, kind: type[R]) -> R | None:
    """The record at ``path``; None when there is none (yet)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return kind.decode(data, str(path))


def now_ms() -> int:
    return int(time.time() * 1000)


class AttemptFiles:
    """The files of one run of a job's driver."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.commands = directory / "commands"
        self.triggers = directory / "triggers"
        self.report_path = directory / "report.json"
        self.log_path = directory / "driver.log"
        self.outcome_path = directory / "outcome.json"

    def create(self, attempt: DriverAttempt) -> None:
        _create_whole(self.directory, lambda made: _make_attempt(made, attempt))

    def attempt(self) -> DriverAttempt:
        path = self.directory / "attempt.json"
        return DriverAttempt.decode(path.read_bytes(), str(path))

    def outcome(self) -> JobOutcome | None:
        """How the program ended, if its driver lived to say so."""
        return read_record(self.outcome_path, JobOutcome)

    def report(self) -> JobReport | None:
        """The driver's latest report (None: it has written none yet)."""
        return read_record(self.report_path, JobReport)

    def command(self, command: JobCommand) -> None:
        write_record(self.commands / f"{command.trigger_id}.json", command)

    def commands_waiting(self, seen: set[str]) -> Iterator[JobCommand]:
        for path in sorted(self.commands.glob("*.json"), key=lambda p: p.stat().st_mtime):
            if path.stem not in seen and TRIGGER_ID.fullmatch(path.stem):
                yield JobCommand.decode(path.read_bytes(), str(path))

    def trigger_outcome(self, trigger_id: str) -> TriggerOutcome | None:
        return read_record(self.triggers / f"{trigger_id}.json", TriggerOutcome)

    def has_command(self, trigger_id: str) -> bool:
        return (self.commands / f"{trigger_id}.json").exists()


class JobFiles:
    """The files of one submitted job."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.job_id = directory.name
        self.program_dir = directory / "program"
        self.outcome_path = directory / "outcome.json"
        self.lock_path = directory / "driver.lock"

    def driver_alive(self) -> bool:
        """Whether a driver of the job holds its lock (the kernel drops it with the process)."""
        try:
            descriptor = os.open(self.lock_path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(descriptor)
        return False

    def hold_lock(self) -> int:
        """Lock the job for the calling driver, for as long as its process lives (waiting while
        an earlier driver of the job still lives)."""
        descriptor = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        return descriptor

    def submission(self) -> JobSubmission:
        path = self.directory / "submission.json"
        return JobSubmission.decode(path.read_bytes(), str(path))

    def program(self) -> Path:
        return self.program_dir / self.submission().program

    def outcome(self) -> JobOutcome | None:
        return read_record(self.outcome_path, JobOutcome)

    def end(self, outcome: JobOutcome) -> None:
        write_record(self.outcome_path, outcome)

    def attempts(self) -> list[AttemptFiles]:
        directory = self.directory / "attempts"
        numbers = sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())
        return [AttemptFiles(directory / str(n)) for n in numbers]

    def latest_attempt(self) -> AttemptFiles | None:
        attempts = self.attempts()
        return attempts[-1] if attempts else None

    def new_attempt(self, job_id: str, recovery_path: str | None) -> AttemptFiles:
        _sweep_unfinished(self.directory / "attempts")
        latest = self.latest_attempt()
        number = latest.attempt().number + 1 if latest is not None else 0
        files = AttemptFiles(self.directory / "attempts" / str(number))
        files.create(DriverAttempt(number, job_id, recovery_path, now_ms()))
        return files


class JobStore:
    def __init__(self, home: Path):
        self.directory = private_directory(home / "jobs", None)
        _sweep_unfinished(self.directory)

    def create(self, submission: JobSubmission, program: bytes) -> JobFiles:
        def make(directory: Path) -> None:
            for sub in ("program", "attempts"):
                (directory / sub).mkdir(mode=0o700)
            write_file(directory / "program" / submission.program, program)
            write_record(directory / "submission.json", submission)

        directory = self.directory / submission.job_id  # a job id is never reused
        _create_whole(directory, make)
        return JobFiles(directory)

    def get(self, job_id: str) -> JobFiles | None:
        if not JOB_ID.fullmatch(job_id):
            return None
        directory = self.directory / job_id
        return JobFiles(directory) if (directory / "submission.json").exists() else None

    def jobs(self) -> list[JobFiles]:
        found = []
        for directory in self.directory.iterdir():
            files = self.get(directory.name)
            if files is not None:
                found.append(files)
        return found


def _make_attempt(directory: Path, attempt: DriverAttempt) -> None:
    for sub in ("commands", "triggers"):
        (directory / sub).mkdir(mode=0o700)
    write_record(directory / "attempt.json", attempt)


_UNFINISHED = ".new"


def _create_whole(directory: Path, make: Callable[[Path], None]) -> None:
    """``directory``, filled by ``make``, whole or not at all: it is made under a hidden
    name and renamed, so a Dispatcher killed halfway leaves no job or attempt without its
    record (``_sweep_unfinished`` removes what it left)."""
    unfinished = directory.with_name(f".{directory.name}{_UNFINISHED}")
    unfinished.mkdir(mode=0o700)
    make(unfinished)
    os.rename(unfinished, directory)


def _sweep_unfinished(directory: Path) -> None:
    for path in directory.glob(f".*{_UNFINISHED}"):
        shutil.rmtree(path)
