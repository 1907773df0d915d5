"""How a keyed subtask's state becomes files after an epoch, and files become state again.

One ``SnapshotStrategy`` per backend (Flink's name): ``snapshot`` persists what the epoch
changed and reports it as a ``KeyedStateSnapshot``; ``restore`` builds a backend holding the
state a manifest describes. The runtime sees only this interface.
"""

from __future__ import annotations

from typing import Protocol

from lockgate.core.fs.storage import Storage
from lockgate.state.backend_settings import KeyedStateSettings
from lockgate.state.heap import HeapKeyedStateBackend
from lockgate.state.heap_snapshot_strategy import HeapSnapshotStrategy
from lockgate.state.keyed_subtask import KeyedSubtask
from lockgate.state.manifests import ROCKSDB, KeyedStateManifest, KeyedStateSnapshot
from lockgate.state.rocksdb import RocksDBKeyedStateBackend
from lockgate.state.rocksdb_snapshot_strategy import RocksDBSnapshotStrategy

KeyedStateBackend = HeapKeyedStateBackend | RocksDBKeyedStateBackend


class SnapshotStrategy(Protocol):
    def restore(
        self, subtask: KeyedSubtask, manifest: KeyedStateManifest | None, claimed: bool
    ) -> KeyedStateBackend:
        """A backend holding ``manifest``'s state (empty without one). ``claimed`` is false
        when the files belong to another job's checkpoint: the first snapshot must then
        write everything anew instead of referring to them (Flink's NO_CLAIM mode)."""
        ...

    def snapshot(
        self,
        backend: KeyedStateBackend,
        subtask: KeyedSubtask,
        storage: Storage,
        tag: str,
        checkpoint: bool,
    ) -> KeyedStateSnapshot:
        """Persist what changed since the last snapshot under ``storage``; ``tag`` names this
        attempt's files, ``checkpoint`` says whether the epoch ends with a checkpoint."""
        ...


def snapshot_strategy(settings: KeyedStateSettings) -> SnapshotStrategy:
    if settings.backend == ROCKSDB:
        return RocksDBSnapshotStrategy(settings)
    return HeapSnapshotStrategy()
