"""Savepoints: taken at an epoch boundary, self-contained and relocatable, restored into
either backend at another parallelism; exactly-once output across the runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from exactly_once_job import (
    EPOCHS,
    CountPerKey,
    assert_committed_output_exact,
    build_job,
    checkpointed_env,
    committed_lines,
    file_sink,
    recovery_settings,
    stop_with_savepoint_at_first_epoch,
)
from lockgate_it_support import BACKENDS, OpaqueKey

from lockgate.runtime.errors import JobExecutionError
from lockgate.runtime.jobmaster.savepoints import SavepointError

SPLITS = 2


@BACKENDS
def test_a_moved_savepoint_restores_into_the_other_backend_at_another_parallelism(
    make_env, tmp_path, backend
):
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 2)
    build_job(env, tmp_path / "out", SPLITS, source_parallelism=2)
    savepoint = stop_with_savepoint_at_first_epoch(env, tmp_path / "savepoints")
    directory = savepoint.removeprefix("file://")
    assert directory.rpartition("/")[2].startswith("savepoint-")
    meta = json.loads(Path(f"{directory}/_metadata").read_text())["body"]
    keyed = [s["keyed"] for s in meta["operators"]["count-per-key"]["subtasks"]]
    assert {k["backend"] for k in keyed} == {"canonical"}
    files = {h[0] for k in keyed for h in k["groups"].values()}
    assert files and not any(f.startswith(("/", "file:")) for f in files)  # relative paths

    moved = tmp_path / "elsewhere" / "my-savepoint"
    shutil.copytree(directory, moved)
    shutil.rmtree(directory)
    other = "rocksdb" if backend == "hashmap" else "hashmap"
    env = checkpointed_env(
        make_env,
        tmp_path / "again",
        3,
        settings={**recovery_settings(moved), "state.backend.type": other},
    )
    build_job(env, tmp_path / "out", SPLITS, source_parallelism=3)
    result = env.execute("second run")
    assert [e.epoch for e in result.epochs] == list(range(2, EPOCHS + 1))
    assert_committed_output_exact(tmp_path / "out", SPLITS)


def test_a_damaged_savepoint_is_refused_naming_the_file(make_env, tmp_path):
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 2)
    build_job(env, tmp_path / "out", SPLITS)
    savepoint = stop_with_savepoint_at_first_epoch(env, tmp_path / "savepoints")
    meta = Path(savepoint.removeprefix("file://")) / "_metadata"
    meta.write_bytes(meta.read_bytes().replace(b'"epoch":1', b'"epoch":7'))
    env = checkpointed_env(make_env, tmp_path / "again", 2, settings=recovery_settings(savepoint))
    build_job(env, tmp_path / "out", SPLITS)
    with pytest.raises(JobExecutionError, match=r"_metadata fails its checksum"):
        env.execute("from a damaged savepoint")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("nowhere", r"nowhere does not exist"),
        ("empty", r"is not a savepoint or a chk-<n> checkpoint: .*_metadata is missing"),
    ],
)
def test_a_path_that_is_not_a_savepoint_is_refused(make_env, tmp_path, path, message):
    (tmp_path / "empty").mkdir()
    env = checkpointed_env(
        make_env, tmp_path / "again", 2, settings=recovery_settings(tmp_path / path)
    )
    build_job(env, tmp_path / "out", SPLITS)
    with pytest.raises(JobExecutionError, match=message):
        env.execute("from no savepoint")


def test_a_stop_whose_savepoint_fails_does_not_stop_the_job(make_env, tmp_path):
    """Keys without a portable encoding fail the savepoint, not the job; and a stop whose
    savepoint failed does not stop it (Flink's job also keeps running)."""
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 2)
    records = 5 * 40  # five epochs of 40
    (
        env.from_collection([(0, i) for i in range(records)])
        .key_by(lambda r: OpaqueKey(r[1] % 4))
        .process(CountPerKey())
        .uid("opaque-counts")
        .sink_to(file_sink(tmp_path / "out"))
    )
    master = env._job_master("opaque keys")
    future = master.trigger_savepoint(str(tmp_path / "savepoints"), stop=True)
    assert [r.stats.epoch for r in master.run() if r.stats is not None] == [1, 2, 3, 4, 5]
    with pytest.raises(SavepointError, match=r"opaque-counts.*state 'count'.*OpaqueKey"):
        future.result(timeout=0)
    assert sum(committed_lines(tmp_path / "out").values()) == records
    target = tmp_path / "savepoints"
    assert not target.exists() or list(target.iterdir()) == []  # the failed one is gone
