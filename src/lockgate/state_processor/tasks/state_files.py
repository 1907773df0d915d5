"""Inside a Spark task: one subtask's keyed state as canonical key-group blobs, whichever
backend wrote it.

A savepoint's canonical files are read as they are. Any other manifest is restored into the
backend that wrote it, for the subtask's key-group range, by that backend's own restore
(``RestoreOperation.restore``: a heap checkpoint into dicts, a RocksDB checkpoint into an
instance in a temporary directory that the task deletes), and each key group is exported
with ``export_group``: the formats have one decoder each, the backends'.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator

from lockgate.state import canonical_snapshot
from lockgate.state.backend_settings import KeyedStateSettings
from lockgate.state.heap_restore import HeapRestoreOperation
from lockgate.state.keyed_subtask import KeyedSubtask
from lockgate.state.manifests import (
    ROCKSDB,
    CanonicalManifest,
    HeapManifest,
    KeyedStateManifest,
)
from lockgate.state.rocksdb import RocksDBSettings
from lockgate.state.rocksdb_restore import RocksDBRestoreOperation
from lockgate.state.savepoint_state import export_groups, group_blobs
from lockgate.state_processor.task_records import SubtaskFiles


def canonical_groups(files: SubtaskFiles) -> Iterator[tuple[int, bytes]]:
    """(key group, canonical blob) of every key group with entries, in key-group order for
    a restored backend."""
    manifest = files.manifest
    if isinstance(manifest, CanonicalManifest):
        yield from group_blobs(manifest, canonical_snapshot.MAGIC)
        return
    subtask = KeyedSubtask(
        files.uid,
        files.name,
        files.subtask,
        f"read-{files.subtask}",
        files.key_groups,
        files.max_parallelism,
    )
    if isinstance(manifest, HeapManifest):
        heap = HeapRestoreOperation().restore(subtask, manifest, claimed=True)
        yield from export_groups(heap, manifest.groups, subtask)
    else:  # a RocksDB instance, or the parts of several (a restore at another parallelism)
        yield from _rocksdb_groups(subtask, manifest)


def _rocksdb_groups(
    subtask: KeyedSubtask, manifest: KeyedStateManifest
) -> Iterator[tuple[int, bytes]]:
    local = tempfile.mkdtemp(prefix="lockgate-state-processor-")
    try:
        settings = KeyedStateSettings(
            ROCKSDB, "state-processor", False, (local,), RocksDBSettings()
        )
        backend = RocksDBRestoreOperation(settings).restore(subtask, manifest, claimed=True)
        try:
            yield from export_groups(backend, subtask.key_groups, subtask)
        finally:
            backend.dispose()
    finally:
        shutil.rmtree(local, ignore_errors=True)
