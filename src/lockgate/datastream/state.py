"""State descriptors and interfaces at PyFlink's path (``pyflink.datastream.state``)."""

from abc import ABC, abstractmethod

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
    AppendingState,
    BroadcastState,
    ListState,
    MapState,
    MergingState,
    ReadOnlyBroadcastState,
    ReducingState,
    State,
    ValueState,
)
from lockgate.state.operator_state_backend import OperatorStateBackend
from lockgate.state.ttl_config import StateTtlConfig


class OperatorStateStore(ABC):
    """A subtask's operator state (Flink's OperatorStateStore; PyFlink 2.3 has only its
    broadcast state). On a restore at another parallelism, list state is spread over the
    subtasks round-robin, union list state goes whole to every subtask, and broadcast
    state is copied to every subtask."""

    @abstractmethod
    def get_list_state(self, state_descriptor: ListStateDescriptor) -> ListState: ...

    @abstractmethod
    def get_union_list_state(self, state_descriptor: ListStateDescriptor) -> ListState: ...

    @abstractmethod
    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> BroadcastState: ...


OperatorStateStore.register(OperatorStateBackend)

__all__ = [
    "AggregatingState",
    "AggregatingStateDescriptor",
    "AppendingState",
    "BroadcastState",
    "ListState",
    "ListStateDescriptor",
    "MapState",
    "MapStateDescriptor",
    "MergingState",
    "OperatorStateStore",
    "ReadOnlyBroadcastState",
    "ReducingState",
    "ReducingStateDescriptor",
    "State",
    "StateDescriptor",
    "StateTtlConfig",
    "ValueState",
    "ValueStateDescriptor",
]
