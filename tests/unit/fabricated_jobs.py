"""Jobs written into a Dispatcher's job store by a test, without Spark: a report of a job as
a driver would write it, a Dispatcher serving them over HTTP on a thread, and a stand-in
driver that answers savepoint, stop and cancel requests as a real one would."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from lockgate.dispatcher.dispatcher import Dispatcher
from lockgate.dispatcher.home import DispatcherAddress, DispatcherHome
from lockgate.dispatcher.job_store import (
    JobFiles,
    JobOutcome,
    JobSubmission,
    TriggerOutcome,
    now_ms,
    write_record,
)
from lockgate.dispatcher.rest.app import create_app
from lockgate.runtime.jobmaster.job_report import (
    CheckpointCounts,
    CheckpointingReport,
    CheckpointReport,
    EpochReport,
    FailureReport,
    JobReport,
    OperatorReport,
    SubtaskMetrics,
    VertexInput,
    VertexReport,
)
from lockgate.runtime.messages.metric_value import (
    CounterValue,
    DistributionValue,
    GaugeValue,
    MeterValue,
)


def report(job_id: str, status: str, savepoint_dir: str | None = None) -> JobReport:
    configuration = {"restart-strategy.type": "fixed-delay"}
    if savepoint_dir is not None:
        configuration["execution.checkpointing.savepoint-dir"] = savepoint_dir
    return JobReport(
        job_id=job_id,
        job_name="counts",
        status=status,
        start_time_ms=now_ms() - 5000,
        end_time_ms=None,
        written_ms=now_ms(),
        spark_app_id="local-1",
        spark_ui=None,
        vertices=[
            VertexReport(
                0, "a" * 32, "Source: lines", 1, 128, [OperatorReport("lines", "lines")], []
            ),
            VertexReport(
                1,
                "b" * 32,
                "count -> Sink: out",
                2,
                128,
                [OperatorReport("count", "count"), OperatorReport("out", "Sink: out")],
                [VertexInput(0, "HASH")],
            ),
        ],
        epochs=[EpochReport(1, now_ms(), 100, 50.0, 2048, 10, 1)],
        checkpointing=CheckpointingReport(
            500,
            "EXACTLY_ONCE",
            600000,
            0,
            0,
            1,
            "NO_EXTERNALIZED_CHECKPOINTS",
            "file:///ck/x",
            "hashmap",
            False,
        ),
        checkpoint_counts=CheckpointCounts(1, 1, 0),
        checkpoints=[
            CheckpointReport(
                1,
                1,
                "COMPLETED",
                now_ms(),
                40.0,
                2048,
                1024,
                {"count": 2048},
                "file:///ck/x/chk-1",
                None,
            ),
            CheckpointReport(2, 2, "FAILED", now_ms(), 90.0, 0, 0, {}, None, "timed out"),
        ],
        restored_from=None,
        failures=[FailureReport(now_ms(), "builtins.ValueError", "bad", "Traceback ...")],
        restarts=1,
        configuration=configuration,
        watermarks={"count": 1000},
        metrics=[
            SubtaskMetrics("lines", 0, {"numRecordsOut": CounterValue(100)}),
            SubtaskMetrics(
                "count",
                0,
                {
                    "numRecordsIn": CounterValue(60),
                    "numRecordsOut": CounterValue(60),
                    "mine.seen": CounterValue(5),
                    "mine.rate": MeterValue(10, 2.5),
                    "mine.level": GaugeValue(7.0),
                    "mine.sizes": DistributionValue(2, 10.0, 4.0, 6.0, 5.0),
                },
            ),
            SubtaskMetrics("count", 1, {"numRecordsIn": CounterValue(40)}),
            SubtaskMetrics("out", 0, {"numRecordsOut": CounterValue(60)}),
            SubtaskMetrics("out", 1, {"numRecordsOut": CounterValue(40)}),
        ],
    )


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
        metrics=[],
    )


def add_job(
    dispatcher: Dispatcher, job_id: str, status: str, savepoint_dir: str | None
) -> JobFiles:
    submission = JobSubmission(job_id, "job.py", [], {}, now_ms() - 6000)
    files = dispatcher.store.create(submission, b"pass\n")
    attempt = files.new_attempt(job_id, None)
    write_record(attempt.report_path, report(job_id, status, savepoint_dir))
    if status in ("FINISHED", "CANCELED", "FAILED"):
        files.end(JobOutcome(status, now_ms(), "over"))
    return files


@dataclass
class ServedDispatcher:
    dispatcher: Dispatcher
    home: DispatcherHome
    url: str
    token: str


@contextlib.contextmanager
def served_dispatcher(home_path: Path, max_body_bytes: int = 1 << 20) -> Iterator[ServedDispatcher]:
    """A Dispatcher for ``home_path`` answering on 127.0.0.1 (a free port), announced in its
    home as a started one is, so that the CLI finds it."""
    home = DispatcherHome(home_path)
    token = home.token()
    lock = home.lock()
    assert lock is not None
    made: dict[str, Dispatcher] = {}

    def factory(loop: asyncio.AbstractEventLoop) -> Dispatcher:
        made["d"] = Dispatcher(home.path, 1 << 20, loop)
        return made["d"]

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    server = uvicorn.Server(
        uvicorn.Config(create_app(factory, token, True, max_body_bytes), log_config=None)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    home.announce(DispatcherAddress(url, os.getpid(), now_ms()))
    try:
        yield ServedDispatcher(made["d"], home, url, token)
    finally:
        server.should_exit = True
        thread.join(10)
        os.close(lock)
        home.address_path.unlink(missing_ok=True)


class StandInDriver:
    """Holds a job's driver lock and answers its requests: a savepoint completes under its
    target directory (fails when the directory's name has "fail" in it); a stop also ends
    the job FINISHED, a cancel CANCELED."""

    def __init__(self, files: JobFiles):
        self.files = files
        self.lock = files.hold_lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._answer, daemon=True)
        self._thread.start()

    def _answer(self) -> None:
        attempt = self.files.latest_attempt()
        assert attempt is not None
        seen: set[str] = set()
        while not self._stop.wait(0.05):
            for command in attempt.commands_waiting(seen):
                seen.add(command.trigger_id)
                if command.kind == "cancel":
                    self._end("CANCELED")
                    continue
                location = f"{command.target_directory}/savepoint-{command.trigger_id[:6]}"
                failed = "fail" in (command.target_directory or "")
                write_record(
                    attempt.triggers / f"{command.trigger_id}.json",
                    TriggerOutcome(command.trigger_id, "FAILED", None, "a failure, as asked")
                    if failed
                    else TriggerOutcome(command.trigger_id, "COMPLETED", location, None),
                )
                if failed:
                    continue
                if command.kind == "stop":
                    self._end("FINISHED")

    def _end(self, status: str) -> None:
        self.files.end(JobOutcome(status, now_ms(), f"the stand-in driver ended it {status}"))

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        os.close(self.lock)
