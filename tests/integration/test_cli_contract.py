"""The lockgate command and Flink 2.3's own CLI against a Dispatcher whose job a stand-in
driver answers (no Spark): what each command sends, prints and exits with."""

from __future__ import annotations

import os
import subprocess

import pytest
from click.testing import CliRunner
from fabricated_jobs import StandInDriver, add_job, served_dispatcher
from test_dispatcher_jobs import flink_home

from lockgate.cli.main import cli
from lockgate.dispatcher.job_store import JobCommand

pytestmark = pytest.mark.integration

RUNNING = "0123456789abcdef0123456789abcdef"
ENDED = "fedcba9876543210fedcba9876543210"


@pytest.fixture
def served(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCKGATE_HOME", str(tmp_path / "home"))
    with served_dispatcher(tmp_path / "home") as served:
        running = add_job(served.dispatcher, RUNNING, "RUNNING", str(tmp_path / "default-sp"))
        add_job(served.dispatcher, ENDED, "FINISHED", None)
        driver = StandInDriver(running)
        yield served, running, tmp_path
        driver.close()


def lockgate(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def commands(files) -> list[JobCommand]:
    attempt = files.latest_attempt()
    return [JobCommand.decode(p.read_bytes(), str(p)) for p in attempt.commands.iterdir()]


def test_lockgate_commands_operate_the_dispatchers_jobs(served):
    served, running, tmp_path = served
    listed = lockgate("list")
    assert listed.exit_code == 0
    assert f" : {RUNNING} : counts (RUNNING)" in listed.output and ENDED not in listed.output
    everything = lockgate("list", "-a")
    assert f" : {ENDED} : counts (FINISHED)" in everything.output
    assert "Terminated Jobs" in everything.output

    taken = lockgate("savepoint", RUNNING)
    assert taken.exit_code == 0, taken.output
    assert f"Savepoint completed. Path: {tmp_path / 'default-sp'}/savepoint-" in taken.output
    elsewhere = lockgate("savepoint", RUNNING, str(tmp_path))
    assert f"Path: {tmp_path}/savepoint-" in elsewhere.output

    history = lockgate("checkpoints", RUNNING)
    assert history.exit_code == 0 and "completed 1, failed 1, restored 0" in history.output
    assert "file:///ck/x/chk-1" in history.output and "timed out" in history.output

    unknown = lockgate("cancel", "0" * 32)
    assert unknown.exit_code == 1 and "no job with id" in unknown.output
    over = lockgate("cancel", ENDED)
    assert over.exit_code == 1 and "is not running: it is FINISHED" in over.output

    stopped = lockgate("stop", "--savepointPath", str(tmp_path), "--drain", RUNNING)
    assert stopped.exit_code == 0, stopped.output
    assert f"Savepoint completed. Path: {tmp_path}/savepoint-" in stopped.output
    stop = [c for c in commands(running) if c.kind == "stop"]
    assert [(c.target_directory, c.drain) for c in stop] == [(str(tmp_path), True)]
    assert lockgate("list").output.strip() == "No running jobs."


def test_lockgate_cancel(served):
    served, running, _ = served
    done = lockgate("cancel", RUNNING)
    assert done.exit_code == 0 and f"Cancelled job {RUNNING}." in done.output
    assert [c.kind for c in commands(running)] == ["cancel"]


def test_an_attached_run_waits_for_the_job_and_exits_with_its_end(served):
    served, _, tmp_path = served
    job = tmp_path / "no_job.py"
    job.write_text("print('nothing to run')\n")
    done = lockgate("run", str(job))
    assert done.exit_code == 1
    assert "Job has been submitted with JobID " in done.output
    assert done.output.strip().endswith("is FAILED.")


def test_flinks_cli_stops_a_job_with_a_savepoint(served):
    """And shows why a savepoint failed, from the cause the Dispatcher serialized for it."""
    served, running, tmp_path = served
    env = {**os.environ, "FLINK_HOME": str(flink_home())}
    env["FLINK_REST_CLIENT_HEADERS"] = f"Authorization:Bearer {served.token}"
    address = served.url.removeprefix("http://")
    failing = tmp_path / "fail-here"
    failing.mkdir()
    failed = subprocess.run(
        [
            str(flink_home() / "bin" / "flink"),
            "savepoint",
            "-m",
            address,
            RUNNING,
            f"file://{failing}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "java.lang.RuntimeException: a failure, as asked" in failed.stderr
    done = subprocess.run(
        [
            str(flink_home() / "bin" / "flink"),
            "stop",
            "-m",
            address,
            "--savepointPath",
            f"file://{tmp_path}",
            RUNNING,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Savepoint completed. Path: file://{tmp_path}/savepoint-" in done.stdout
    assert sorted((c.kind, c.drain) for c in commands(running)) == [
        ("savepoint", False),
        ("stop", False),
    ]
    listed = subprocess.run(
        [str(flink_home() / "bin" / "flink"), "list", "-a", "-m", address],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert listed.returncode == 0, listed.stderr
    assert "No running jobs." in listed.stdout
    assert f": {RUNNING} : counts (FINISHED)" in listed.stdout
