"""Where RocksDB instances live: ``state.backend.rocksdb.localdir`` (or the backend's
``set_db_storage_paths``), spread over its directories by subtask, removed with the job; a
directory RocksDB cannot write to fails the job before it starts, naming key and path."""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

import pytest
from lockgate_it_support import SparkJobCounter, collect

from lockgate.common import ConfigurationError
from lockgate.datastream import KeyedProcessFunction
from lockgate.datastream.state import ValueStateDescriptor
from lockgate.datastream.state_backend import EmbeddedRocksDBStateBackend

pytestmark = pytest.mark.parametrize("backend", ["rocksdb"])

LOCALDIR = "state.backend.rocksdb.localdir"
PER_EPOCH = 20
EPOCHS = 6
SNAPSHOTS_KEPT = 3  # local snapshots per subtask (state.rocksdb.LOCAL_SNAPSHOTS_KEPT)


class CountAndLook(KeyedProcessFunction):
    """Counts per key; on each subtask's first record of every epoch after the first,
    reports the local snapshots of its RocksDB instance found under ``roots``."""

    def __init__(self, roots: list[str]):
        self.roots = roots

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))
        self.looked: set[int] = set()
        self.index = runtime_context.get_index_of_this_subtask()

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield "count", value[1], count
        epoch = value[1] // PER_EPOCH + 1
        if epoch > 1 and epoch not in self.looked:
            self.looked.add(epoch)
            index = self.index
            found = {
                root: sorted(glob.glob(f"{root}/lockgate-rocksdb-*/*/op*-{index}/snap-*"))
                for root in self.roots
            }
            yield "look", index, epoch, os.getcwd(), found


def run(env, roots: list[str]) -> tuple[list, dict[int, dict[int, dict]], set[str]]:
    """Counts, and per subtask and epoch the local snapshots found; the workers' cwd."""
    records = [(i % 5, i) for i in range(EPOCHS * PER_EPOCH)]
    stream = env.from_collection(records).key_by(lambda r: r[0]).process(CountAndLook(roots))
    results = collect(stream)
    counts = sorted(r[1:] for r in results if r[0] == "count")
    looks: dict[int, dict[int, dict]] = {}
    for _, index, epoch, _, found in (r for r in results if r[0] == "look"):
        looks.setdefault(index, {})[epoch] = found
    cwds = {r[3] for r in results if r[0] == "look"}
    return counts, looks, cwds


def expected_counts() -> list[tuple[int, int]]:
    return sorted((i, i // 5 + 1) for i in range(EPOCHS * PER_EPOCH))


@pytest.mark.parametrize("how", ["configuration", "set_db_storage_paths"])
def test_instances_live_in_the_local_dirs_by_subtask_and_go_with_the_job(make_env, tmp_path, how):
    roots = [str(tmp_path / "disk-a"), str(tmp_path / "disk-b")]
    if how == "configuration":
        env = make_env(
            parallelism=2, max_records_per_split=PER_EPOCH, **{LOCALDIR: ",".join(roots)}
        )
    else:  # PyFlink's API, which takes file:// URIs too
        env = make_env(parallelism=2, max_records_per_split=PER_EPOCH)
        backend = EmbeddedRocksDBStateBackend()
        backend.set_db_storage_paths(roots[0], f"file://{roots[1]}")
        env.set_state_backend(backend)
    counts, looks, _ = run(env, roots)
    assert counts == expected_counts()
    assert set(looks) == {0, 1}, looks
    for index, per_epoch in looks.items():
        assert set(per_epoch) == set(range(2, EPOCHS + 1)), per_epoch.keys()
        for epoch, found in per_epoch.items():
            # subtask i uses directory i % 2 (and only it), and old snapshots go
            mine, other = found[roots[index]], found[roots[1 - index]]
            assert mine, f"subtask {index}, epoch {epoch}: no local snapshot in {roots[index]}"
            assert not other, found
            assert len(mine) <= SNAPSHOTS_KEPT, f"epoch {epoch}: snapshots pile up: {mine}"
    for root in roots:
        assert not glob.glob(f"{root}/lockgate-rocksdb-*/*/*"), "instances left after the job"


def test_localdir_given_as_a_file_uri(make_env, tmp_path):
    root = tmp_path / "disk"
    env = make_env(parallelism=1, max_records_per_split=PER_EPOCH, **{LOCALDIR: f"file://{root}"})
    cwds: set[str] = set()
    try:
        counts, looks, cwds = run(env, [str(root)])
        assert counts == expected_counts()
        assert looks[0][2][str(root)], f"no local snapshot under {root}"
    finally:
        for cwd in cwds:  # what the bug leaves in the worker's directory
            stray = Path(cwd) / f"file:{root}"
            if stray.exists():
                shutil.rmtree(stray)
                for parent in stray.parents:
                    if parent == Path(cwd) or any(parent.iterdir()):
                        break
                    parent.rmdir()


def unwritable(tmp_path: Path, kind: str) -> Path:
    if kind == "under-a-file":  # holds for root too
        blocker = tmp_path / "a-file"
        blocker.write_text("")
        return blocker / "rocksdb"
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories")
    directory = tmp_path / "read-only"
    directory.mkdir()
    directory.chmod(0o500)
    return directory


@pytest.mark.parametrize("how", ["configuration", "set_db_storage_paths"])
@pytest.mark.parametrize("kind", ["under-a-file", "read-only"])
def test_unwritable_local_dir_fails_before_any_spark_job(make_env, spark, tmp_path, how, kind):
    path = unwritable(tmp_path, kind)
    try:
        if how == "configuration":
            env = make_env(parallelism=1, **{LOCALDIR: str(path)})
        else:
            env = make_env(parallelism=1)
            backend = EmbeddedRocksDBStateBackend()
            backend.set_db_storage_paths(str(path))
            env.set_state_backend(backend)
        stream = env.from_collection([(1, 1)]).key_by(lambda r: r[0]).process(CountAndLook([]))
        jobs = SparkJobCounter(spark)
        with pytest.raises(ConfigurationError) as failure:
            collect(stream)
        message = str(failure.value)
        assert f"'{LOCALDIR}'" in message and str(path) in message, message
        assert "not writable" in message, message
        assert jobs.none_started()
    finally:
        if path.is_dir():
            path.chmod(0o700)
