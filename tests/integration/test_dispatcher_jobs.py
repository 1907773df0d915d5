"""A Dispatcher the test starts, with a job submitted through the lockgate CLI, operated by
the lockgate CLI and by Flink 2.3's own CLI, through the death of its driver and of the
Dispatcher itself, with every input line in the committed output exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from pyflink_examples_support import REPO

pytestmark = pytest.mark.integration

JOB = Path(__file__).with_name("dispatcher_job.py")
LINES_PER_FILE = 2000
KEYS = 40


def flink_home() -> Path:
    found = sorted((REPO / ".venv" / "pyflink").glob("lib/python3*/site-packages/pyflink"))
    if not found or not (found[0] / "bin" / "flink").exists():
        pytest.fail("PyFlink 2.3 with its jars is not installed in .venv/pyflink (make test does)")
    return found[0]


class Lockgate:
    """The lockgate command, for one Dispatcher home."""

    def __init__(self, home: Path):
        self.env = {**os.environ, "LOCKGATE_HOME": str(home)}
        self.home = home

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "lockgate.cli.main", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if check and done.returncode != 0:
            pytest.fail(f"lockgate {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
        return done

    @property
    def url(self) -> str:
        return str(json.loads((self.home / "dispatcher.json").read_text())["url"])

    @property
    def token(self) -> str:
        return (self.home / "token").read_text().strip()

    def job(self, job_id: str) -> dict:
        return httpx.get(f"{self.url}/v1/jobs/{job_id}", timeout=10).json()

    def wait_for(self, job_id: str, what: str, predicate, timeout_s: float = 240.0) -> dict:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            details = self.job(job_id)
            if predicate(details):
                return details
            time.sleep(0.5)
        log = sorted((self.home / "jobs" / job_id / "attempts").glob("*/driver.log"))
        tail = log[-1].read_text()[-3000:] if log else "(no driver log)"
        pytest.fail(f"job {job_id}: {what} not seen within {timeout_s} s:\n{tail}")


def flink(home: Path, *args: str, token: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLINK_HOME": str(home)}
    env.pop("FLINK_REST_CLIENT_HEADERS", None)
    if token is not None:
        env["FLINK_REST_CLIENT_HEADERS"] = f"Authorization:Bearer {token}"
    return subprocess.run(
        [str(home / "bin" / "flink"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def checkpoints_of(lockgate: Lockgate, job_id: str) -> int:
    stats = httpx.get(f"{lockgate.url}/v1/jobs/{job_id}/checkpoints", timeout=10).json()
    return int(stats["counts"]["completed"])


def committed_lines(out: Path) -> Counter[str]:
    found: Counter[str] = Counter()
    for part in out.rglob("*"):
        if part.is_file() and not part.name.startswith("."):
            found.update(line.rsplit(" ", 1)[0] for line in part.read_text().splitlines())
    return found


def test_a_job_operated_by_both_clis_survives_its_driver_and_dispatcher_dying(tmp_path):
    flink_dir = flink_home()
    inputs, out, ck, sp = (tmp_path / n for n in ("in", "out", "ck", "sp"))
    inputs.mkdir()
    expected: Counter[str] = Counter()
    for f in range(3):
        lines = [f"k{i % KEYS} line-{f}-{i}" for i in range(LINES_PER_FILE)]
        (inputs / f"part-{f}.txt").write_text("".join(f"{line}\n" for line in lines))
        expected.update(lines)
    lockgate = Lockgate(tmp_path / "home")
    started = lockgate("dispatcher", "start", "--port", "0")
    assert "Dispatcher started at http://127.0.0.1:" in started.stdout
    assert (lockgate.home / "token").stat().st_mode & 0o777 == 0o600
    try:
        submitted = lockgate(
            "run",
            "-d",
            "-D",
            "lockgate.epoch.max-records-per-split=150",
            "-D",
            f"execution.checkpointing.savepoint-dir=file://{sp}",
            "-D",
            "restart-strategy.type=fixed-delay",
            "-D",
            "restart-strategy.fixed-delay.attempts=3",
            str(JOB),
            str(inputs),
            str(out),
            str(ck),
        )
        job_id = submitted.stdout.split("JobID ")[1].split()[0]
        lockgate.wait_for(
            job_id, "a completed checkpoint", lambda _: checkpoints_of(lockgate, job_id) >= 2
        )

        # Flink's CLI, unchanged, against the Dispatcher
        port = lockgate.url.rsplit(":", 1)[1]
        listed = flink(flink_dir, "list", "-m", f"127.0.0.1:{port}", token=None)
        assert listed.returncode == 0, listed.stderr
        assert f": {job_id} : dispatcher test job (RUNNING)" in listed.stdout
        savepoint = flink(
            flink_dir,
            "savepoint",
            "-m",
            f"127.0.0.1:{port}",
            job_id,
            f"file://{sp}",
            token=lockgate.token,
        )
        assert savepoint.returncode == 0, savepoint.stdout + savepoint.stderr
        location = savepoint.stdout.split("Savepoint completed. Path: ")[1].split()[0]
        assert (Path(location.removeprefix("file://")) / "_metadata").is_file()
        # without the token nothing changes
        refused = httpx.patch(f"{lockgate.url}/v1/jobs/{job_id}?mode=cancel", timeout=10)
        assert refused.status_code == 401, refused.text
        assert lockgate.job(job_id)["state"] == "RUNNING"

        # The driver dies: the Dispatcher restarts it from the latest checkpoint
        attempt0 = lockgate.home / "jobs" / job_id / "attempts" / "0"
        driver = subprocess.run(
            ["pgrep", "-f", f"lockgate.dispatcher.job_driver {lockgate.home / 'jobs' / job_id}"],
            capture_output=True,
            text=True,
        ).stdout.split()
        assert len(driver) == 1, driver
        os.kill(int(driver[0]), signal.SIGKILL)
        lockgate.wait_for(
            job_id,
            "a second attempt running",
            lambda d: (
                d["state"] == "RUNNING"
                and (lockgate.home / "jobs" / job_id / "attempts" / "1" / "report.json").exists()
            ),
        )
        attempt1 = json.loads((attempt0.parent / "1" / "attempt.json").read_text())
        assert "/chk-" in attempt1["recovery_path"], attempt1

        # The Dispatcher dies (SIGKILL): its drivers die with it; started again, it resumes
        dispatcher_pid = json.loads((lockgate.home / "dispatcher.json").read_text())["pid"]
        os.kill(dispatcher_pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while subprocess.run(["pgrep", "-f", str(lockgate.home)], capture_output=True).stdout:
            assert time.monotonic() < deadline, "a driver outlived its Dispatcher"
            time.sleep(0.2)
        lockgate("dispatcher", "start", "--port", "0")
        lockgate.wait_for(
            job_id,
            "a third attempt running",
            lambda d: (
                d["state"] == "RUNNING"
                and (lockgate.home / "jobs" / job_id / "attempts" / "2" / "report.json").exists()
            ),
        )
        lockgate.wait_for(
            job_id,
            "every input line in the output",
            lambda _: sum(committed_lines(out).values()) >= sum(expected.values()),
        )

        # Flink's CLI cancels it
        port = lockgate.url.rsplit(":", 1)[1]
        cancelled = flink(
            flink_dir, "cancel", "-m", f"127.0.0.1:{port}", job_id, token=lockgate.token
        )
        assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
        assert f"Cancelled job {job_id}." in cancelled.stdout
        lockgate.wait_for(job_id, "CANCELED", lambda d: d["state"] == "CANCELED", 120)
        assert committed_lines(out) == expected
        listed = lockgate("list", "-a")
        assert f": {job_id} : dispatcher test job (CANCELED)" in listed.stdout
    finally:
        lockgate("dispatcher", "stop", check=False)
