"""Keyed state of every kind written as a heap checkpoint, a RocksDB checkpoint and a
savepoint, for the state processor's unit tests (not a test module)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lockgate.common.time import Duration
from lockgate.core.fs.storage import Storage
from lockgate.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from lockgate.datastream.window import TimeWindow
from lockgate.state.backend_settings import KeyedStateSettings
from lockgate.state.heap_restore import HeapRestoreOperation
from lockgate.state.key_groups import KeyGroupRange, key_group_for_hash
from lockgate.state.key_hash import stable_key_hash
from lockgate.state.keyed_subtask import KeyedSubtask
from lockgate.state.manifests import ROCKSDB, KeyedStateManifest
from lockgate.state.rocksdb import RocksDBSettings
from lockgate.state.rocksdb_restore import RocksDBRestoreOperation
from lockgate.state.savepoint_state import write_savepoint_state
from lockgate.state_processor.task_records import SubtaskFiles

MAX_P = 16
RANGE = KeyGroupRange(0, MAX_P - 1)
KEYS = ["a", "b", 7, (1, "x")]
NOW = 1_000_000


class Average:
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return (accumulator[0] + value, accumulator[1] + 1)

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


def group_of(key: Any, max_parallelism: int = MAX_P) -> int:
    return key_group_for_hash(stable_key_hash(key), max_parallelism)


def fill(backend: Any) -> None:
    """For key number n: value {"n": n}, list [n, n + 1], map {"k": n}, reducing n + 10,
    aggregating (n, 1), TTL value n (last access NOW), window list [n] in
    TimeWindow(0, 10), and an event-time timer at 9 for that window."""
    backend.ttl_clock = lambda: NOW
    ttl_value = ValueStateDescriptor("ttl-value")
    ttl_value.enable_time_to_live(StateTtlConfig.new_builder(Duration.of_hours(1)).build())
    value = backend.get_state(ValueStateDescriptor("value"))
    lists = backend.get_state(ListStateDescriptor("list"))
    maps = backend.get_state(MapStateDescriptor("map"))
    total = backend.get_state(ReducingStateDescriptor("sum", lambda a, b: a + b))
    average = backend.get_state(AggregatingStateDescriptor("avg", Average()))
    ttl = backend.get_state(ttl_value)
    window = backend.get_state(ListStateDescriptor("window-list"), namespaced=True)
    timers = backend.timer_queue("_timers/user/event")
    for n, key in enumerate(KEYS):
        group = group_of(key)
        backend.set_current_key(group, key)
        value.update({"n": n})
        lists.add_all([n, n + 1])
        maps.put("k", n)
        total.add(n)
        total.add(10)
        average.add(n)
        ttl.update(n)
        backend.ns_ctx.group = group
        backend.ns_ctx.key = (key, TimeWindow(0, 10))
        window.add(n)
        timers.add(group, key, TimeWindow(0, 10), 9)


def subtask(name: str = "op") -> KeyedSubtask:
    return KeyedSubtask(name, name, 0, f"{name}-0", RANGE, MAX_P)


def files(manifest: KeyedStateManifest, uid: str = "op") -> SubtaskFiles:
    return SubtaskFiles(uid, uid, 0, MAX_P, RANGE, manifest)


def heap_checkpoint(root: Path) -> SubtaskFiles:
    backend = HeapRestoreOperation().restore(subtask(), None, True)
    fill(backend)
    snapshot = backend.snapshot(subtask(), Storage(str(root)), "t1", True)
    return files(snapshot.changes)


def rocksdb_checkpoint(root: Path) -> SubtaskFiles:
    settings = KeyedStateSettings(ROCKSDB, "job", False, (str(root / "local"),), RocksDBSettings())
    backend = RocksDBRestoreOperation(settings).restore(subtask(), None, True)
    try:
        fill(backend)
        backend.write_back()
        snapshot = backend.snapshot(subtask(), Storage(str(root / "chk")), "t1", True)
    finally:
        backend.dispose()
    return files(snapshot.changes)


def savepoint(root: Path) -> SubtaskFiles:
    backend = HeapRestoreOperation().restore(subtask(), None, True)
    fill(backend)
    storage = Storage(str(root))
    manifest = write_savepoint_state(backend, subtask(), storage, "op/0.lgcs", False)
    return files(manifest.map_urls(storage.url_of))


WRITERS: dict[str, Callable[[Path], SubtaskFiles]] = {
    "heap": heap_checkpoint,
    "rocksdb": rocksdb_checkpoint,
    "savepoint": savepoint,
}
