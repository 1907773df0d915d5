"""How files become a keyed subtask's state again: one ``RestoreOperation`` per backend
(Flink's name) builds a backend holding the state a manifest describes. The backend then
writes its own snapshots (``KeyedStateBackend.snapshot``). The runtime sees only these two
interfaces.
"""

from __future__ import annotations

from typing import Protocol

from lockgate.state.backend_settings import KeyedStateSettings
from lockgate.state.heap_restore import HeapRestoreOperation
from lockgate.state.keyed_backend import KeyedStateBackend
from lockgate.state.keyed_subtask import KeyedSubtask
from lockgate.state.manifests import ROCKSDB, KeyedStateManifest
from lockgate.state.rocksdb_restore import RocksDBRestoreOperation


class RestoreOperation(Protocol):
    def restore(
        self, subtask: KeyedSubtask, manifest: KeyedStateManifest | None, claimed: bool
    ) -> KeyedStateBackend:
        """A backend holding ``manifest``'s state (empty without one). ``claimed`` is false
        when the files belong to another job's checkpoint: the first snapshot must then
        write everything anew instead of referring to them (Flink's NO_CLAIM mode)."""
        ...


def restore_operation(settings: KeyedStateSettings) -> RestoreOperation:
    if settings.backend == ROCKSDB:
        return RocksDBRestoreOperation(settings)
    return HeapRestoreOperation()
