"""Spark settings from spark-submit, PYSPARK_SUBMIT_ARGS and spark-defaults.conf win over
lockgate's defaults; the job configuration's ``spark.*`` keys win over both.

Each case starts Spark in a process of its own (``session_probe.py``; one SparkContext per
process), launched the way a user would: plain ``python``, with ``PYSPARK_SUBMIT_ARGS``, with
a ``spark-defaults.conf`` in ``SPARK_CONF_DIR``, or through ``spark-submit``.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from spark_distribution import clean_env, make_spark_home

import lockgate

PROBE = Path(__file__).with_name("session_probe.py")
SRC = str(Path(lockgate.__file__).resolve().parents[1])
TIMEOUT_S = 120


@pytest.fixture(scope="module")
def spark_home(tmp_path_factory):
    return make_spark_home(tmp_path_factory.mktemp("spark-home"))


def probe(spark_home: Path, config: dict[str, str], submit: list[str] | None = None, **env):
    command = [sys.executable, str(PROBE), SRC, json.dumps(config)]
    if submit is not None:  # through spark-submit, which starts the JVM and then the driver
        command = [str(spark_home / "bin" / "spark-submit"), *submit, *command[1:]]
        env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        env.setdefault("PYSPARK_PYTHON", sys.executable)
    done = subprocess.run(
        command,
        env=clean_env(spark_home, **env),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    found = re.search(r"^PROBE (.*)$", done.stdout, re.MULTILINE)
    assert done.returncode == 0 and found, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    report = json.loads(found.group(1))
    assert report["python_ran"] == [2, 4, 6]  # the workers run a usable Python
    return report


def test_plain_python_with_nothing_configured_gets_lockgates_local_defaults(spark_home):
    got = probe(spark_home, {})
    assert got["jvm_heap"] == ["-Xmx1g"]  # Spark's default driver memory
    assert got["master"] == "local[*]"
    assert got["app"] == "lockgate"
    assert got["progress"] == "false"
    assert got["log_level"] == "WARN"
    assert got["jvm_local_ip"] == "127.0.0.1"  # set for the JVM lockgate launched
    assert socket.gethostbyname(got["driver_host"]) == "127.0.0.1"
    assert SRC in got["executor_pythonpath"].split(":")
    assert got["pyspark_python"] == sys.executable


SUBMIT_ARGS = (
    "--master local[1] --name fromsubmit --conf spark.ui.showConsoleProgress=true "
    "--conf spark.log.level=ERROR pyspark-shell"
)


def test_pyspark_submit_args_win_over_lockgates_defaults(spark_home):
    got = probe(spark_home, {}, PYSPARK_SUBMIT_ARGS=SUBMIT_ARGS)
    assert got["master"] == "local[1]"
    assert got["app"] == "fromsubmit"
    assert got["progress"] == "true"
    assert got["log_level"] == "ERROR"
    # the launch named a master lockgate could not know before: it sets no bind address
    assert got["jvm_local_ip"] is None
    assert SRC in got["executor_pythonpath"].split(":")  # the master is local after all


def test_configuration_keys_win_over_pyspark_submit_args(spark_home):
    config = {
        "spark.master": "local[2]",
        "spark.app.name": "fromconfig",
        "spark.driver.memory": "777m",
    }
    got = probe(spark_home, config, PYSPARK_SUBMIT_ARGS=SUBMIT_ARGS)
    assert got["jvm_heap"] == ["-Xmx777m"]  # a setting of the JVM: it reached the launch
    assert got["master"] == "local[2]"
    assert got["app"] == "fromconfig"
    assert got["progress"] == "true"  # not in the configuration: the launch's value
    assert got["jvm_local_ip"] == "127.0.0.1"  # the configured master is local


def test_spark_defaults_conf_wins_over_lockgates_defaults(spark_home, tmp_path):
    (tmp_path / "spark-defaults.conf").write_text(
        "spark.master local[2]\n"
        "spark.app.name fromdefaults\n"
        "spark.python.worker.reuse false\n"
        "spark.executorEnv.PYTHONPATH " + SRC + "\n"
    )
    got = probe(spark_home, {}, SPARK_CONF_DIR=str(tmp_path))
    assert got["master"] == "local[2]"
    assert got["app"] == "fromdefaults"
    assert got["reuse"] == "false"
    assert got["executor_pythonpath"] == SRC
    assert got["progress"] == "false"  # a gap the file leaves: lockgate's default
    assert got["jvm_local_ip"] is None


@pytest.mark.parametrize(
    "flags, master, app",
    [
        (["--master", "local[1]", "--name", "fromsubmit"], "local[1]", "fromsubmit"),
        ([], "local[*]", "session_probe.py"),  # spark-submit's own default name stays
    ],
)
def test_spark_submit_flags_win_over_lockgates_defaults(spark_home, flags, master, app):
    got = probe(spark_home, {}, submit=flags)
    assert got["master"] == master
    assert got["app"] == app
    assert got["progress"] == "false"
    assert got["jvm_local_ip"] is None  # spark-submit started the JVM, not lockgate
