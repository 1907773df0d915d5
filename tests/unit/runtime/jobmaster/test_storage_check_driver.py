"""What the storage check probes, and what its error says (the Spark job itself runs in the
integration tests, locally and on a standalone cluster)."""

from __future__ import annotations

import pytest

from lockgate.common.config_options import ConfigurationError
from lockgate.common.version import __version__
from lockgate.runtime.jobmaster.executors import Executor
from lockgate.runtime.jobmaster.job_settings import JobSettings
from lockgate.runtime.jobmaster.storage_check import (
    _cause,
    _check_versions,
    _configured,
    _message,
    probe_targets,
)
from lockgate.runtime.messages.storage_probe import LOCAL, READ, SHARED, ProbeFailure, ProbeReport

CLUSTER = "spark://10.0.0.1:7077"


def settings(master: str = CLUSTER, **config: str) -> JobSettings:
    values = {"lockgate.work-dir": "/data/work", **config}
    return JobSettings.resolve(values, "job", master)


def test_targets_are_the_jobs_own_directories():
    s = settings(
        **{"execution.checkpointing.interval": "1 s", "execution.checkpointing.dir": "s3://b/ck"}
    )
    work, checkpoints = probe_targets(s, "_probe", None)
    assert (work.key, work.url, work.mode) == (
        "lockgate.work-dir",
        f"/data/work/{s.job_id}/_probe",
        SHARED,
    )
    assert (checkpoints.key, checkpoints.url, checkpoints.mode) == (
        "execution.checkpointing.dir",
        f"s3://b/ck/{s.job_id}/_probe",
        SHARED,
    )


def test_no_checkpoint_storage_no_checkpoint_target():
    assert [t.key for t in probe_targets(settings(), "_probe", None)] == ["lockgate.work-dir"]


def test_a_resumed_checkpoints_metadata_is_read():
    targets = probe_targets(settings(), "_probe", "hdfs://nn/ck/job/chk-7/")
    assert (targets[-1].key, targets[-1].url, targets[-1].mode) == (
        "execution.state-recovery.path",
        "hdfs://nn/ck/job/chk-7/_metadata",
        READ,
    )


def test_rocksdb_local_dirs_are_written_on_a_cluster_only(tmp_path):
    rocks = {
        "state.backend.type": "rocksdb",
        "state.backend.rocksdb.localdir": f"{tmp_path}/a,{tmp_path}/b",
    }
    on_cluster = probe_targets(settings(**rocks), "_probe", None)
    assert [(t.url, t.mode) for t in on_cluster[1:]] == [
        (f"{tmp_path}/a", LOCAL),
        (f"{tmp_path}/b", LOCAL),
    ]
    local = probe_targets(settings("local[2]", **rocks), "_probe", None)
    assert [t.key for t in local] == ["lockgate.work-dir"]  # JobSettings checked them


def report(executor, *failures, placed_on="", hostname="node-7"):
    return ProbeReport(__version__, placed_on, executor, hostname, (), tuple(failures))


def test_the_message_names_key_url_and_executor_and_why_a_local_path_fails_on_a_cluster():
    s = settings()
    failure = ProbeFailure(
        "lockgate.work-dir", "file:///data/work/j/_probe/driver", "read", "FileNotFoundError: x"
    )
    known = {"1": Executor("1", "10.0.0.2")}
    message = _message(
        [(report("1", failure), failure)], known, CLUSTER, _configured(s, None), False
    )
    assert "executor 1 (host 10.0.0.2) cannot read file:///data/work/j/_probe/driver" in message
    assert "which the driver wrote" in message
    assert "'lockgate.work-dir'" in message and "FileNotFoundError: x" in message
    assert "/data/work is on the local file system" in message
    assert f"master {CLUSTER}" in message
    assert "each executor sees its own machine's disk" in message
    assert "hdfs://, s3://, gs://" in message


def test_no_local_path_explanation_for_shared_storage_or_local_spark():
    failure = ProbeFailure("execution.checkpointing.dir", "s3://b/ck/j/_p/x", "write", "Denied")
    s = settings(
        **{"execution.checkpointing.interval": "1 s", "execution.checkpointing.dir": "s3://b/ck"}
    )
    message = _message([(report("2", failure), failure)], {}, CLUSTER, _configured(s, None), False)
    assert "executor 2 cannot write s3://b/ck/j/_p/x" in message
    assert "local file system" not in message
    local = settings("local[2]")
    failure = ProbeFailure("lockgate.work-dir", "file:///data/work/j/_p/driver", "read", "E")
    message = _message(
        [(report("driver", failure), failure)], {}, "local[2]", _configured(local, None), True
    )
    assert "the driver's executor (host node-7, local mode) cannot read" in message
    assert "local file system" not in message


def test_an_executor_that_cannot_tell_its_id_is_named_by_its_placement():
    failure = ProbeFailure("lockgate.work-dir", "/data/work/j/_p/driver", "read", "E")
    known = {"4": Executor("4", "10.0.0.9")}
    message = _message([(report(None, failure, placed_on="4"), failure)], known, CLUSTER, {}, False)
    assert "executor 4 (host 10.0.0.9) (as placed; host name node-7) cannot read" in message


def test_the_driver_reading_back_fails():
    failure = ProbeFailure("lockgate.work-dir", "/w/j/_p/executor-3-ab", "driver-read", "E")
    message = _message([(report("3", failure), failure)], {}, CLUSTER, {}, False)
    assert "executor 3 wrote /w/j/_p/executor-3-ab, but the driver cannot read it back" in message


def test_executors_on_another_lockgate_version_are_named_with_both_versions():
    same = report("1").to_json()
    other = {**report("2").to_json(), "lockgate": "0.0.9"}
    older = {"format": "lockgate-storage-probe-report", "version": 1}  # before the field
    where = ["executor 1", "executor 2", "executor 3"]
    _check_versions([same], where[:1])
    with pytest.raises(ConfigurationError) as failed:
        _check_versions([same, other, older], where)
    message = str(failed.value)
    assert f"the driver runs lockgate {__version__}" in message
    assert "executor 2 runs lockgate 0.0.9" in message
    assert "executor 3 runs lockgate (unknown: an older release)" in message
    assert "executor 1 runs" not in message


def test_the_cause_of_a_failed_check_is_the_import_that_failed_in_a_worker_or_the_daemon():
    worker = (
        "Traceback (most recent call last):\n  ...\nModuleNotFoundError: No module named 'fsspec'\n"
    )
    daemon = (
        "org.apache.spark.SparkException: \nError from python worker:\n  /venv/bin/python: Error "
        "while finding module specification for 'lockgate.runtime.sparktask.python_daemon' "
        "(ModuleNotFoundError: No module named 'lockgate')\nPYTHONPATH was:\n  /x/pyspark.zip\n"
    )
    assert _cause(RuntimeError(worker)) == "ModuleNotFoundError: No module named 'fsspec'"
    assert _cause(RuntimeError(daemon)) == "ModuleNotFoundError: No module named 'lockgate'"
