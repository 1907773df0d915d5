"""How a job ends when its driver dies or its program does not go as planned, with real
driver processes running job files that start no Spark: a stop whose savepoint completed
and a cancel end the job as asked, whether its driver died after them or the Dispatcher
was started again; a program that ran several jobs is not restarted; a cancel reaches a
program that runs no job, and the attempt that runs when the cancel comes."""

from __future__ import annotations

import base64
import time

import pytest
from fabricated_jobs import report_of
from fastapi.testclient import TestClient

from lockgate.dispatcher.dispatcher import Dispatcher
from lockgate.dispatcher.home import DispatcherHome
from lockgate.dispatcher.job_store import (
    JobCommand,
    JobFiles,
    JobSubmission,
    TriggerOutcome,
    now_ms,
    write_record,
)
from lockgate.dispatcher.rest.app import create_app

RESTARTS = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "3",
    "restart-strategy.fixed-delay.delay": "0 ms",
}
# What a job file finds of its own attempt (its working directory is the job's program/)
OWN_ATTEMPT = """
import os, signal
from pathlib import Path
attempts = Path.cwd().parent / "attempts"
attempt = attempts / str(max(int(p.name) for p in attempts.iterdir() if p.name.isdigit()))
"""
SLEEP = "import time\nwhile True:\n    time.sleep(1)\n"


class Running:
    def __init__(self, client: TestClient, dispatcher: Dispatcher, token: str):
        self.client = client
        self.dispatcher = dispatcher
        self.headers = {"Authorization": f"Bearer {token}"}

    def submit(self, program: str, configuration: dict[str, str] | None = None) -> JobFiles:
        body = {
            "program-name": "job.py",
            "program": base64.b64encode(program.encode()).decode(),
            "configuration": configuration or {},
        }
        response = self.client.post("/v1/lockgate/jobs", json=body, headers=self.headers)
        assert response.status_code == 202, response.text
        files = self.dispatcher.store.get(response.json()["jobid"])
        assert files is not None
        return files

    def ended(self, files: JobFiles, timeout_s: float = 60.0):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            outcome = files.outcome()
            if outcome is not None:
                return outcome
            time.sleep(0.1)
        logs = [p.read_text()[-2000:] for p in files.directory.glob("attempts/*/driver.log")]
        pytest.fail(f"job {files.job_id} did not end within {timeout_s} s: {logs}")

    def driver_started(self, files: JobFiles, attempt: int = 0) -> None:
        deadline = time.monotonic() + 60
        while not (files.driver_alive() and len(files.attempts()) > attempt):
            assert time.monotonic() < deadline, "the job's driver did not start"
            time.sleep(0.1)


@pytest.fixture
def dispatcher_of(tmp_path):
    """Starts a Dispatcher on a home (again: the same home, as after a kill)."""
    home = DispatcherHome(tmp_path / "home")
    token = home.token()
    clients: list[TestClient] = []

    def start(before_start=None) -> Running:
        made: dict[str, Dispatcher] = {}

        def factory(loop):
            made["d"] = Dispatcher(home.path, 1 << 20, loop)
            if before_start is not None:
                before_start(made["d"])
            return made["d"]

        client = TestClient(create_app(factory, token, True, 1 << 20), base_url="http://[::1]")
        client.__enter__()
        clients.append(client)
        return Running(client, made["d"], token)

    yield start
    for client in clients:
        client.__exit__(None, None, None)


def test_a_driver_killed_after_its_stop_completed_ends_the_job_finished(dispatcher_of):
    running = dispatcher_of()
    files = running.submit(
        OWN_ATTEMPT
        + f"""
from lockgate.dispatcher.job_store import JobCommand, TriggerOutcome, write_record
trigger = "{"a" * 32}"
write_record(attempt / "commands" / f"{{trigger}}.json", JobCommand(trigger, "stop", "/sp", False))
write_record(attempt / "triggers" / f"{{trigger}}.json",
             TriggerOutcome(trigger, "COMPLETED", "file:///sp/savepoint-1", None))
os.kill(os.getpid(), signal.SIGKILL)  # before its job's end is written
""",
        RESTARTS,
    )
    outcome = running.ended(files)
    assert outcome.status == "FINISHED", outcome
    assert "file:///sp/savepoint-1" in outcome.reason
    assert len(files.attempts()) == 1


def test_a_job_file_that_ran_several_jobs_is_not_restarted(dispatcher_of):
    """Its restart would run its first job again from its last job's checkpoint."""
    running = dispatcher_of()
    second_job = report_of("e" * 32).encode()
    files = running.submit(
        OWN_ATTEMPT
        + f"""
(attempt / "report.json").write_bytes({second_job!r})
os.kill(os.getpid(), signal.SIGKILL)
""",
        RESTARTS,
    )
    outcome = running.ended(files)
    assert outcome.status == "FAILED" and "more than one job" in outcome.reason, outcome
    assert len(files.attempts()) == 1


def test_a_cancel_ends_a_program_that_runs_no_job(dispatcher_of):
    running = dispatcher_of()
    files = running.submit(SLEEP)
    running.driver_started(files)
    response = running.client.patch(f"/v1/jobs/{files.job_id}?mode=cancel", headers=running.headers)
    assert response.status_code == 202
    outcome = running.ended(files, 30)
    assert outcome.status == "CANCELED", outcome
    assert running.client.get(f"/v1/jobs/{files.job_id}/status").json() == {"status": "CANCELED"}


def test_a_cancel_that_reached_only_the_watcher_goes_to_the_attempt_running(dispatcher_of):
    """The attempt that cancel() wrote to may have just been replaced by the next one; the
    job's watcher hands the cancel to the attempt it runs."""
    running = dispatcher_of()
    files = running.submit(SLEEP)
    running.driver_started(files)
    event = running.dispatcher._cancel[files.job_id]
    running.dispatcher._loop.call_soon_threadsafe(event.set)
    assert running.ended(files, 30).status == "CANCELED"


@pytest.mark.parametrize("asked", ["cancel", "stop"])
def test_a_dispatcher_started_again_ends_what_was_asked_instead_of_resuming_it(
    dispatcher_of, asked
):
    def killed_dispatchers_job(dispatcher: Dispatcher) -> None:
        submission = JobSubmission("c" * 32, "job.py", [], {}, now_ms())
        files = dispatcher.store.create(submission, SLEEP.encode())
        attempt = files.new_attempt("c" * 32, None)
        trigger = "d" * 32
        attempt.command(JobCommand(trigger, asked, "/sp" if asked == "stop" else None, False))
        if asked == "stop":
            outcome = TriggerOutcome(trigger, "COMPLETED", "file:///sp/savepoint-2", None)
            write_record(attempt.triggers / f"{trigger}.json", outcome)

    running = dispatcher_of(killed_dispatchers_job)
    files = running.dispatcher.store.get("c" * 32)
    assert files is not None
    outcome = running.ended(files, 10)
    assert outcome.status == ("CANCELED" if asked == "cancel" else "FINISHED"), outcome
    assert len(files.attempts()) == 1


DIES = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"


def test_a_driver_that_keeps_dying_fails_the_job_once_its_restarts_are_used(dispatcher_of):
    running = dispatcher_of()
    files = running.submit(DIES, {**RESTARTS, "restart-strategy.fixed-delay.attempts": "2"})
    outcome = running.ended(files)
    assert outcome.status == "FAILED", outcome
    assert "signal 9" in outcome.reason and "no restarts left" in outcome.reason
    assert len(files.attempts()) == 3
    deadline = time.monotonic() + 10
    while files.job_id in running.dispatcher._tasks:  # nothing kept of an ended job
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert files.job_id not in running.dispatcher._cancel


def test_a_cancel_between_attempts_ends_the_job_without_another(dispatcher_of):
    running = dispatcher_of()
    files = running.submit(DIES, {**RESTARTS, "restart-strategy.fixed-delay.delay": "10 min"})
    deadline = time.monotonic() + 60
    status = running.client.get(f"/v1/jobs/{files.job_id}/status").json()["status"]
    while status != "RESTARTING":
        assert time.monotonic() < deadline, status
        time.sleep(0.1)
        status = running.client.get(f"/v1/jobs/{files.job_id}/status").json()["status"]
    response = running.client.patch(f"/v1/jobs/{files.job_id}?mode=cancel", headers=running.headers)
    assert response.status_code == 202
    assert running.ended(files, 10).status == "CANCELED"
    assert len(files.attempts()) == 1
