"""What only the RocksDB backend has: large map states read lazily from the instance, its
state registry in the database, the write-back cache, checkpoints of the instance, and
errors that name the local directory."""

from __future__ import annotations

import os
import shutil
import tracemalloc
from dataclasses import replace

import pytest
from keyed_backends import G1, G2, MAX_P, RANGE, rocksdb_rows, stored_entries

from lockgate.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from lockgate.state import rocksdb
from lockgate.state.rocksdb import RocksDBKeyedStateBackend, RocksDBSettings, StateBackendError

SETTINGS = RocksDBSettings(write_buffer_bytes=1 << 20, block_cache_bytes=1 << 20)
BIG = 10_000


@pytest.fixture
def opened():
    backends: list[RocksDBKeyedStateBackend] = []
    yield backends
    for backend in backends:
        if backend.db is not None:
            backend.dispose()


@pytest.fixture
def open_backend(tmp_path, opened):
    def open_(path=None, settings=SETTINGS) -> RocksDBKeyedStateBackend:
        backend = RocksDBKeyedStateBackend(RANGE, MAX_P, str(path or tmp_path / "db"), settings)
        opened.append(backend)
        return backend

    return open_


def close(backend: RocksDBKeyedStateBackend) -> None:
    """Close the instance and keep its files (``dispose`` deletes them)."""
    backend.write_back()
    backend.db.close()
    backend.db = None


@pytest.fixture
def count_loads(monkeypatch):
    """Counts the values the backend unpickles."""
    calls = []
    real = rocksdb.loads

    def loads(data):
        calls.append(1)
        return real(data)

    monkeypatch.setattr(rocksdb, "loads", loads)
    return calls


# MapState on RocksDB ---------------------------------------------------------------------------


def big_map(b, key="k", group=G1):
    state = b.get_state(MapStateDescriptor("m"))
    b.set_current_key(group, key)
    state.put_all({i: f"value-{i}" for i in range(BIG)})
    return state


def test_large_map_iterates_lazily_and_completely(open_backend, count_loads):
    b = open_backend()
    state = big_map(b)
    items = state.items()
    assert count_loads == []  # nothing read yet
    first = next(iter(items))
    assert first == (0, "value-0")  # ints in order: the encoding is big-endian
    assert len(count_loads) == 1, "one entry read for the first item, not the whole map"
    count_loads.clear()
    keys = state.keys()
    assert [next(keys) for _ in range(3)] == [0, 1, 2]
    assert count_loads == [], "keys are read without unpickling values"
    assert dict(state.items()) == {i: f"value-{i}" for i in range(BIG)}
    assert sorted(state.values()) == sorted(f"value-{i}" for i in range(BIG))
    assert sum(1 for _ in state) == BIG  # iter(): the keys
    assert state.contains(BIG - 1) and not state.contains(BIG)
    assert state.get(1234) == "value-1234"


def test_is_empty_reads_no_value(open_backend, count_loads):
    b = open_backend()
    state = big_map(b)
    count_loads.clear()
    assert not state.is_empty()
    assert count_loads == []
    b.set_current_key(G1, "other")
    assert state.is_empty()


def test_removing_during_iteration_of_a_large_map(open_backend):
    b = open_backend()
    state = big_map(b)
    seen = 0
    for key in state:
        seen += 1
        if key % 3:
            state.remove(key)
        else:
            state.put(key, "kept")
            state.put(-key - 1, "added while iterating")  # sorts after: not seen
    assert seen == BIG, "the iteration sees the map as it was when it started"
    remaining = dict(state.items())
    kept = {k: "kept" for k in range(0, BIG, 3)}
    added = {-k - 1: "added while iterating" for k in range(0, BIG, 3)}
    assert remaining == {**kept, **added}


def test_clear_deletes_exactly_the_current_keys_entries(open_backend):
    """clear() is one delete_range over the key's prefix: neighbours of every kind stay."""
    b = open_backend()
    state = b.get_state(MapStateDescriptor("m"))
    other_state = b.get_state(MapStateDescriptor("n"))
    value = b.get_state(ValueStateDescriptor("v"))
    # b"\xff" ends its prefix with 0xff bytes (the range end must carry over); b"\xff\x00"
    # and b"\xff\xff" start with the same byte; 7 and (7,) encode 7 in both.
    neighbours = [(G1, b"\xff\x00"), (G1, b"\xff\xff"), (G1, (b"\xff",)), (G2, b"\xff")]
    neighbours += [(G1, 7), (G1, (7,)), (G1 + 1, b"\xff")]
    for group, key in [(G1, b"\xff"), *neighbours]:
        b.set_current_key(group, key)
        state.put_all({i: (group, key, i) for i in range(500)})
        other_state.put("x", 1)
        value.update("v")
    before = stored_entries(b)
    b.set_current_key(G1, b"\xff")
    state.clear()
    assert state.is_empty()
    assert list(state.items()) == []
    assert stored_entries(b) == before - 500
    assert other_state.get("x") == 1 and value.value() == "v"
    for group, key in neighbours:
        b.set_current_key(group, key)
        assert dict(state.items()) == {i: (group, key, i) for i in range(500)}, (group, key)
    b.set_current_key(G1, b"\xff")
    state.put("again", 1)  # a cleared map takes new entries
    assert list(state.items()) == [("again", 1)]


def test_map_entries_are_written_to_rocksdb_at_once(open_backend):
    b = open_backend()
    state = b.get_state(MapStateDescriptor("m"))
    b.set_current_key(G1, "k")
    state.put("a", 1)
    assert rocksdb_rows(b, registry=True) == 2  # the registry and the entry, no write-back


# The write-back cache ------------------------------------------------------------------------


def test_a_full_cache_is_written_back_mid_epoch(open_backend):
    b = open_backend(settings=replace(SETTINGS, cache_entries=2))
    state = b.get_state(ValueStateDescriptor("v"))
    for i in range(5):
        b.set_current_key(G1, f"k{i}")
        state.update(i)
    assert rocksdb_rows(b) >= 4, "the cache of two keys went to RocksDB while values were written"
    for i in range(5):
        b.set_current_key(G1, f"k{i}")
        assert state.value() == i


def test_cached_values_wait_for_the_end_of_the_epoch(open_backend):
    b = open_backend()
    state = b.get_state(ValueStateDescriptor("v"))
    listing = b.get_state(ListStateDescriptor("l"))
    for i in range(100):
        b.set_current_key(G1, f"k{i}")
        state.update(i)
        listing.add(i)
    assert rocksdb_rows(b) == 0, "one batched write per key at the end of the epoch"
    b.write_back()
    assert rocksdb_rows(b) == 200
    b.set_current_key(G1, "k0")
    state.clear()
    listing.clear()
    b.write_back()
    assert rocksdb_rows(b) == 198


def test_reading_many_keys_holds_at_most_cache_entries_values(open_backend):
    b = open_backend(settings=replace(SETTINGS, cache_entries=100))
    state = b.get_state(ValueStateDescriptor("v"))
    keys = 5000
    for i in range(keys):
        b.set_current_key(G1 + i % 40, i)
        state.update(bytes(1024))
    b.write_back()  # the end of the epoch
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(keys):  # a read-only epoch, as an enrichment lookup
            b.set_current_key(G1 + i % 40, i)
            assert len(state.value()) == 1024
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # 100 cached values of 1 KB, and their keys: well under 1 MB (5000 values are 5 MB)
    assert grown < 1 << 20, f"{grown >> 10} KB held after reading {keys} keys"


# Registry and reopen -------------------------------------------------------------------------


def test_state_registry_survives_reopen(open_backend, tmp_path):
    path = tmp_path / "db"
    b = open_backend(path)
    value = b.get_state(ValueStateDescriptor("v"))
    mapping = b.get_state(MapStateDescriptor("m"))
    b.get_state(ReducingStateDescriptor("r", max))
    b.set_current_key(G1, "k")
    value.update("value")
    mapping.put("a", 1)
    kinds = b.kinds
    close(b)

    again = open_backend(path)
    assert again.kinds == kinds == {"v": "value", "m": "map", "r": "reducing"}
    # A state first registered now takes a fresh id: it does not see another state's rows
    fresh = again.get_state(ValueStateDescriptor("fresh"))
    again.set_current_key(G1, "k")
    assert fresh.value() is None
    fresh.update("fresh")
    assert again.get_state(MapStateDescriptor("m")).get("a") == 1
    assert again.get_state(ValueStateDescriptor("v")).value() == "value"
    close(again)

    third = open_backend(path)
    third.set_current_key(G1, "k")
    assert third.get_state(ValueStateDescriptor("fresh")).value() == "fresh"
    assert third.get_state(ValueStateDescriptor("v")).value() == "value"
    assert set(third.kinds) == {"v", "m", "r", "fresh"}


def test_kind_mismatch_with_the_registry_of_a_reopened_instance(open_backend, tmp_path):
    path = tmp_path / "db"
    b = open_backend(path)
    b.get_state(ValueStateDescriptor("s"))
    close(b)
    again = open_backend(path)
    with pytest.raises(ValueError, match=r"'s'.*value state.*list state"):
        again.get_state(ListStateDescriptor("s"))
    with pytest.raises(ValueError, match=r"'s'.*value state.*map state"):
        again.get_state(MapStateDescriptor("s"))
    assert again.get_state(ValueStateDescriptor("s")) is not None


# Checkpoints of the instance -----------------------------------------------------------------


def test_checkpoint_holds_cached_values_and_does_not_change_afterwards(open_backend, tmp_path):
    b = open_backend()
    state = b.get_state(ValueStateDescriptor("v"))
    b.set_current_key(G1, "k")
    state.update("before")  # still in the cache
    names = b.checkpoint_to(str(tmp_path / "snap"))
    assert "CURRENT" in names
    assert any(n.startswith("MANIFEST-") for n in names)
    assert any(n.endswith(".sst") for n in names)
    state.update("after")
    b.write_back()
    b.db.flush()
    shutil.copytree(tmp_path / "snap", tmp_path / "copy")
    restored = open_backend(tmp_path / "copy")
    restored.set_current_key(G1, "k")
    assert restored.get_state(ValueStateDescriptor("v")).value() == "before"


def test_checkpoint_sst_files_are_hard_links_of_the_instance(open_backend, tmp_path):
    b = open_backend()
    state = b.get_state(ValueStateDescriptor("v"))
    b.set_current_key(G1, "k")
    state.update("x")
    names = b.checkpoint_to(str(tmp_path / "snap"))
    ssts = [n for n in names if n.endswith(".sst")]
    assert ssts
    for name in ssts:
        assert os.stat(tmp_path / "snap" / name).st_nlink >= 2


def test_dispose_deletes_the_instance_but_not_its_checkpoints(open_backend, tmp_path):
    b = open_backend(tmp_path / "db")
    b.get_state(ValueStateDescriptor("v"))
    b.checkpoint_to(str(tmp_path / "snap"))
    b.dispose()
    assert not (tmp_path / "db").exists()
    assert (tmp_path / "snap" / "CURRENT").exists()
    b.dispose()  # twice is fine


# Local directory errors ----------------------------------------------------------------------


def test_instance_path_under_a_regular_file_fails_naming_it(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    path = blocker / "rocksdb" / "db"
    with pytest.raises(StateBackendError) as info:
        RocksDBKeyedStateBackend(RANGE, MAX_P, str(path), SETTINGS)
    assert str(path) in str(info.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_local_directory_fails_naming_it(tmp_path):
    root = tmp_path / "read-only"
    root.mkdir()
    root.chmod(0o500)
    try:
        for path in (root, root / "db"):
            with pytest.raises(StateBackendError) as info:
                RocksDBKeyedStateBackend(RANGE, MAX_P, str(path), SETTINGS)
            assert str(path) in str(info.value)
    finally:
        root.chmod(0o700)


def test_second_instance_on_a_locked_path_fails_naming_it(open_backend, tmp_path):
    path = tmp_path / "db"
    first = open_backend(path)
    with pytest.raises(StateBackendError) as info:
        RocksDBKeyedStateBackend(RANGE, MAX_P, str(path), SETTINGS)
    message = str(info.value)
    assert str(path) in message and "locked" in message, message
    # The first instance still works, and once it is closed the path opens again
    value = first.get_state(ValueStateDescriptor("v"))
    first.set_current_key(G1, "k")
    value.update(1)
    close(first)
    again = open_backend(path)
    again.set_current_key(G1, "k")
    assert again.get_state(ValueStateDescriptor("v")).value() == 1
