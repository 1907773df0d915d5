"""Keyed state descriptors and interfaces at PyFlink's path (``pyflink.datastream.state``)."""

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
    ListState,
    MapState,
    MergingState,
    ReducingState,
    State,
    ValueState,
)
from lockgate.state.ttl import StateTtlConfig

__all__ = [
    "AggregatingState",
    "AggregatingStateDescriptor",
    "AppendingState",
    "ListState",
    "ListStateDescriptor",
    "MapState",
    "MapStateDescriptor",
    "MergingState",
    "ReducingState",
    "ReducingStateDescriptor",
    "State",
    "StateDescriptor",
    "StateTtlConfig",
    "ValueState",
    "ValueStateDescriptor",
]
