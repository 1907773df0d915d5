"""The storage check before a job's first epoch, on local Spark (the executor is the
driver's JVM). Executors that cannot reach a location are tested on a standalone cluster
(``cluster/test_cluster_storage_check.py``)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lockgate_it_support import SparkJobCounter, collect
from spark_distribution import clean_env, make_spark_home

import lockgate
from lockgate.common import Configuration
from lockgate.common.config_options import ConfigurationError
from lockgate.runtime.jobmaster.job_settings import JobSettings
from lockgate.runtime.jobmaster.storage_check import check_storage

SRC = str(Path(lockgate.__file__).resolve().parents[1])
CLUSTER_JOB = Path(__file__).with_name("cluster") / "cluster_job.py"  # also runs locally


def test_every_job_checks_its_storage_once_before_its_first_epoch(make_env, spark, tmp_path):
    checkpoints = tmp_path / "checkpoints"
    env = make_env(parallelism=2, max_records_per_split=2)
    env.enable_checkpointing(1)
    env.get_checkpoint_config().set_checkpoint_storage_dir(str(checkpoints))
    stream = env.from_collection(list(range(10))).map(lambda v: v * 2)
    jobs = SparkJobCounter(spark)
    assert sorted(collect(stream)) == [v * 2 for v in range(10)]
    assert jobs.count(at_least=5) >= 5  # 10 records, 2 per epoch
    (check,) = jobs.checks_started()
    assert check < min(jobs.started()), "the check runs before the first epoch"
    leftovers = [p for p in tmp_path.rglob("_storage-check-*")]
    assert not leftovers, leftovers


def test_check_cost_and_result_in_local_mode(spark, tmp_path):
    sc = spark.sparkContext
    config = {
        "lockgate.work-dir": str(tmp_path / "work"),
        "execution.checkpointing.interval": "1 s",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
    }
    settings = JobSettings.resolve(config, "check", sc.master)
    results = [check_storage(sc, settings, sc.master) for _ in range(5)]
    assert all(r.checked == results[0].checked for r in results)
    (executor,) = results[0].checked
    assert executor.startswith("the driver's executor")
    assert results[0].unchecked == ()
    median = sorted(r.seconds for r in results)[2]
    print(f"storage check in local mode: median {median * 1000:.0f} ms over 5 runs")
    assert median < 5, "one short Spark job"


def test_a_work_dir_the_driver_cannot_write_fails_before_any_spark_job(make_env, spark, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    env = make_env(parallelism=1)
    env.configure(Configuration().set_string("lockgate.work-dir", str(blocker / "work")))
    stream = env.from_collection([1, 2, 3])
    jobs = SparkJobCounter(spark)
    started = time.monotonic()
    with pytest.raises(ConfigurationError) as failure:
        collect(stream)
    message = str(failure.value)
    assert f"the driver cannot write file://{blocker}/work/" in message, message
    assert "'lockgate.work-dir'" in message
    assert jobs.none_started()
    assert time.monotonic() - started < 30


def _configuration_error_of_a_local_job(tmp_path: Path, python: str, executor_path: str) -> str:
    """Run ``cluster_job.py`` on local Spark, its workers on ``python`` with ``executor_path``
    first on their path, and return the message of the ``ConfigurationError`` that must end
    it before any epoch."""
    spec = {
        "master": "local[1]",
        "out": str(tmp_path / "out"),
        "checkpoints": str(tmp_path / "checkpoints"),
        "work": str(tmp_path / "work"),
        "backend": "hashmap",
        "markers": str(tmp_path),
        "stall": None,
        "executor_pythonpath": executor_path,
    }
    home = make_spark_home(tmp_path / "spark-home")
    done = subprocess.run(
        [sys.executable, str(CLUSTER_JOB), json.dumps(spec)],
        env=clean_env(home, PYSPARK_PYTHON=python, PYTHONPATH=SRC),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-3000:]
    assert not list(tmp_path.glob("ran-*")), "no epoch may have run"
    found = re.search(r"^CONFIG_ERROR (.*)$", done.stdout, re.MULTILINE)
    assert found is not None, done.stdout[-2000:]
    return str(json.loads(found.group(1)))


def test_executors_without_lockgates_dependencies_fail_the_check_saying_what_they_need(tmp_path):
    """The workers' Python is a bare virtualenv: it can import lockgate's own code (on
    spark.executorEnv.PYTHONPATH) but none of its dependencies. The check's Spark job fails,
    and the job with it, before any epoch, saying what the executors lack."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    message = _configuration_error_of_a_local_job(tmp_path, str(bare / "bin" / "python"), SRC)
    assert "the storage check could not run a Python task on the executors" in message
    assert "(master local[1])" in message
    assert "ModuleNotFoundError: No module named" in message, message
    assert "PYSPARK_PYTHON or spark.pyspark.python" in message


def test_executors_on_another_lockgate_version_fail_before_the_first_epoch(tmp_path):
    """The workers import a copy of lockgate that says it is another version (first on
    spark.executorEnv.PYTHONPATH); the driver runs this one. The storage check, the job's
    first Spark job, fails the job before any epoch with a message naming both versions."""
    other = tmp_path / "other"
    shutil.copytree(
        Path(SRC) / "lockgate", other / "lockgate", ignore=shutil.ignore_patterns("__pycache__")
    )
    (other / "lockgate" / "common" / "version.py").write_text('__version__ = "0.0.9-other"\n')
    message = _configuration_error_of_a_local_job(tmp_path, sys.executable, str(other))
    assert f"the driver runs lockgate {lockgate.__version__}" in message, message
    assert "the executor runs lockgate 0.0.9-other" in message, message
