"""Keyed state backends for the shared state tests (not a test module).

Every backend kind the state-semantics tests run on: the heap backend, the RocksDB backend
with its default write-back cache, and the RocksDB backend with a two-key cache, so that
write-backs (and reads of written-back values) happen in the middle of an epoch.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from lockgate.datastream.functions import AggregateFunction
from lockgate.state import snapshot
from lockgate.state.heap import HeapKeyedStateBackend
from lockgate.state.key_groups import KeyGroupRange, key_group_range
from lockgate.state.rocksdb import RocksDBKeyedStateBackend, RocksDBSettings

MAX_P = 128
RANGE = key_group_range(MAX_P, 3, 1)  # key groups 43..85
G1, G2 = 43, 85  # first and last key group of the range

HEAP = "heap"
ROCKSDB = "rocksdb"
ROCKSDB_TINY_CACHE = "rocksdb-cache-2"
KINDS = (HEAP, ROCKSDB, ROCKSDB_TINY_CACHE)

# Small buffers: the unit tests open many instances
SMALL = {"write_buffer_bytes": 1 << 20, "block_cache_bytes": 1 << 20}


def rocksdb_settings(kind: str) -> RocksDBSettings:
    if kind == ROCKSDB_TINY_CACHE:
        return RocksDBSettings(cache_entries=2, **SMALL)
    return RocksDBSettings(**SMALL)


class BackendFactory:
    """Opens backends of one kind; RocksDB instances get directories under ``root``."""

    def __init__(self, kind: str, root: Path):
        self.kind = kind
        self.root = root
        self.opened: list[Any] = []

    @property
    def is_rocksdb(self) -> bool:
        return self.kind != HEAP

    def __call__(self, key_groups: KeyGroupRange = RANGE, path: Path | None = None) -> Any:
        if self.kind == HEAP:
            backend = HeapKeyedStateBackend(key_groups, MAX_P)
        else:
            if path is None:
                path = self.root / f"db-{len(self.opened)}"
            backend = RocksDBKeyedStateBackend(
                key_groups, MAX_P, str(path), rocksdb_settings(self.kind)
            )
        self.opened.append(backend)
        return backend

    def reopen(self, backend: Any, key_groups: KeyGroupRange | None = None) -> Any:
        """A new backend holding what ``backend`` holds, as a restore would build it: the
        heap backend from its key groups' contents, RocksDB from a checkpoint of the
        instance (taken with values still in the write-back cache)."""
        key_groups = key_groups or backend.key_groups
        if self.kind == HEAP:  # through the heap snapshot format, as the runtime does
            groups = {g: backend.group_contents(g) for g in backend.key_groups}
            data, positions = snapshot.encode(
                backend.kinds, {g: c for g, c in groups.items() if c}, False
            )
            restored = self(key_groups)
            for group, position in positions.items():
                handle = snapshot.GroupHandle("memory", *position)
                contents = snapshot.decode_group(snapshot.group_blob(data, handle, group, "memory"))
                restored.install_group(group, contents, backend.kinds)
            return restored
        snap = self.root / f"snap-{len(self.opened)}"
        backend.checkpoint_to(str(snap))
        copy = self.root / f"restored-{len(self.opened)}"
        shutil.copytree(snap, copy)
        return self(key_groups, path=copy)

    def close_all(self) -> None:
        for backend in self.opened:
            dispose = getattr(backend, "dispose", None)
            if dispose is not None:
                dispose()


def stored_entries(backend: Any) -> int:
    """How much the backend stores, exactly (0: nothing at all).

    The heap backend counts (state, key) entries. RocksDB's ``num_entries`` is RocksDB's
    estimate, so its rows are counted after the write-back cache went in: one per value,
    list or reduced value, one per map entry, the state registry left out.
    """
    if isinstance(backend, HeapKeyedStateBackend):
        return backend.num_entries()
    backend.write_back()
    return rocksdb_rows(backend)


def rocksdb_rows(backend: Any, registry: bool = False) -> int:
    """Rows in a RocksDB backend's database as they are (no write-back); the state registry
    (its key starts with 0xffff, which no key group does) counts only if asked."""
    rows = 0
    iterator = backend.db.iter()
    iterator.seek_to_first()
    while iterator.valid() and (registry or not iterator.key().startswith(b"\xff\xff")):
        rows += 1
        iterator.next()
    return rows


class AverageAgg(AggregateFunction):
    """Accumulator (sum, count); result: the average."""

    def __init__(self):
        self.results = 0

    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return (accumulator[0] + value, accumulator[1] + 1)

    def get_result(self, accumulator):
        self.results += 1
        return accumulator[0] / accumulator[1]

    def merge(self, acc_a, acc_b):
        return (acc_a[0] + acc_b[0], acc_a[1] + acc_b[1])
