"""Running the cluster tests' job in a driver process of its own (not a test module)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from spark_distribution import clean_env
from standalone import StandaloneCluster

import lockgate

SRC = str(Path(lockgate.__file__).resolve().parents[1])
JOB = Path(__file__).with_name("cluster_job.py")
JOB_TIMEOUT_S = 300
# The cluster every test starts from: two Spark hosts (two machines, as far as Spark and
# lockgate can tell), name -> host
WORKERS = {"worker-1": "127.0.0.1", "worker-2": "127.0.0.2"}


@dataclass
class Driver:
    process: subprocess.Popen
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.output().splitlines()[-lines:])

    def wait(self, timeout_s: float = JOB_TIMEOUT_S) -> int:
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            pytest.fail(f"the driver did not finish in {timeout_s} s:\n{self.tail()}")

    def line(self, tag: str):
        found = re.search(rf"^{tag} (.*)$", self.output(), re.MULTILINE)
        assert found, f"no {tag} line:\n{self.tail()}"
        return json.loads(found.group(1))


def job_spec(tmp_path: Path, backend: str, master: str | None, **extra):
    markers = tmp_path / "markers"
    markers.mkdir(exist_ok=True)
    return {
        "master": master,
        "out": str(tmp_path / "out"),
        "checkpoints": str(tmp_path / "checkpoints"),
        "work": str(tmp_path / "work"),
        "backend": backend,
        "markers": str(markers),
        "stall": None,
        "executor_pythonpath": SRC,
        **extra,
    }


def run_job(cluster: StandaloneCluster, tmp_path: Path, spec: dict, **env: str) -> Driver:
    """Start the job's driver; its own executors' Python is this interpreter."""
    log = tmp_path / "driver.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, str(JOB), json.dumps(spec)],
            cwd=tmp_path,
            env=clean_env(
                cluster.spark_home,
                **{
                    "PYSPARK_PYTHON": sys.executable,
                    "PYTHONPATH": SRC,
                    "SPARK_CONF_DIR": str(cluster.spark_home / "conf"),
                    **env,
                },
            ),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Driver(process, log)
