"""Canonical entries on their way into a new savepoint: from DataFrame rows, from existing
state (hashed anew for another max parallelism), and written as a subtask's file that both
backends restore."""

from __future__ import annotations

from pickle import loads

import pytest
from pyspark.sql import Row as SparkRow
from state_files_fixture import KEYS, MAX_P, WRITERS, group_of

from lockgate.common.types import Row
from lockgate.state.heap import HeapKeyedStateBackend
from lockgate.state.key_codec import decode_key, encode_key
from lockgate.state.key_groups import KeyGroupRange
from lockgate.state.manifests import CanonicalManifest
from lockgate.state.savepoint_state import restore_canonical
from lockgate.state_processor.errors import StateProcessorError
from lockgate.state_processor.task_records import (
    BootstrapTask,
    EntriesTask,
    WriteTask,
    WrittenSubtask,
    dump,
)
from lockgate.state_processor.tasks.canonical_entries import (
    bootstrap_entries,
    existing_entries,
    write_subtask,
)

STATES = (("v", "value"), ("l", "list"), ("m", "map"), ("t", "ttl-value"))


def bootstrap(rows, states=STATES, max_parallelism=MAX_P):
    task = BootstrapTask("op", "key", states, max_parallelism, 123)
    return list(bootstrap_entries(dump(task), rows))


def test_rows_become_entries_of_each_kind():
    entries = bootstrap([("a", 1, [1, 2], {"x": 3}, 4)])
    group = group_of("a")
    key = encode_key("a")
    assert [(e[0], e[1], e[2], e[3], e[4], loads(e[5])) for e in entries] == [
        (group, "v", "value", key, b"", 1),
        (group, "l", "list", key, b"", [1, 2]),
        (group, "m", "map", key, encode_key("x"), 3),
        (group, "t", "ttl-value", key, b"", (4, 123)),  # the write's time is its last access
    ]


def test_null_or_empty_columns_leave_a_key_without_that_state():
    assert bootstrap([("a", None, [], {}, None)]) == []


def test_spark_structs_become_tuples_and_rows_again():
    entries = bootstrap(
        [(SparkRow(_1=1, _2="x"), SparkRow(a=1, b=bytearray(b"z")), None, None, None)]
    )
    ((group, _, _, key, _, value),) = entries
    assert decode_key(key) == (1, "x") and group == group_of((1, "x"))
    restored = loads(value)
    assert type(restored) is Row and restored.as_dict() == {"a": 1, "b": b"z"}


def test_a_key_without_a_portable_encoding_or_null_is_refused():
    class Opaque:
        def __lockgate_key_hash__(self):
            return 1

    with pytest.raises(StateProcessorError, match=r"operator 'op', key column 'key'.*Opaque"):
        bootstrap([(Opaque(), 1, None, None, None)])
    with pytest.raises(StateProcessorError, match=r"operator 'op'.*key column 'key' is null"):
        bootstrap([(None, 1, None, None, None)])


def write(tmp_path, entries, kinds, parallelism=1, index=0, max_parallelism=MAX_P):
    task = WriteTask("op", str(tmp_path), "op", kinds, False)
    pairs = sorted(((e[0], e[1:]) for e in entries), key=lambda pair: pair[0])
    (text,) = write_subtask(dump(task), index, pairs)
    return WrittenSubtask.load(text)


def test_a_written_subtask_restores_into_a_backend(tmp_path):
    kinds = dict(STATES)
    entries = bootstrap([(k, i, [i], {"x": i}, i) for i, k in enumerate(KEYS)])
    written = write(tmp_path, entries, kinds)
    assert written.entries == 4 * len(KEYS)
    manifest = CanonicalManifest(kinds, written.groups).map_urls(lambda p: f"{tmp_path}/{p}")
    backend = HeapKeyedStateBackend(KeyGroupRange(0, MAX_P - 1), MAX_P)
    restore_canonical(backend, manifest)
    assert backend.kinds == kinds
    contents = {}
    for group in written.groups:
        for name, entries_of_state in backend.group_contents(group).items():
            contents.setdefault(name, {}).update(entries_of_state)
    assert contents["v"] == {k: i for i, k in enumerate(KEYS)}
    assert contents["m"] == {k: {"x": i} for i, k in enumerate(KEYS)}


def test_two_rows_of_one_key_fail_naming_the_state_and_key(tmp_path):
    entries = bootstrap([("a", 1, None, None, None), ("a", 2, None, None, None)])
    with pytest.raises(StateProcessorError, match=r"operator 'op', state 'v': the key 'a'"):
        write(tmp_path, entries, dict(STATES))


def test_an_empty_partition_writes_no_file(tmp_path):
    assert write(tmp_path, [], dict(STATES)) == WrittenSubtask(0, {}, 0)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("source", sorted(WRITERS))
def test_existing_state_is_hashed_into_the_new_key_groups(tmp_path, source):
    files = WRITERS[source](tmp_path)
    task = EntriesTask(files, ("value", "_timers/user/event"), 256)
    entries = list(existing_entries(dump(task)))
    assert {e[1] for e in entries} == {"value", "_timers/user/event"}
    for group, _, _, key, _, _ in entries:
        assert group == group_of(decode_key(key), 256)
    kept = EntriesTask(files, ("value",), MAX_P)
    assert {(e[0], decode_key(e[3])) for e in existing_entries(dump(kept))} == {
        (group_of(k), k) for k in KEYS
    }
