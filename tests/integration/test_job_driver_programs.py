"""The Dispatcher's job driver running job files that do more than ``env.execute()``, in
this process on the tests' Spark session: a job run by ``execute_and_collect`` is reported
and ends the job as it ended; a job the file leaves running (``execute_async``) goes on,
reported and operable, after the file returned."""

from __future__ import annotations

import sys
import textwrap
import threading
import time

import pytest

from lockgate.dispatcher import job_driver
from lockgate.dispatcher.job_store import JobCommand, JobOutcome, JobStore, JobSubmission, now_ms
from lockgate.runtime.jobmaster import program_context

pytestmark = pytest.mark.integration

JOB_ID = "5" * 32


@pytest.fixture
def drive(spark, tmp_path, monkeypatch):
    """Runs a job file as the driver's first attempt would: its outcome, and its attempt."""
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))

    def start(program: str):
        store = JobStore(tmp_path / "home")
        configuration = {
            "lockgate.work-dir": str(tmp_path / "work"),
            "parallelism.default": "1",
            "lockgate.epoch.max-records-per-split": "10",
        }
        submission = JobSubmission(JOB_ID, "job.py", [], configuration, now_ms())
        files = store.create(submission, textwrap.dedent(program).encode())
        attempt = files.new_attempt(JOB_ID, None)
        ended: list[JobOutcome] = []
        thread = threading.Thread(target=lambda: ended.append(job_driver.run(files, attempt)))
        thread.start()
        return thread, ended, attempt

    yield start
    program_context.install(None)


def test_a_job_run_by_execute_and_collect_is_reported_and_ends_the_job(drive):
    thread, ended, attempt = drive(
        """
        from lockgate.common import Types
        from lockgate.datastream import StreamExecutionEnvironment

        env = StreamExecutionEnvironment.get_execution_environment()
        numbers = env.from_collection(list(range(10)), type_info=Types.INT())
        with numbers.map(lambda x: x + 1).execute_and_collect("collected") as results:
            print(sorted(results))
        """
    )
    thread.join(120)
    assert ended and ended[0].status == "FINISHED", ended
    report = attempt.report()
    assert report is not None
    assert (report.job_id, report.job_name, report.status) == (JOB_ID, "collected", "FINISHED")


def test_a_job_left_running_by_its_file_is_reported_and_can_be_cancelled(drive):
    thread, ended, attempt = drive(
        """
        import time
        from lockgate.common import Types
        from lockgate.datastream import StreamExecutionEnvironment

        env = StreamExecutionEnvironment.get_execution_environment()
        (  # slow: 400 records, 50 ms each, in epochs of 10
            env.from_collection(list(range(400)), type_info=Types.INT())
            .map(lambda x: time.sleep(0.05) or x)
            .print()
        )
        env.execute_async("left running")
        """
    )
    deadline = time.monotonic() + 120
    while (report := attempt.report()) is None or report.status != "RUNNING":
        assert time.monotonic() < deadline and thread.is_alive(), "no report of a running job"
        time.sleep(0.2)
    attempt.command(JobCommand("6" * 32, "cancel", None, False))
    thread.join(120)
    assert ended and ended[0].status == "CANCELED", ended
