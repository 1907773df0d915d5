"""The heap backend's restore: a new backend holding the key groups its manifest lists,
read from the files of the heap backend's snapshots (``HeapKeyedStateBackend.snapshot``,
``state.snapshot`` format) or from canonical files (savepoints, the state processor)."""

from __future__ import annotations

from lockgate.state import snapshot
from lockgate.state.heap import HeapKeyedStateBackend
from lockgate.state.keyed_subtask import KeyedSubtask
from lockgate.state.manifests import CanonicalManifest, HeapManifest, KeyedStateManifest
from lockgate.state.savepoint_state import group_blobs, restore_canonical


class HeapRestoreOperation:
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
