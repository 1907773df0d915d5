"""The lockgate command's usage and its errors, without a Dispatcher or Spark: exit codes 0
(done), 1 (failed, saying why) and 2 (wrong usage), as such tools have them."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from lockgate.cli.main import cli


@pytest.fixture
def lockgate(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCKGATE_HOME", str(tmp_path / "home"))
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(cli, list(args), catch_exceptions=False)

    return invoke


@pytest.fixture
def job(tmp_path) -> Path:
    path = tmp_path / "job.py"
    path.write_text("print('never run')\n")
    return path


def test_help_lists_every_command(lockgate):
    done = lockgate("--help")
    assert done.exit_code == 0
    for command in (
        "run",
        "list",
        "info",
        "savepoint",
        "stop",
        "cancel",
        "checkpoints",
        "state",
        "dispatcher",
    ):
        assert f"  {command}" in done.output
    assert lockgate("dispatcher", "--help").exit_code == 0
    assert "-s, --fromSavepoint PATH" in lockgate("run", "--help").output


def test_wrong_usage_exits_2_naming_the_problem(lockgate, job):
    missing = lockgate("run", "no-such-job.py")
    assert missing.exit_code == 2 and "no-such-job.py" in missing.output
    bad = lockgate("run", "-D", "parallelism.default", str(job))
    assert bad.exit_code == 2 and "is not KEY=VALUE" in bad.output
    assert lockgate("run", "-p", "0", str(job)).exit_code == 2
    assert lockgate("savepoint").exit_code == 2
    assert lockgate("frobnicate").exit_code == 2


def test_bad_configuration_fails_before_anything_runs(lockgate, job):
    done = lockgate("run", "-D", "execution.checkpointing.interval=soon", str(job))
    assert done.exit_code == 1
    assert "execution.checkpointing.interval" in done.output
    assert "never run" not in done.output


def test_without_a_dispatcher_the_commands_that_need_one_say_so(lockgate, job, tmp_path):
    for args in (
        ("list",),
        ("cancel", "0" * 32),
        ("savepoint", "0" * 32),
        ("checkpoints", "0" * 32),
    ):
        done = lockgate(*args)
        assert done.exit_code == 1, args
        assert (
            "no Dispatcher runs for" in done.output and "lockgate dispatcher start" in done.output
        )
    detached = lockgate("run", "-d", str(job))
    assert detached.exit_code == 1 and "-d needs a Dispatcher" in detached.output
    status = lockgate("dispatcher", "status")
    assert status.exit_code == 1 and "No Dispatcher runs for" in status.output
    assert lockgate("dispatcher", "stop").exit_code == 1
    unreachable = lockgate("list", "-m", "127.0.0.1:9")
    assert unreachable.exit_code == 1 and "cannot reach the Dispatcher" in unreachable.output


def test_the_dispatcher_refuses_another_address_without_tls(lockgate):
    done = lockgate("dispatcher", "start", "--host", "0.0.0.0", "--port", "0")
    assert done.exit_code == 1
    assert "refusing to listen on 0.0.0.0 without TLS" in done.output
