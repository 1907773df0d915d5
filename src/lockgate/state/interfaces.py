"""The keyed state interfaces of PyFlink (``pyflink.datastream.state``).

Every method acts on the value of the key the operator is processing right now.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from typing import Any


class State(ABC):
    @abstractmethod
    def clear(self) -> None: ...


class ValueState(State):
    @abstractmethod
    def value(self) -> Any: ...

    @abstractmethod
    def update(self, value: Any) -> None: ...


class AppendingState(State):
    @abstractmethod
    def get(self) -> Any: ...

    @abstractmethod
    def add(self, value: Any) -> None: ...


class MergingState(AppendingState):
    pass


class ListState(MergingState):
    @abstractmethod
    def update(self, values: list[Any]) -> None: ...

    @abstractmethod
    def add_all(self, values: list[Any]) -> None: ...

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get())


class ReducingState(MergingState):
    pass


class AggregatingState(MergingState):
    pass


class _MapReads(ABC):
    """The reading half of a map-shaped state (map state, broadcast state)."""

    @abstractmethod
    def get(self, key: Any) -> Any: ...

    @abstractmethod
    def contains(self, key: Any) -> bool: ...

    @abstractmethod
    def items(self) -> Iterable[tuple[Any, Any]]: ...

    @abstractmethod
    def keys(self) -> Iterable[Any]: ...

    @abstractmethod
    def values(self) -> Iterable[Any]: ...

    @abstractmethod
    def is_empty(self) -> bool: ...

    def __getitem__(self, key: Any) -> Any:
        return self.get(key)

    def __contains__(self, key: Any) -> bool:
        return self.contains(key)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())


class _MapWrites(ABC):
    """The writing half of a map-shaped state."""

    @abstractmethod
    def put(self, key: Any, value: Any) -> None: ...

    @abstractmethod
    def put_all(self, dict_value: dict[Any, Any]) -> None: ...

    @abstractmethod
    def remove(self, key: Any) -> None: ...

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)

    def __delitem__(self, key: Any) -> None:
        self.remove(key)


class MapState(_MapReads, _MapWrites, State):
    pass


class ReadOnlyBroadcastState(_MapReads, State):
    """Broadcast state as the non-broadcast side of a broadcast function sees it."""


class BroadcastState(_MapWrites, ReadOnlyBroadcastState):
    """Broadcast state as the broadcast side (or a ``CheckpointedFunction``) sees it: the
    same contents on every subtask, as long as every subtask makes the same changes."""
