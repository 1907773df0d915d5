"""Rows of each state kind, and of timers, from the state files of either backend and of a
savepoint, decoded in what would be a Spark task."""

from __future__ import annotations

import shutil

import pytest
from pyspark.sql import Row as SparkRow
from state_files_fixture import KEYS, MAX_P, NOW, RANGE, WRITERS, files, group_of, subtask

from lockgate.core.fs.storage import Storage
from lockgate.state.canonical_snapshot import CanonicalKeyError
from lockgate.state.descriptors import ValueStateDescriptor
from lockgate.state.heap_restore import HeapRestoreOperation
from lockgate.state.key_groups import KeyGroupRange
from lockgate.state.manifests import (
    CanonicalManifest,
    HeapManifest,
    RescalePart,
    RocksDBRescaleManifest,
)
from lockgate.state.snapshot import GroupHandle
from lockgate.state.timer_queues import timer_origin, timer_state_name
from lockgate.state_processor.task_records import (
    KEYED,
    TIMERS,
    ReadTask,
    SubtaskFiles,
    dump,
    split_by_file,
)
from lockgate.state_processor.tasks.state_files import canonical_groups
from lockgate.state_processor.tasks.state_rows import read_rows

SPARK_KEYS = ["a", "b", 7, (1, "x")]  # as Spark gets them: tuples stay tuples


def rows(subtask_files, state, kind, ttl_timestamps=False):
    task = ReadTask(subtask_files, KEYED, state, kind, ttl_timestamps)
    return sorted(read_rows(dump(task)), key=repr)


def by_key(found):
    return {row[0]: row[1:] for row in found}


@pytest.fixture(params=sorted(WRITERS))
def written(request, tmp_path):
    return WRITERS[request.param](tmp_path)


def test_each_kind_reads_as_one_row_per_key(written):
    n = {key: i for i, key in enumerate(SPARK_KEYS)}
    assert by_key(rows(written, "value", "value")) == {k: ({"n": n[k]},) for k in SPARK_KEYS}
    assert by_key(rows(written, "list", "list")) == {k: ([n[k], n[k] + 1],) for k in SPARK_KEYS}
    assert by_key(rows(written, "map", "map")) == {k: ({"k": n[k]},) for k in SPARK_KEYS}
    assert by_key(rows(written, "sum", "reducing")) == {k: (n[k] + 10,) for k in SPARK_KEYS}
    assert by_key(rows(written, "avg", "aggregating")) == {k: ((n[k], 1),) for k in SPARK_KEYS}


def test_a_ttl_value_comes_without_its_timestamp_unless_asked(written):
    assert by_key(rows(written, "ttl-value", "ttl-value")) == {
        k: (i,) for i, k in enumerate(SPARK_KEYS)
    }
    stamped = by_key(rows(written, "ttl-value", "ttl-value", ttl_timestamps=True))
    assert stamped == {k: (i, NOW) for i, k in enumerate(SPARK_KEYS)}


def test_window_state_has_a_namespace_and_timers_their_origin(written):
    window = SparkRow(start=0, end=10)
    found = rows(written, "window-list", "list/ns")
    assert by_key(found) == {k: (window, [i]) for i, k in enumerate(SPARK_KEYS)}
    task = ReadTask(written, TIMERS, "", "timers", False)
    timers = sorted(read_rows(dump(task)), key=repr)
    assert timers == sorted(((k, 9, window, "user", "event") for k in SPARK_KEYS), key=repr)
    # the TimeWindow's names, in the state as in the timers (a Row equals its tuple)
    windows = [row[1] for row in found] + [row[2] for row in timers]
    assert {tuple(window.asDict().items()) for window in windows} == {(("start", 0), ("end", 10))}


def test_timer_origin():
    assert timer_origin(timer_state_name("window", "processing")) == ("window", "processing")
    assert timer_origin("my-timers") == ("my-timers", None)


def test_a_heap_checkpoint_is_read_file_by_file(tmp_path):
    """A later incremental snapshot rewrote one key group into a file of its own: one part
    (one Spark task) per file, together all key groups."""
    first = WRITERS["heap"](tmp_path)
    assert isinstance(first.manifest, HeapManifest)
    groups = dict(first.manifest.groups)
    moved = min(groups)
    handle = groups[moved]
    copy = tmp_path / "later.lgks"
    shutil.copyfile(handle.file.removeprefix("file://"), copy)
    groups[moved] = GroupHandle(f"file://{copy}", handle.offset, handle.length, handle.crc)
    parts = split_by_file(files(HeapManifest(first.manifest.kinds, groups)))
    assert sorted(len(p.manifest.groups) for p in parts) == [1, len(groups) - 1]
    assert sorted(kg for part in parts for kg, _ in canonical_groups(part)) == sorted(groups)


def test_a_savepoint_file_is_read_as_it_is(tmp_path):
    written = WRITERS["savepoint"](tmp_path)
    assert isinstance(written.manifest, CanonicalManifest)
    assert split_by_file(written) == [written]
    assert len(list(canonical_groups(written))) == len(written.manifest.groups)


def test_keys_decode_to_what_was_written(written):
    assert sorted(map(repr, (r[0] for r in rows(written, "value", "value")))) == sorted(
        map(repr, KEYS)
    )


def test_a_rocksdb_restore_at_another_parallelism_reads_its_own_key_groups(tmp_path):
    """A manifest of the old instances a subtask restores from after a rescale (which a
    checkpoint names until the subtask's first snapshot replaces it)."""
    whole = WRITERS["rocksdb"](tmp_path)
    half = KeyGroupRange(0, MAX_P // 2 - 1)
    rescaled = SubtaskFiles(
        "op",
        "op",
        0,
        MAX_P,
        half,
        RocksDBRescaleManifest((RescalePart(whole.key_groups, whole.manifest),)),
    )
    keys = {row[0] for row in read_rows(dump(ReadTask(rescaled, KEYED, "value", "value", False)))}
    assert keys == {k for k in SPARK_KEYS if group_of(k) in half}
    assert sorted(kg for kg, _ in canonical_groups(rescaled)) == sorted(
        {group_of(k) for k in KEYS} & set(half)
    )


class Opaque:
    """A key with no portable encoding (a checkpoint may hold it, pickled)."""

    def __init__(self, n):
        self.n = n

    def __hash__(self):
        return self.n

    def __eq__(self, other):
        return isinstance(other, Opaque) and other.n == self.n


def test_a_checkpoint_key_without_a_portable_encoding_fails_naming_the_operator(tmp_path):
    backend = HeapRestoreOperation().restore(subtask("opaque-counts"), None, True)
    backend.set_current_key(RANGE.start, Opaque(1))
    backend.get_state(ValueStateDescriptor("count")).update(1)
    snapshot = backend.snapshot(subtask(), Storage(str(tmp_path)), "t1", True)
    with pytest.raises(CanonicalKeyError, match=r"uid 'opaque-counts'.*state 'count'.*Opaque"):
        list(canonical_groups(files(snapshot.changes, uid="opaque-counts")))
