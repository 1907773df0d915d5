"""``HashMapStateBackend``'s keyed state: Python dicts, organized by key group.

Each state keeps one dict per key group of the subtask's range, so a snapshot can write
just the key groups that changed and a restore can take any subset of key groups.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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
    ValueState,
)
from lockgate.state.key_groups import KeyGroupRange


class KeyContext:
    """The key being processed; states read it on every access."""

    __slots__ = ("group", "key")

    def __init__(self) -> None:
        self.key: Any = None
        self.group = -1  # key group of the key


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


class HeapListState(_HeapState, ListState):
    __slots__ = ()

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


class HeapReducingState(_HeapState, ReducingState):
    __slots__ = ("_reduce",)

    def __init__(self, groups, ctx, dirty, reduce):
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


class HeapAggregatingState(_HeapState, AggregatingState):
    __slots__ = ("_agg",)

    def __init__(self, groups, ctx, dirty, agg):
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
):
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


class HeapKeyedStateBackend:
    """Keyed state of one subtask of one operator, held in memory."""

    def __init__(self, key_groups: KeyGroupRange, max_parallelism: int):
        self.key_groups = key_groups
        self.max_parallelism = max_parallelism
        self.ctx = KeyContext()
        self.dirty: set[int] = set()  # key groups changed since the last snapshot
        # state name -> key group -> key -> value; only the subtask's key groups exist, so a
        # key of another subtask fails loudly instead of landing in a wrong group
        self._tables: dict[str, dict[int, dict[Any, Any]]] = {}
        self._kinds: dict[str, str] = {}
        self._states: dict[str, Any] = {}

    def set_current_key(self, key_group: int, key: Any) -> None:
        ctx = self.ctx
        ctx.key = key
        ctx.group = key_group

    def get_current_key(self) -> Any:
        return self.ctx.key

    def get_state(self, descriptor: StateDescriptor):
        name = descriptor.name
        known_kind = self._kinds.get(name)
        if known_kind is not None and known_kind != descriptor.kind:
            raise ValueError(
                f"state {name!r} was registered as {known_kind} state and cannot be used as "
                f"{descriptor.kind} state"
            )
        state = self._states.get(name)
        if state is None:
            groups = self._tables.setdefault(name, self._empty_groups())
            self._kinds[name] = descriptor.kind
            state = self._states[name] = _create_state(descriptor, groups, self.ctx, self.dirty)
        return state

    # Snapshots ---------------------------------------------------------------------------

    @property
    def kinds(self) -> dict[str, str]:
        return dict(self._kinds)

    def _empty_groups(self) -> dict[int, dict[Any, Any]]:
        return {key_group: {} for key_group in self.key_groups}

    def group_contents(self, key_group: int) -> dict[str, dict[Any, Any]]:
        """Every state's entries in one key group (empty states left out)."""
        return {
            name: groups[key_group] for name, groups in self._tables.items() if groups[key_group]
        }

    def install_group(self, key_group: int, contents: dict[str, dict[Any, Any]], kinds) -> None:
        if key_group not in self.key_groups:
            raise ValueError(
                f"key group {key_group} is outside this subtask's range "
                f"{self.key_groups.start}-{self.key_groups.end}"
            )
        for name, entries in contents.items():
            kind = kinds[name]
            if self._kinds.setdefault(name, kind) != kind:
                raise ValueError(f"state {name!r} restored as {kind} but registered otherwise")
            groups = self._tables.get(name)
            if groups is None:
                groups = self._tables[name] = self._empty_groups()
            groups[key_group] = entries

    def take_dirty_groups(self) -> list[int]:
        """Key groups changed since the last call."""
        changed = sorted(self.dirty)
        self.dirty.clear()
        return changed

    def num_entries(self) -> int:
        return sum(len(group) for groups in self._tables.values() for group in groups.values())
