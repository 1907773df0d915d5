"""User function interfaces of PyFlink (``pyflink.datastream.functions``).

Functions that need setup get ``open(runtime_context)`` once per parallel instance before
their first record and ``close()`` at the end of the job. Process functions yield outputs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from lockgate.common.unsupported import unsupported
from lockgate.datastream.state import OperatorStateStore
from lockgate.metrics import MetricGroup
from lockgate.runtime.subtaskhost import broadcast_operator
from lockgate.runtime.subtaskhost.context import (
    FunctionInitializationContext as RuntimeFunctionInitializationContext,
)
from lockgate.runtime.subtaskhost.context import (
    FunctionSnapshotContext as RuntimeFunctionSnapshotContext,
)
from lockgate.runtime.subtaskhost.context import (
    KeyedProcessContext,
    OnTimerContext,
    ProcessContext,
    SubtaskRuntimeContext,
    TimeDomain,
    TimerService,
)
from lockgate.runtime.subtaskhost.window_operator import ProcessWindowContext
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
    BroadcastState,
    ListState,
    MapState,
    ReadOnlyBroadcastState,
    ReducingState,
    ValueState,
)


class RuntimeContext(ABC):
    """What a function knows about where it runs, and its door to keyed state."""

    @abstractmethod
    def get_task_name(self) -> str: ...

    @abstractmethod
    def get_task_name_with_subtasks(self) -> str:
        """The task's name with this subtask's number and the parallelism, "Map (2/4)#0"
        (with the attempt, as Flink's)."""

    @abstractmethod
    def get_number_of_parallel_subtasks(self) -> int: ...

    @abstractmethod
    def get_max_number_of_parallel_subtasks(self) -> int: ...

    @abstractmethod
    def get_index_of_this_subtask(self) -> int: ...

    @abstractmethod
    def get_metrics_group(self) -> MetricGroup:
        """The operator's metric group (``lockgate.metrics``): what a function registers
        there, usually in ``open()``, is reported at the end of every epoch, per subtask
        (see docs/operations/metrics.md)."""

    @abstractmethod
    def get_job_parameter(self, key: str, default_value: str) -> str:
        """The global job parameter ``key`` (``ExecutionConfig.set_global_job_parameters``,
        the setting ``pipeline.global-job-parameters``), else ``default_value``."""

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


class FunctionInitializationContext(ABC):
    @abstractmethod
    def is_restored(self) -> bool:
        """Whether the subtask starts from saved state (a checkpoint, a savepoint, or the
        previous epoch's state, rebuilt on another worker) rather than from nothing."""

    @abstractmethod
    def get_restored_checkpoint_id(self) -> int | None: ...

    @abstractmethod
    def get_operator_state_store(self) -> OperatorStateStore: ...

    @abstractmethod
    def get_keyed_state_store(self) -> RuntimeContext | None:
        """Keyed state, on a keyed stream (None elsewhere)."""


FunctionInitializationContext.register(RuntimeFunctionInitializationContext)


class FunctionSnapshotContext(ABC):
    @abstractmethod
    def get_checkpoint_id(self) -> int: ...

    @abstractmethod
    def get_checkpoint_timestamp(self) -> int: ...


FunctionSnapshotContext.register(RuntimeFunctionSnapshotContext)


class CheckpointedFunction(ABC):
    """Operator state for any function (Flink's CheckpointedFunction, beyond PyFlink): mix
    it into a map, process, sink or other function. ``initialize_state`` runs once per
    subtask before ``open``, with the state restored; ``snapshot_state`` runs at the end of
    every epoch, before the state is saved, to put what the function holds into it."""

    @abstractmethod
    def snapshot_state(self, context: FunctionSnapshotContext) -> None: ...

    @abstractmethod
    def initialize_state(self, context: FunctionInitializationContext) -> None: ...


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


class Partitioner(Function):
    """Chooses the subtask of the next operator for a key (``partition_custom``)."""

    @abstractmethod
    def partition(self, key: Any, num_partitions: int) -> int:
        """The partition (0 .. ``num_partitions`` - 1) of ``key``."""


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
        @abstractmethod
        def time_domain(self) -> TimeDomain: ...

    @abstractmethod
    def process_element(
        self, value: Any, ctx: KeyedProcessFunction.Context
    ) -> Iterable[Any] | None:
        """Yields (or returns) the outputs for ``value``."""

    def on_timer(
        self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext
    ) -> Iterable[Any] | None:
        pass


class CoMapFunction(Function):
    """Maps the records of two connected streams; a None result is dropped (as PyFlink)."""

    @abstractmethod
    def map1(self, value: Any) -> Any: ...

    @abstractmethod
    def map2(self, value: Any) -> Any: ...


class CoFlatMapFunction(Function):
    @abstractmethod
    def flat_map1(self, value: Any) -> Iterable[Any] | None: ...

    @abstractmethod
    def flat_map2(self, value: Any) -> Iterable[Any] | None: ...


class CoProcessFunction(Function):
    """Processes the records of two connected streams (timers need a keyed form)."""

    class Context(ProcessFunction.Context):
        pass

    @abstractmethod
    def process_element1(
        self, value: Any, ctx: CoProcessFunction.Context
    ) -> Iterable[Any] | None: ...

    @abstractmethod
    def process_element2(
        self, value: Any, ctx: CoProcessFunction.Context
    ) -> Iterable[Any] | None: ...


class KeyedCoProcessFunction(Function):
    """Processes two connected keyed streams with shared keyed state and timers."""

    class Context(KeyedProcessFunction.Context):
        pass

    class OnTimerContext(KeyedProcessFunction.OnTimerContext):
        pass

    @abstractmethod
    def process_element1(
        self, value: Any, ctx: KeyedCoProcessFunction.Context
    ) -> Iterable[Any] | None: ...

    @abstractmethod
    def process_element2(
        self, value: Any, ctx: KeyedCoProcessFunction.Context
    ) -> Iterable[Any] | None: ...

    def on_timer(
        self, timestamp: int, ctx: KeyedCoProcessFunction.OnTimerContext
    ) -> Iterable[Any] | None:
        pass


IN = TypeVar("IN")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")
W = TypeVar("W")
W2 = TypeVar("W2")


class WindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """Computes a keyed window's output from all its elements."""

    @abstractmethod
    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any] | None: ...


class AllWindowFunction(Function, Generic[IN, OUT, W]):
    @abstractmethod
    def apply(self, window: Any, inputs: Iterable[Any]) -> Iterable[Any] | None: ...


class ProcessWindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """Computes a keyed window's output from its elements, with a context that knows the
    window, the clocks and per-window and global keyed state."""

    class Context(ABC, Generic[W2]):
        @abstractmethod
        def window(self) -> Any: ...

        @abstractmethod
        def current_processing_time(self) -> int: ...

        @abstractmethod
        def current_watermark(self) -> int: ...

        @abstractmethod
        def window_state(self) -> Any: ...

        @abstractmethod
        def global_state(self) -> Any: ...

    @abstractmethod
    def process(
        self, key: Any, context: ProcessWindowFunction.Context[Any], elements: Iterable[Any]
    ) -> Iterable[Any] | None: ...

    def clear(self, context: ProcessWindowFunction.Context[Any]) -> None:
        """The window's state is being removed (at its cleanup time)."""


class ProcessAllWindowFunction(Function, Generic[IN, OUT, W]):
    class Context(ABC, Generic[W2]):
        @abstractmethod
        def window(self) -> Any: ...

        @abstractmethod
        def window_state(self) -> Any: ...

        @abstractmethod
        def global_state(self) -> Any: ...

    @abstractmethod
    def process(
        self, context: ProcessAllWindowFunction.Context[Any], elements: Iterable[Any]
    ) -> Iterable[Any] | None: ...

    def clear(self, context: ProcessAllWindowFunction.Context[Any]) -> None:
        """The window's state is being removed (at its cleanup time)."""


ProcessFunction.Context.register(ProcessContext)
KeyedProcessFunction.Context.register(KeyedProcessContext)
KeyedProcessFunction.OnTimerContext.register(OnTimerContext)
CoProcessFunction.Context.register(ProcessContext)
KeyedCoProcessFunction.Context.register(KeyedProcessContext)
KeyedCoProcessFunction.OnTimerContext.register(OnTimerContext)
ProcessWindowFunction.Context.register(ProcessWindowContext)
ProcessAllWindowFunction.Context.register(ProcessWindowContext)

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "AsyncFunction",
    "AsyncFunctionDescriptor",
    "AsyncRetryPredicate",
    "AsyncRetryStrategy",
    "BaseBroadcastProcessFunction",
    "BroadcastProcessFunction",
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "KeySelector",
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "MapFunction",
    "NullByteKeySelector",
    "Partitioner",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "SinkFunction",
    "SourceFunction",
    "TimerService",
    "WindowFunction",
]


class BaseBroadcastProcessFunction(Function):
    """The functions of ``connect(broadcast_stream).process(...)``: outputs are yielded (a
    ``(OutputTag, value)`` goes to that side output)."""

    class BaseContext(ABC):
        @abstractmethod
        def timestamp(self) -> int: ...

        @abstractmethod
        def current_processing_time(self) -> int: ...

        @abstractmethod
        def current_watermark(self) -> int: ...

    class Context(BaseContext):
        """The broadcast side's: broadcast state to read and write."""

        @abstractmethod
        def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> BroadcastState: ...

    class ReadOnlyContext(BaseContext):
        """The other side's: broadcast state to read."""

        @abstractmethod
        def get_broadcast_state(
            self, state_descriptor: MapStateDescriptor
        ) -> ReadOnlyBroadcastState: ...


class BroadcastProcessFunction(BaseBroadcastProcessFunction):
    """On a stream that is not keyed, connected to a broadcast stream."""

    class Context(BaseBroadcastProcessFunction.Context):
        pass

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext):
        pass

    @abstractmethod
    def process_element(
        self, value: Any, ctx: BroadcastProcessFunction.ReadOnlyContext
    ) -> Iterable[Any] | None: ...

    @abstractmethod
    def process_broadcast_element(
        self, value: Any, ctx: BroadcastProcessFunction.Context
    ) -> Iterable[Any] | None: ...


class KeyedBroadcastProcessFunction(BaseBroadcastProcessFunction):
    """On a keyed stream connected to a broadcast stream: keyed state and timers on the
    keyed side, and ``apply_to_keyed_state`` on the broadcast side (which PyFlink lacks)."""

    class Context(BaseBroadcastProcessFunction.Context):
        @abstractmethod
        def apply_to_keyed_state(self, state_descriptor: StateDescriptor, function: Any) -> None:
            """Call ``function(key, state)`` for every key of this subtask that has the
            state, with that key current (``function`` may also be an object with
            ``process(key, state)``, as Flink's KeyedStateFunction)."""

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext):
        @abstractmethod
        def timer_service(self) -> TimerService: ...

        @abstractmethod
        def get_current_key(self) -> Any: ...

    class OnTimerContext(ReadOnlyContext):
        @abstractmethod
        def time_domain(self) -> TimeDomain: ...

    @abstractmethod
    def process_element(
        self, value: Any, ctx: KeyedBroadcastProcessFunction.ReadOnlyContext
    ) -> Iterable[Any] | None: ...

    @abstractmethod
    def process_broadcast_element(
        self, value: Any, ctx: KeyedBroadcastProcessFunction.Context
    ) -> Iterable[Any] | None: ...

    def on_timer(
        self, timestamp: int, ctx: KeyedBroadcastProcessFunction.OnTimerContext
    ) -> Iterable[Any] | None:
        pass


BroadcastProcessFunction.Context.register(broadcast_operator.BroadcastContext)
BroadcastProcessFunction.ReadOnlyContext.register(broadcast_operator.ReadOnlyContext)
KeyedBroadcastProcessFunction.Context.register(broadcast_operator.BroadcastContext)
KeyedBroadcastProcessFunction.ReadOnlyContext.register(broadcast_operator.ReadOnlyContext)
KeyedBroadcastProcessFunction.OnTimerContext.register(broadcast_operator.OnTimerContext)


_ASYNC = "a MapFunction or ProcessFunction that makes the call synchronously"
SourceFunction = unsupported(
    "SourceFunction", "env.from_source with a FileSource, or env.from_collection", __name__
)
SinkFunction = unsupported("SinkFunction", "sink_to with a FileSink", __name__)
AsyncFunction = unsupported("AsyncFunction", _ASYNC, __name__)
AsyncFunctionDescriptor = unsupported("AsyncFunctionDescriptor", _ASYNC, __name__)
AsyncRetryPredicate = unsupported("AsyncRetryPredicate", _ASYNC, __name__)
AsyncRetryStrategy = unsupported("AsyncRetryStrategy", _ASYNC, __name__)
