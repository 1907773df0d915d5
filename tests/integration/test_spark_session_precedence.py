"""Spark settings from spark-submit, PYSPARK_SUBMIT_ARGS and spark-defaults.conf win over
lockgate's defaults; the job configuration's ``spark.*`` keys win over both.

Each case starts Spark in a process of its own (``session_probe.py``; one SparkContext per
process; all at once), launched the way a user would: plain ``python``, with
``PYSPARK_SUBMIT_ARGS``, with a ``spark-defaults.conf`` in ``SPARK_CONF_DIR``, or through
``spark-submit``.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from spark_distribution import clean_env, make_spark_home

import lockgate

PROBE = Path(__file__).with_name("session_probe.py")
SRC = str(Path(lockgate.__file__).resolve().parents[1])
TIMEOUT_S = 300  # against a hang: six JVMs start at once on 2 cores, beside the suite's other files


SUBMIT_ARGS = (
    "--master local[1] --name fromsubmit --conf spark.ui.showConsoleProgress=true "
    "--conf spark.log.level=ERROR pyspark-shell"
)
SUBMIT_FLAGS = ["--master", "local[1]", "--name", "fromsubmit"]


@dataclass
class Launch:
    """How one case starts Spark: the job configuration's keys, ``spark-submit``'s flags
    (None: plain ``python``), the environment, a ``spark-defaults.conf``."""

    config: dict[str, str] = field(default_factory=dict)
    submit: list[str] | None = None
    env: dict[str, str] = field(default_factory=dict)
    spark_defaults: str | None = None


LAUNCHES = {
    "plain": Launch(),
    "submit-args": Launch(env={"PYSPARK_SUBMIT_ARGS": SUBMIT_ARGS}),
    "config-over-submit-args": Launch(
        config={
            "spark.master": "local[2]",
            "spark.app.name": "fromconfig",
            "spark.driver.memory": "777m",
            "spark.hadoop.lockgate.probe.secret": "s3cr3t-value",
        },
        env={"PYSPARK_SUBMIT_ARGS": SUBMIT_ARGS},
    ),
    "spark-defaults": Launch(
        spark_defaults=(
            "spark.master local[2]\n"
            "spark.app.name fromdefaults\n"
            "spark.python.worker.reuse false\n"
            "spark.executorEnv.PYTHONPATH " + SRC + "\n"
        )
    ),
    "spark-submit-flags": Launch(submit=SUBMIT_FLAGS),
    "spark-submit": Launch(submit=[]),
}


def _start(launch: Launch, spark_home: Path, directory: Path) -> subprocess.Popen[str]:
    command = [sys.executable, str(PROBE), SRC, json.dumps(launch.config)]
    env = dict(launch.env)
    if launch.submit is not None:  # through spark-submit: it starts the JVM, then the driver
        command = [str(spark_home / "bin" / "spark-submit"), *launch.submit, *command[1:]]
        env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        env.setdefault("PYSPARK_PYTHON", sys.executable)
    if launch.spark_defaults is not None:
        (directory / "spark-defaults.conf").write_text(launch.spark_defaults)
        env["SPARK_CONF_DIR"] = str(directory)
    return subprocess.Popen(
        command,
        cwd=directory,
        env=clean_env(spark_home, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def probes(tmp_path_factory) -> dict[str, dict[str, Any]]:
    """What each launch got. All start at once: each is a JVM of its own, whose start is
    mostly waiting on one thread."""
    spark_home = make_spark_home(tmp_path_factory.mktemp("spark-home"))
    started = {
        name: _start(launch, spark_home, tmp_path_factory.mktemp(name))
        for name, launch in LAUNCHES.items()
    }
    reports: dict[str, dict[str, Any]] = {}
    try:
        for name, process in started.items():
            stdout, stderr = process.communicate(timeout=TIMEOUT_S)
            found = re.search(r"^PROBE (.*)$", stdout, re.MULTILINE)
            assert process.returncode == 0 and found, f"{name}: {stdout[-3000:]}\n{stderr[-3000:]}"
            reports[name] = json.loads(found.group(1))
            assert reports[name]["python_ran"] == [2, 4, 6]  # the workers run a usable Python
    finally:
        for process in started.values():
            process.kill()
            process.wait()
    return reports


def test_plain_python_with_nothing_configured_gets_lockgates_local_defaults(probes):
    got = probes["plain"]
    assert got["jvm_heap"] == ["-Xmx1g"]  # Spark's default driver memory
    assert got["master"] == "local[*]"
    assert got["app"] == "lockgate"
    assert got["progress"] == "false"
    assert got["log_level"] == "WARN"
    assert got["jvm_local_ip"] == "127.0.0.1"  # set for the JVM lockgate launched
    assert socket.gethostbyname(got["driver_host"]) == "127.0.0.1"
    assert SRC in got["executor_pythonpath"].split(":")
    assert got["pyspark_python"] == sys.executable


def test_pyspark_submit_args_win_over_lockgates_defaults(probes):
    got = probes["submit-args"]
    assert got["master"] == "local[1]"
    assert got["app"] == "fromsubmit"
    assert got["progress"] == "true"
    assert got["log_level"] == "ERROR"
    # the launch named a master lockgate could not know before: it sets no bind address
    assert got["jvm_local_ip"] is None
    assert SRC in got["executor_pythonpath"].split(":")  # the master is local after all


def test_configuration_keys_win_over_pyspark_submit_args(probes):
    got = probes["config-over-submit-args"]
    assert got["jvm_heap"] == ["-Xmx777m"]  # a setting of the JVM: it reached the launch
    # any other key reaches the session, not the launch's command line (ps shows it to all)
    assert got["probe_secret"] == "s3cr3t-value"
    assert "s3cr3t-value" not in got["jvm_command"]
    assert "spark.driver.memory=777m" in got["jvm_command"]  # where the probe looks
    assert got["master"] == "local[2]"
    assert got["app"] == "fromconfig"
    assert got["progress"] == "true"  # not in the configuration: the launch's value
    assert got["jvm_local_ip"] == "127.0.0.1"  # the configured master is local


def test_spark_defaults_conf_wins_over_lockgates_defaults(probes):
    got = probes["spark-defaults"]
    assert got["master"] == "local[2]"
    assert got["app"] == "fromdefaults"
    assert got["reuse"] == "false"
    assert got["executor_pythonpath"] == SRC
    assert got["progress"] == "false"  # a gap the file leaves: lockgate's default
    assert got["jvm_local_ip"] is None


@pytest.mark.parametrize(
    "launch, master, app",
    [
        ("spark-submit-flags", "local[1]", "fromsubmit"),
        ("spark-submit", "local[*]", "session_probe.py"),  # spark-submit's own default name stays
    ],
)
def test_spark_submit_flags_win_over_lockgates_defaults(probes, launch, master, app):
    got = probes[launch]
    assert got["master"] == master
    assert got["app"] == app
    assert got["progress"] == "false"
    assert got["jvm_local_ip"] is None  # spark-submit started the JVM, not lockgate
