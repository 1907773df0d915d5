"""``HashMapStateBackend``'s keyed state: Python dicts, organized by key group.

Each state keeps one dict per key group of the subtask's range, so a snapshot can write
just the key groups that changed (``HeapKeyedStateBackend.snapshot``) and a restore
(``heap_restore``) can take any subset of key groups.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from typing import Any

from lockgate.common.clock import processing_time_ms
from lockgate.core.fs.storage import Storage
from lockgate.state import snapshot
from lockgate.state.canonical_snapshot import GroupWriter, read_contents, write_contents
from lockgate.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from lockgate.state.interfaces import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    State,
    ValueState,
)
from lockgate.state.key_groups import KeyGroupRange, foreign_key_group
from lockgate.state.keyed_backend import KeyContext, kind_mismatch
from lockgate.state.keyed_subtask import KeyedSubtask
from lockgate.state.manifests import HeapManifest, KeyedStateSnapshot
from lockgate.state.namespaces import NamespaceMerging, namespaced_kind
from lockgate.state.timer_queues import TIMERS_KIND, HeapTimerQueue
from lockgate.state.ttl import (
    TtlSettings,
    TtlState,
    purge_expired,
    purge_expired_entries,
    stored_kind,
    ttl_settings,
    wrap_with_ttl,
)


class _KeyGroupTables(dict[int, dict[Any, Any]]):
    """A state's entries by key group: only the subtask's groups exist, so a key of another
    subtask, or no key at all, fails loudly instead of landing in a wrong group."""

    __slots__ = ("key_groups",)

    def __init__(self, key_groups: KeyGroupRange):
        super().__init__((key_group, {}) for key_group in key_groups)
        self.key_groups = key_groups

    def __missing__(self, key_group: int) -> dict[Any, Any]:
        raise foreign_key_group(key_group, self.key_groups)


class _HeapState:
    __slots__ = ("_ctx", "_dirty", "_groups")

    def __init__(self, groups: dict[int, dict[Any, Any]], ctx: KeyContext, dirty: set[int]):
        self._groups = groups
        self._ctx = ctx
        self._dirty = dirty

    def clear(self) -> None:
        ctx = self._ctx
        if self._groups[ctx.group].pop(ctx.key, _MISSING) is not _MISSING:
            self._dirty.add(ctx.group)


_MISSING = object()


class HeapValueState(_HeapState, ValueState):
    __slots__ = ()

    def value(self) -> Any:
        ctx = self._ctx
        return self._groups[ctx.group].get(ctx.key)

    def update(self, value: Any) -> None:
        ctx = self._ctx
        if value is None:
            self.clear()
            return
        self._groups[ctx.group][ctx.key] = value
        self._dirty.add(ctx.group)


class _HeapMerging(_HeapState, NamespaceMerging):
    __slots__ = ()

    def _raw(self) -> Any:
        ctx = self._ctx
        return self._groups[ctx.group].get(ctx.key)

    def _store(self, value: Any) -> None:
        ctx = self._ctx
        if value is None:
            self._groups[ctx.group].pop(ctx.key, None)
        else:
            self._groups[ctx.group][ctx.key] = value
        self._dirty.add(ctx.group)


class HeapListState(_HeapMerging, ListState):
    __slots__ = ()

    def _merge(self, a: Any, b: Any) -> Any:
        return a + b

    def get(self) -> list[Any]:
        """A copy, as PyFlink hands out: changing it does not change the state."""
        ctx = self._ctx
        return list(self._groups[ctx.group].get(ctx.key, ()))

    def add(self, value: Any) -> None:
        if value is None:
            raise ValueError("cannot add None to a ListState")
        ctx = self._ctx
        group = self._groups[ctx.group]
        values = group.get(ctx.key)
        if values is None:
            group[ctx.key] = [value]
        else:
            values.append(value)
        self._dirty.add(ctx.group)

    def add_all(self, values: list[Any]) -> None:
        for value in values:
            self.add(value)

    def update(self, values: list[Any]) -> None:
        ctx = self._ctx
        if values:
            self._groups[ctx.group][ctx.key] = list(values)
            self._dirty.add(ctx.group)
        else:
            self.clear()


class HeapMapState(_HeapState, MapState):
    __slots__ = ()
    _groups: dict[int, dict[Any, dict[Any, Any]]]  # key group -> key -> the key's map

    def _map(self) -> dict[Any, Any]:
        ctx = self._ctx
        return self._groups[ctx.group].get(ctx.key, _EMPTY_MAP)

    def _writable_map(self) -> dict[Any, Any]:
        ctx = self._ctx
        group = self._groups[ctx.group]
        mapping = group.get(ctx.key)
        if mapping is None:
            mapping = group[ctx.key] = {}
        self._dirty.add(ctx.group)
        return mapping

    def get(self, key: Any) -> Any:
        return self._map().get(key)

    def put(self, key: Any, value: Any) -> None:
        self._writable_map()[key] = value

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        if dict_value:
            self._writable_map().update(dict_value)

    def remove(self, key: Any) -> None:
        ctx = self._ctx
        mapping = self._groups[ctx.group].get(ctx.key)
        if mapping is not None and mapping.pop(key, _MISSING) is not _MISSING:
            if not mapping:
                del self._groups[ctx.group][ctx.key]
            self._dirty.add(ctx.group)

    def contains(self, key: Any) -> bool:
        return key in self._map()

    def items(self) -> Iterable[tuple[Any, Any]]:
        return list(self._map().items())

    def keys(self) -> Iterable[Any]:
        return list(self._map().keys())

    def values(self) -> Iterable[Any]:
        return list(self._map().values())

    def is_empty(self) -> bool:
        return not self._map()


_EMPTY_MAP: dict[Any, Any] = {}


class HeapReducingState(_HeapMerging, ReducingState):
    __slots__ = ("_reduce",)

    def _merge(self, a: Any, b: Any) -> Any:
        return self._reduce(a, b)

    def __init__(
        self,
        groups: dict[int, dict[Any, Any]],
        ctx: KeyContext,
        dirty: set[int],
        reduce: Callable[[Any, Any], Any],
    ) -> None:
        super().__init__(groups, ctx, dirty)
        self._reduce = reduce

    def get(self) -> Any:
        ctx = self._ctx
        return self._groups[ctx.group].get(ctx.key)

    def add(self, value: Any) -> None:
        ctx = self._ctx
        group = self._groups[ctx.group]
        current = group.get(ctx.key, _MISSING)
        group[ctx.key] = value if current is _MISSING else self._reduce(current, value)
        self._dirty.add(ctx.group)


class HeapAggregatingState(_HeapMerging, AggregatingState):
    __slots__ = ("_agg",)

    def _merge(self, a: Any, b: Any) -> Any:
        return self._agg.merge(a, b)

    def __init__(
        self, groups: dict[int, dict[Any, Any]], ctx: KeyContext, dirty: set[int], agg: Any
    ) -> None:
        super().__init__(groups, ctx, dirty)
        self._agg = agg

    def get(self) -> Any:
        ctx = self._ctx
        accumulator = self._groups[ctx.group].get(ctx.key, _MISSING)
        return None if accumulator is _MISSING else self._agg.get_result(accumulator)

    def add(self, value: Any) -> None:
        if value is None:  # as PyFlink: adding None clears the state
            self.clear()
            return
        ctx = self._ctx
        group = self._groups[ctx.group]
        accumulator = group.get(ctx.key, _MISSING)
        if accumulator is _MISSING:
            accumulator = self._agg.create_accumulator()
        group[ctx.key] = self._agg.add(value, accumulator)
        self._dirty.add(ctx.group)


def _create_state(
    descriptor: StateDescriptor, groups: dict[int, dict[Any, Any]], ctx: KeyContext, dirty: set[int]
) -> State:
    if isinstance(descriptor, ValueStateDescriptor):
        return HeapValueState(groups, ctx, dirty)
    if isinstance(descriptor, ListStateDescriptor):
        return HeapListState(groups, ctx, dirty)
    if isinstance(descriptor, MapStateDescriptor):
        return HeapMapState(groups, ctx, dirty)
    if isinstance(descriptor, ReducingStateDescriptor):
        return HeapReducingState(groups, ctx, dirty, descriptor.reduce)
    if isinstance(descriptor, AggregatingStateDescriptor):
        return HeapAggregatingState(groups, ctx, dirty, descriptor.agg_function)
    raise TypeError(f"unsupported state descriptor {descriptor!r}")


def _without_ttl(descriptor: StateDescriptor) -> StateDescriptor:
    plain = copy.copy(descriptor)
    plain.ttl_config = None
    return plain


class HeapKeyedStateBackend:
    """Keyed state of one subtask of one operator, held in memory."""

    def __init__(
        self,
        key_groups: KeyGroupRange,
        max_parallelism: int,
        *,
        ttl_clock: Callable[[], int] | None = None,
    ):
        self.key_groups = key_groups
        self.max_parallelism = max_parallelism
        self.ctx = KeyContext()
        self.ns_ctx = KeyContext()  # of namespaced states: its key is (key, namespace)
        self.dirty: set[int] = set()  # key groups changed since the last snapshot
        # state name -> key group -> key -> value; only the subtask's key groups exist, so a
        # key of another subtask fails loudly instead of landing in a wrong group
        self._tables: dict[str, dict[int, dict[Any, Any]]] = {}
        self._kinds: dict[str, str] = {}
        self._states: dict[str, State] = {}
        # State TTL (see lockgate.state.ttl): the TTL states by name, those cleaned up in
        # snapshots, and the incremental cleanup's cursor per state: [key group index, offset]
        self.ttl_clock: Callable[[], int] = ttl_clock or processing_time_ms
        self._ttl_states: dict[str, TtlState] = {}
        self._snapshot_ttl: dict[str, TtlSettings] = {}
        self._ttl_cursors: dict[str, list[int]] = {}

    def set_current_key(self, key_group: int, key: Any) -> None:
        ctx = self.ctx
        ctx.key = key
        ctx.group = key_group

    def get_current_key(self) -> Any:
        return self.ctx.key

    def get_state(self, descriptor: StateDescriptor, namespaced: bool = False) -> State:
        """The state ``descriptor`` names, per key, or per key and namespace (read from
        ``ns_ctx``)."""
        if descriptor.ttl_config is not None:
            return self._get_ttl_state(descriptor, namespaced)
        name = descriptor.name
        kind = namespaced_kind(descriptor.kind) if namespaced else descriptor.kind
        known_kind = self._kinds.get(name)
        if known_kind is not None and known_kind != kind:
            raise kind_mismatch(name, known_kind, kind)
        state = self._states.get(name)
        if state is None:
            groups = self._tables.setdefault(name, self._empty_groups())
            self._kinds[name] = kind
            ctx = self.ns_ctx if namespaced else self.ctx
            state = self._states[name] = _create_state(descriptor, groups, ctx, self.dirty)
        return state

    def keys(self, name: str, key_group: int) -> Iterator[Any]:
        """The keys of ``key_group`` that have state ``name`` (one that is not namespaced)."""
        groups = self._tables.get(name)
        return iter(groups[key_group]) if groups is not None else iter(())

    def timer_queue(self, name: str) -> HeapTimerQueue:
        """The timers named ``name`` (one queue per operator and time domain)."""
        known_kind = self._kinds.get(name)
        if known_kind is not None and known_kind != TIMERS_KIND:
            raise kind_mismatch(name, known_kind, TIMERS_KIND)
        self._kinds[name] = TIMERS_KIND
        groups = self._tables.setdefault(name, self._empty_groups())
        return HeapTimerQueue(groups, self.dirty)

    # State TTL -----------------------------------------------------------------------------

    def _get_ttl_state(self, descriptor: StateDescriptor, namespaced: bool) -> State:
        """A state with TTL: a wrapper over a raw heap state of the same name, registered
        under its stored kind (``"ttl-value"``, ...); without an enabled TTL, a plain one."""
        settings = ttl_settings(descriptor)
        if settings is None:  # TTL config with UpdateType.Disabled
            descriptor = _without_ttl(descriptor)
            return self.get_state(descriptor, namespaced)
        name = descriptor.name
        kind = stored_kind(descriptor)
        if namespaced:
            kind = namespaced_kind(kind)
        known_kind = self._kinds.get(name)
        if known_kind is not None and known_kind != kind:
            raise kind_mismatch(name, known_kind, kind)
        state = self._states.get(name)
        if state is None:
            groups = self._tables.setdefault(name, self._empty_groups())
            self._kinds[name] = kind
            ctx = self.ns_ctx if namespaced else self.ctx
            state = wrap_with_ttl(
                descriptor,
                lambda raw: _create_state(raw, groups, ctx, self.dirty),
                self.ttl_clock,
            )
            self._states[name] = self._ttl_states[name] = state
            if settings.full_snapshot:
                self._snapshot_ttl[name] = settings
        return state

    def cleanup_expired(
        self, name: str, max_entries: int | None = None, now_ms: int | None = None
    ) -> int:
        """Check up to ``max_entries`` keys of TTL state ``name`` (all of them when ``None``)
        for expired values, elements or entries, and remove those, from where the last call
        stopped (a cursor that walks all key groups round and round, tolerant of concurrent
        changes: an entry may be skipped or checked twice in a round). Key groups that change
        are marked dirty. Returns the number of keys changed or removed."""
        settings = self._ttl_states[name].settings
        groups = self._tables[name]
        order = list(self.key_groups)
        total = sum(len(group) for group in groups.values())
        budget = total if max_entries is None else min(max_entries, total)
        if budget <= 0:
            return 0
        now = self.ttl_clock() if now_ms is None else now_ms
        kind, ttl_ms, dirty = settings.kind, settings.ttl_ms, self.dirty
        cursor = self._ttl_cursors.setdefault(name, [0, 0])
        index, offset = cursor
        if index >= len(order):
            index, offset = 0, 0
        scanned = changed = groups_passed = 0
        while scanned < budget and groups_passed <= len(order):
            key_group = order[index]
            group = groups[key_group]
            chunk = list(islice(group.items(), offset, offset + budget - scanned))
            removed = 0
            for key, stored in chunk:
                kept = purge_expired(kind, stored, ttl_ms, now)
                if kept is stored:
                    continue
                if kept is None:
                    del group[key]
                    removed += 1
                else:
                    group[key] = kept
                changed += 1
                dirty.add(key_group)
            scanned += len(chunk)
            offset += len(chunk) - removed
            if offset >= len(group):
                index = (index + 1) % len(order)
                offset = 0
                groups_passed += 1
        cursor[0], cursor[1] = index, offset
        return changed

    def end_epoch(self, records: int = 0) -> None:
        """Incremental TTL cleanup, once per epoch before its snapshot: each TTL state that
        has it (by default, as Flink's heap backend: 5 keys per access) checks
        ``cleanup_size`` keys per access in this epoch, plus per record (``records``) when
        configured with ``run_cleanup_for_every_record``."""
        if not self._ttl_states:
            return
        now = self.ttl_clock()
        for name, state in self._ttl_states.items():
            settings = state.settings
            touches = state.accesses
            state.accesses = 0
            if settings.cleanup_size is None:
                continue
            if settings.cleanup_every_record:
                touches += records
            if touches:
                self.cleanup_expired(name, settings.cleanup_size * touches, now)

    # Snapshots ---------------------------------------------------------------------------

    @property
    def kinds(self) -> dict[str, str]:
        return dict(self._kinds)

    def _empty_groups(self) -> dict[int, dict[Any, Any]]:
        return _KeyGroupTables(self.key_groups)

    def group_contents(self, key_group: int) -> dict[str, dict[Any, Any]]:
        """Every state's entries in one key group (empty states left out). TTL states with
        ``cleanup_full_snapshot()`` leave their expired parts out (memory keeps them)."""
        contents = {
            name: groups[key_group] for name, groups in self._tables.items() if groups[key_group]
        }
        if self._snapshot_ttl:
            now = self.ttl_clock()
            for name, settings in self._snapshot_ttl.items():
                entries = contents.get(name)
                if entries:
                    kept = purge_expired_entries(settings.kind, entries, settings.ttl_ms, now)
                    if kept:
                        contents[name] = kept
                    else:
                        del contents[name]
        return contents

    def install_group(
        self, key_group: int, contents: dict[str, dict[Any, Any]], kinds: Mapping[str, str]
    ) -> None:
        if key_group not in self.key_groups:
            raise foreign_key_group(key_group, self.key_groups)
        for name, entries in contents.items():
            kind = kinds[name]
            if self._kinds.setdefault(name, kind) != kind:
                raise ValueError(f"state {name!r} restored as {kind} but registered otherwise")
            groups = self._tables.get(name)
            if groups is None:
                groups = self._tables[name] = self._empty_groups()
            groups[key_group] = entries

    def export_group(self, key_group: int, writer: GroupWriter) -> None:
        """Add the entries of ``key_group`` to ``writer`` in canonical form."""
        write_contents(writer, self._kinds, self.group_contents(key_group))

    def import_group(self, key_group: int, blob: bytes) -> None:
        """Install a canonical blob of ``key_group``."""
        kinds, contents = read_contents(blob)
        self.install_group(key_group, contents, kinds)

    def take_dirty_groups(self) -> list[int]:
        """Key groups changed since the last call."""
        changed = sorted(self.dirty)
        self.dirty.clear()
        return changed

    def num_entries(self) -> int:
        return sum(len(group) for groups in self._tables.values() for group in groups.values())

    def snapshot(
        self,
        subtask: KeyedSubtask,
        storage: Storage,
        tag: str,
        checkpoint: bool,
        *,
        digests: bool = False,
    ) -> KeyedStateSnapshot:
        """Write the key groups that changed since the last snapshot into one file
        (``state.snapshot`` format) under ``storage``, named by ``tag``; a restore reads the
        key groups its manifest lists (``heap_restore``). Checkpoint or not, the same."""
        changed = self.take_dirty_groups()
        groups: dict[int, snapshot.GroupHandle] = {}
        written = 0
        if changed:
            data, positions = snapshot.encode(
                self.kinds, {kg: self.group_contents(kg) for kg in changed}, digests
            )
            relative = f"{subtask.uid}/{subtask.index}/{tag}.lgks"
            storage.write_bytes(relative, data)
            url = storage.url_of(relative)
            groups = {kg: snapshot.GroupHandle(url, *positions[kg]) for kg in changed}
            written = len(data)
        return KeyedStateSnapshot(
            HeapManifest(dict(self.kinds), groups), written, self.num_entries()
        )

    def dispose(self) -> None:
        """Nothing to release: the state is Python objects."""
