"""User function interfaces of PyFlink (``pyflink.datastream.functions``).

Functions that need setup get ``open(runtime_context)`` once per parallel instance before
their first record and ``close()`` at the end of the job. Process functions yield outputs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from lockgate.runtime.taskexecutor.context import (
    KeyedProcessContext,
    ProcessContext,
    SubtaskRuntimeContext,
    TimerService,
)
from lockgate.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from lockgate.state.interfaces import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    ValueState,
)


class RuntimeContext(ABC):
    """What a function knows about where it runs, and its door to keyed state."""

    @abstractmethod
    def get_task_name(self) -> str: ...

    @abstractmethod
    def get_number_of_parallel_subtasks(self) -> int: ...

    @abstractmethod
    def get_max_number_of_parallel_subtasks(self) -> int: ...

    @abstractmethod
    def get_index_of_this_subtask(self) -> int: ...

    @abstractmethod
    def get_attempt_number(self) -> int: ...

    @abstractmethod
    def get_state(self, state_descriptor: ValueStateDescriptor) -> ValueState: ...

    @abstractmethod
    def get_list_state(self, state_descriptor: ListStateDescriptor) -> ListState: ...

    @abstractmethod
    def get_map_state(self, state_descriptor: MapStateDescriptor) -> MapState: ...

    @abstractmethod
    def get_reducing_state(self, state_descriptor: ReducingStateDescriptor) -> ReducingState: ...

    @abstractmethod
    def get_aggregating_state(
        self, state_descriptor: AggregatingStateDescriptor
    ) -> AggregatingState: ...


RuntimeContext.register(SubtaskRuntimeContext)


class Function(ABC):
    def open(self, runtime_context: RuntimeContext) -> None:
        pass

    def close(self) -> None:
        pass


class MapFunction(Function):
    @abstractmethod
    def map(self, value: Any) -> Any: ...


class FlatMapFunction(Function):
    @abstractmethod
    def flat_map(self, value: Any) -> Any: ...


class FilterFunction(Function):
    @abstractmethod
    def filter(self, value: Any) -> bool: ...


class KeySelector(Function):
    @abstractmethod
    def get_key(self, value: Any) -> Any: ...


class NullByteKeySelector(KeySelector):
    def get_key(self, value: Any) -> Any:
        return 0


class ReduceFunction(Function):
    @abstractmethod
    def reduce(self, value1: Any, value2: Any) -> Any: ...


class AggregateFunction(Function):
    @abstractmethod
    def create_accumulator(self) -> Any: ...

    @abstractmethod
    def add(self, value: Any, accumulator: Any) -> Any: ...

    @abstractmethod
    def get_result(self, accumulator: Any) -> Any: ...

    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement merge()")


class ProcessFunction(Function):
    class Context(ABC):
        @abstractmethod
        def timer_service(self) -> TimerService: ...

        @abstractmethod
        def timestamp(self) -> int: ...

    @abstractmethod
    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Iterable[Any] | None:
        """Yields (or returns) the outputs for ``value``."""


class KeyedProcessFunction(Function):
    class Context(ABC):
        @abstractmethod
        def get_current_key(self) -> Any: ...

        @abstractmethod
        def timer_service(self) -> TimerService: ...

        @abstractmethod
        def timestamp(self) -> int: ...

    class OnTimerContext(Context):
        pass

    @abstractmethod
    def process_element(
        self, value: Any, ctx: KeyedProcessFunction.Context
    ) -> Iterable[Any] | None:
        """Yields (or returns) the outputs for ``value``."""

    def on_timer(
        self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext
    ) -> Iterable[Any] | None:
        pass


ProcessFunction.Context.register(ProcessContext)
KeyedProcessFunction.Context.register(KeyedProcessContext)

__all__ = [
    "AggregateFunction",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "KeySelector",
    "KeyedProcessFunction",
    "MapFunction",
    "NullByteKeySelector",
    "ProcessFunction",
    "ReduceFunction",
    "RuntimeContext",
]
