"""The storage check before a job's first epoch, on local Spark (the executor is the
driver's JVM). Executors that cannot reach a location are tested on a standalone cluster
(``cluster/test_cluster_storage_check.py``)."""

from __future__ import annotations

import time

import pytest
from lockgate_it_support import SparkJobCounter, collect

from lockgate.common import Configuration
from lockgate.common.config_options import ConfigurationError
from lockgate.runtime.jobmaster.job_settings import JobSettings
from lockgate.runtime.jobmaster.storage_check import check_storage


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
