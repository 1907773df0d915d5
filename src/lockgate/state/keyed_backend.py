"""What a keyed state backend is to the rest of lockgate: one protocol, which both backends
(``heap.HeapKeyedStateBackend``, ``rocksdb.RocksDBKeyedStateBackend``) implement and the
runtime, the restore operations and the savepoint writer use, and what the two share.

The protocol is for type checking only: callers hold the backend itself, and a state's
``value()`` or ``update()`` calls the backend's own state objects, with nothing in between.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from lockgate.core.fs.storage import Storage
from lockgate.state.canonical_snapshot import GroupWriter
from lockgate.state.descriptors import StateDescriptor
from lockgate.state.interfaces import State
from lockgate.state.key_groups import NO_KEY_GROUP, KeyGroupRange
from lockgate.state.keyed_subtask import KeyedSubtask
from lockgate.state.manifests import KeyedStateSnapshot
from lockgate.state.namespaces import NAMESPACED
from lockgate.state.timer_queues import TimerQueue


class KeyContext:
    """The key being processed; states read it on every access."""

    __slots__ = ("group", "key")

    def __init__(self) -> None:
        self.key: Any = None
        self.group = NO_KEY_GROUP  # key group of the key


def kind_mismatch(name: str, known_kind: str, kind: str) -> ValueError:
    hint = ""
    if known_kind.startswith("ttl-") != kind.startswith("ttl-"):
        hint = " (state TTL cannot be turned on or off for an existing state)"
    elif known_kind.endswith(NAMESPACED) != kind.endswith(NAMESPACED):
        hint = " (a state is kept per window or per key, not both: give each its own name)"
    return ValueError(
        f"state {name!r} was registered as {known_kind} state and cannot be used as "
        f"{kind} state{hint}"
    )


class KeyedStateBackend(Protocol):
    """Keyed state of one subtask of one operator (Flink's ``KeyedStateBackend`` with its
    ``Snapshotable`` side)."""

    key_groups: KeyGroupRange
    max_parallelism: int
    ctx: KeyContext  # the current key, which set_current_key sets
    ns_ctx: KeyContext  # of namespaced states: its key is (key, namespace)

    def set_current_key(self, key_group: int, key: Any) -> None: ...

    def get_current_key(self) -> Any: ...

    def get_state(self, descriptor: StateDescriptor, namespaced: bool = False) -> State:
        """The state ``descriptor`` names, per key, or per key and namespace (``ns_ctx``)."""
        ...

    def keys(self, name: str, key_group: int) -> Iterator[Any]:
        """The keys of ``key_group`` that have state ``name`` (one that is not namespaced)."""
        ...

    def timer_queue(self, name: str) -> TimerQueue:
        """The timers named ``name`` (one queue per operator and time domain)."""
        ...

    def end_epoch(self, records: int = 0) -> None:
        """Once per epoch, before its snapshot: the TTL cleanup the backend does then."""
        ...

    @property
    def kinds(self) -> dict[str, str]:
        """Stored kind of every registered state, by name."""
        ...

    def export_group(self, key_group: int, writer: GroupWriter) -> None:
        """Add the entries of ``key_group`` to ``writer`` in canonical form."""
        ...

    def import_group(self, key_group: int, blob: bytes) -> None:
        """Install a canonical blob of ``key_group``."""
        ...

    def num_entries(self) -> int: ...

    def snapshot(
        self,
        subtask: KeyedSubtask,
        storage: Storage,
        tag: str,
        checkpoint: bool,
        *,
        digests: bool = False,
    ) -> KeyedStateSnapshot:
        """Persist what changed since the last snapshot under ``storage``; ``tag`` names this
        attempt's files, ``checkpoint`` says whether the epoch ends with a checkpoint,
        ``digests`` whether handles carry digests (the job signs its checkpoints)."""
        ...

    def dispose(self) -> None:
        """Release what the backend holds outside the Python heap (a RocksDB instance)."""
        ...
