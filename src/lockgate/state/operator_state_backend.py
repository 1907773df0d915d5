"""The operator state of one operator subtask (Flink's DefaultOperatorStateBackend): named
lists and broadcast maps, restored from the parts a restore assigned the subtask, and
written into one file per epoch (``operator_state_handle``)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from lockgate.core.fs.storage import Storage
from lockgate.state import operator_state_handle as handles
from lockgate.state.descriptors import ListStateDescriptor, MapStateDescriptor, StateDescriptor
from lockgate.state.interfaces import BroadcastState, ListState, ReadOnlyBroadcastState
from lockgate.state.operator_state_handle import (
    BROADCAST,
    KINDS,
    SPLIT_DISTRIBUTE,
    UNION,
    OperatorStateHandle,
    OperatorStatePart,
)


class OperatorListState(ListState):
    """A subtask's share of a list (or union list) state."""

    __slots__ = ("elements",)

    def __init__(self, elements: list[Any]):
        self.elements = elements

    def get(self) -> list[Any]:
        return list(self.elements)

    def add(self, value: Any) -> None:
        if value is None:
            raise ValueError("operator list state does not take None")
        self.elements.append(value)

    def add_all(self, values: list[Any]) -> None:
        for value in values:
            self.add(value)

    def update(self, values: list[Any]) -> None:
        self.elements.clear()
        self.add_all(values)

    def clear(self) -> None:
        self.elements.clear()


class OperatorBroadcastState(BroadcastState):
    __slots__ = ("entries",)

    def __init__(self, entries: dict[Any, Any]):
        self.entries = entries

    def get(self, key: Any) -> Any:
        return self.entries.get(key)

    def contains(self, key: Any) -> bool:
        return key in self.entries

    def items(self) -> Iterable[tuple[Any, Any]]:
        return list(self.entries.items())

    def keys(self) -> Iterable[Any]:
        return list(self.entries)

    def values(self) -> Iterable[Any]:
        return list(self.entries.values())

    def is_empty(self) -> bool:
        return not self.entries

    def put(self, key: Any, value: Any) -> None:
        self.entries[key] = value

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        self.entries.update(dict_value)

    def remove(self, key: Any) -> None:
        self.entries.pop(key, None)

    def clear(self) -> None:
        self.entries.clear()


class ReadOnlyView(ReadOnlyBroadcastState):
    """Broadcast state on the non-broadcast side: only the broadcast side changes it, so
    that every subtask keeps the same contents."""

    __slots__ = ("_name", "_state")

    def __init__(self, state: OperatorBroadcastState, name: str):
        self._state = state
        self._name = name

    def get(self, key: Any) -> Any:
        return self._state.get(key)

    def contains(self, key: Any) -> bool:
        return self._state.contains(key)

    def items(self) -> Iterable[tuple[Any, Any]]:
        return self._state.items()

    def keys(self) -> Iterable[Any]:
        return self._state.keys()

    def values(self) -> Iterable[Any]:
        return self._state.values()

    def is_empty(self) -> bool:
        return self._state.is_empty()

    def clear(self) -> None:
        raise TypeError(
            f"broadcast state {self._name!r} is read-only here: only "
            "process_broadcast_element changes it"
        )


NO_TTL = "time-to-live is for keyed state: operator state has none (as in Flink)"


class OperatorStateBackend:
    """Operator state by name; ``where`` names the operator subtask in errors."""

    def __init__(self, where: str, parts: list[OperatorStatePart]):
        self.where = where
        self.lists: dict[str, tuple[str, OperatorListState]] = {}
        self.broadcasts: dict[str, OperatorBroadcastState] = {}
        # the digest and handle of the last snapshot of the live state
        self.last: tuple[bytes, OperatorStateHandle] | None = None
        restored: dict[str, tuple[str, list[Any]]] = {}
        for part in parts:
            for name, mode, elements in handles.read_part(part):
                known = restored.setdefault(name, (mode, []))
                if known[0] != mode:
                    raise ValueError(f"{where}: state {name!r} was restored in two modes")
                known[1].extend(elements)
        for name, (mode, elements) in restored.items():
            if mode == BROADCAST:
                self.broadcasts[name] = OperatorBroadcastState(dict(elements))
            else:
                self.lists[name] = (mode, OperatorListState(elements))

    def get_list_state(self, state_descriptor: ListStateDescriptor) -> OperatorListState:
        """Elements that are spread over the subtasks on a rescale."""
        return self._list(state_descriptor, SPLIT_DISTRIBUTE)

    def get_union_list_state(self, state_descriptor: ListStateDescriptor) -> OperatorListState:
        """Elements of which every subtask gets all, of every subtask, on a restore."""
        return self._list(state_descriptor, UNION)

    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> OperatorBroadcastState:
        """A map every subtask holds the same copy of."""
        name = self._name(state_descriptor, MapStateDescriptor, "get_broadcast_state")
        if name in self.lists:
            raise ValueError(
                f"{self.where}: state {name!r} is {KINDS[self.lists[name][0]]} state, not "
                "broadcast state"
            )
        return self.broadcasts.setdefault(name, OperatorBroadcastState({}))

    def _list(self, descriptor: ListStateDescriptor, mode: str) -> OperatorListState:
        method = "get_list_state" if mode == SPLIT_DISTRIBUTE else "get_union_list_state"
        name = self._name(descriptor, ListStateDescriptor, method)
        if name in self.broadcasts:
            raise ValueError(f"{self.where}: state {name!r} is broadcast state, not list state")
        known = self.lists.get(name)
        if known is None:
            known = self.lists[name] = (mode, OperatorListState([]))
        elif known[0] != mode:
            raise ValueError(
                f"{self.where}: state {name!r} is {KINDS[known[0]]} state, not {KINDS[mode]} "
                f"state ({method} asked for it)"
            )
        return known[1]

    def _name(self, descriptor: Any, kind: type[StateDescriptor], method: str) -> str:
        if not isinstance(descriptor, kind):
            raise TypeError(f"{self.where}: {method} needs a {kind.__name__}, got {descriptor!r}")
        name: str = descriptor.name
        if descriptor.ttl_config is not None:
            raise ValueError(f"{self.where}: state {name!r}: {NO_TTL}")
        return name

    def snapshot(
        self, storage: Storage, relative: str, reuse: bool, *, digests: bool = False
    ) -> OperatorStateHandle | None:
        """Write every state to ``relative`` under ``storage`` and return its handle (by
        URL, with the file's digest when ``digests``); None when there is no state.
        ``reuse``: when nothing changed since the last snapshot, name that one's file again
        instead."""
        if not self.lists and not self.broadcasts:
            return None
        states: dict[str, tuple[str, list[Any]]] = {
            name: (mode, state.elements) for name, (mode, state) in self.lists.items()
        }
        for name, broadcast in self.broadcasts.items():
            states[name] = (BROADCAST, list(broadcast.entries.items()))
        data, metas = handles.encode(states)
        digest = hashlib.blake2b(data, digest_size=32).digest()
        if reuse and self.last is not None and self.last[0] == digest:
            return self.last[1]
        storage.write_bytes(relative, data)
        handle = OperatorStateHandle.of(storage.url_of(relative), data, metas, digests)
        if reuse:
            self.last = (digest, handle)
        return handle
