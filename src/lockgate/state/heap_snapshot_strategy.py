"""The heap backend's snapshots: after every epoch, the key groups that changed go into one
file (``state.snapshot`` format); a restore reads the key groups its manifest lists."""

from __future__ import annotations

from lockgate.core.fs.storage import Storage
from lockgate.state import snapshot
from lockgate.state.heap import HeapKeyedStateBackend
from lockgate.state.keyed_subtask import KeyedSubtask
from lockgate.state.manifests import (
    CanonicalManifest,
    HeapManifest,
    KeyedStateManifest,
    KeyedStateSnapshot,
)
from lockgate.state.rocksdb import RocksDBKeyedStateBackend
from lockgate.state.savepoint_state import group_blobs, restore_canonical


class HeapSnapshotStrategy:
    def restore(
        self, subtask: KeyedSubtask, manifest: KeyedStateManifest | None, claimed: bool
    ) -> HeapKeyedStateBackend:
        backend = HeapKeyedStateBackend(subtask.key_groups, subtask.max_parallelism)
        if isinstance(manifest, CanonicalManifest):
            restore_canonical(backend, manifest)
        elif isinstance(manifest, HeapManifest):
            kinds = dict(manifest.kinds)
            for key_group, blob in group_blobs(manifest, snapshot.MAGIC):
                backend.install_group(key_group, snapshot.decode_group(blob), kinds)
        else:
            return backend  # JobState checked that this backend wrote any manifest it has
        backend.dirty.clear()
        if not claimed:
            backend.dirty.update(manifest.groups)  # the first snapshot copies every key group
        return backend

    def snapshot(
        self,
        backend: HeapKeyedStateBackend | RocksDBKeyedStateBackend,
        subtask: KeyedSubtask,
        storage: Storage,
        tag: str,
        checkpoint: bool,
    ) -> KeyedStateSnapshot:
        if not isinstance(backend, HeapKeyedStateBackend):
            raise TypeError(f"{subtask.describe()}: not a heap backend: {backend!r}")
        changed = backend.take_dirty_groups()
        groups: dict[int, snapshot.GroupHandle] = {}
        written = 0
        if changed:
            data, positions = snapshot.encode(
                backend.kinds, {kg: backend.group_contents(kg) for kg in changed}
            )
            relative = f"{subtask.uid}/{subtask.index}/{tag}.lgks"
            storage.write_bytes(relative, data)
            url = storage.url_of(relative)
            groups = {kg: snapshot.GroupHandle(url, *positions[kg]) for kg in changed}
            written = len(data)
        return KeyedStateSnapshot(
            HeapManifest(dict(backend.kinds), groups), written, backend.num_entries()
        )
