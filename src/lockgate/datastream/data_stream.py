"""``DataStream`` and ``KeyedStream``: PyFlink's fluent API, recording transformations."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn, overload

from lockgate.common.execution_config import ExecutionConfig
from lockgate.common.output_tag import OutputTag
from lockgate.common.time import Duration
from lockgate.common.type_conversion import declared_type
from lockgate.common.typeinfo import TupleTypeInfo, TypeInformation, Types
from lockgate.common.types import Row
from lockgate.common.unsupported import not_supported
from lockgate.common.watermark_strategy import WatermarkStrategy, check_strategy
from lockgate.datastream.functions import (
    AggregateFunction,
    AllWindowFunction,
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    NullByteKeySelector,
    Partitioner,
    ProcessAllWindowFunction,
    ProcessFunction,
    ProcessWindowFunction,
    WindowFunction,
)
from lockgate.datastream.window import (
    CountSlidingWindowAssigner,
    CountTumblingWindowAssigner,
    EventTimeTrigger,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
)
from lockgate.graph.operator_spec import OperatorKind, OperatorSpec
from lockgate.graph.transformations import (
    BROADCAST,
    FORWARD,
    REBALANCE,
    RESCALE,
    SHUFFLE,
    ChainingStrategy,
    Partitioning,
    PartitioningKind,
    Transformation,
    TransformationKind,
    stream_type,
)
from lockgate.runtime.subtaskhost.broadcast_operator import BroadcastProcessOperator
from lockgate.runtime.subtaskhost.co_operators import CoOperator
from lockgate.runtime.subtaskhost.operators import resolve_callable
from lockgate.runtime.subtaskhost.timestamps_and_watermarks import TimestampsAndWatermarksOperator
from lockgate.runtime.subtaskhost.window_operator import WindowOperator, WindowOperatorSpec
from lockgate.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
)
from lockgate.state.namespaces import namespaced_kind

if TYPE_CHECKING:
    from lockgate.datastream.stream_execution_environment import StreamExecutionEnvironment


# The alternatives named by the methods lockgate does not support yet
UID_HASH_ALTERNATIVE = "uid(), which names the operator's state in checkpoints and savepoints"
SINK_ALTERNATIVE = "sink_to() with a FileSink (or DiscardingSink), or print()"
BUFFER_TIMEOUT_ALTERNATIVE = (
    "lockgate.epoch.target-duration: records cross tasks in batches within each epoch, "
    "and every epoch ends with its channels flushed"
)
SLOTS_ALTERNATIVE = (
    "Spark's settings for where tasks run (spark.executor.cores, spark.task.cpus): "
    "lockgate's subtasks are Spark tasks, there are no slots to share"
)


def _check_function(function: Any, method: str, kind: str) -> Any:
    if callable(getattr(function, method, None)) or callable(function):
        return function
    raise TypeError(f"the input must be a {kind} or a callable function, got {function!r}")


class DataStream:
    """A stream of records produced by a transformation."""

    def __init__(self, env: StreamExecutionEnvironment, transformation: Transformation):
        self._env = env
        self._transformation = transformation

    # Operators ---------------------------------------------------------------------------

    def _operator(
        self,
        name: str,
        spec: OperatorSpec,
        keyed: bool = False,
        timestamps: bool = False,
        output_type: TypeInformation | None = None,
        preserves_type: bool = False,
    ) -> DataStream:
        t = Transformation(
            TransformationKind.OPERATOR,
            name,
            [self._transformation],
            spec,
            keyed=keyed,
            timestamps=timestamps,
            output_type=declared_type(output_type, "output_type"),
            preserves_type=preserves_type,
        )
        return DataStream(self._env, self._env._add(t))

    def map(self, func: Any, output_type: TypeInformation | None = None) -> DataStream:
        spec = OperatorSpec(OperatorKind.MAP, _check_function(func, "map", "MapFunction"))
        return self._operator("Map", spec, output_type=output_type)

    def flat_map(self, func: Any, output_type: TypeInformation | None = None) -> DataStream:
        spec = OperatorSpec(
            OperatorKind.FLAT_MAP, _check_function(func, "flat_map", "FlatMapFunction")
        )
        return self._operator("FlatMap", spec, output_type=output_type)

    def filter(self, func: Any) -> DataStream:
        spec = OperatorSpec(OperatorKind.FILTER, _check_function(func, "filter", "FilterFunction"))
        return self._operator("Filter", spec, preserves_type=True)

    def process(
        self, func: ProcessFunction, output_type: TypeInformation | None = None
    ) -> DataStream:
        if isinstance(func, KeyedProcessFunction):
            raise TypeError(
                f"a KeyedProcessFunction ({func!r}) needs a KeyedStream: key the stream with "
                "key_by() first, or use a ProcessFunction"
            )
        if not callable(getattr(func, "process_element", None)):
            raise TypeError(f"DataStream.process needs a ProcessFunction, got {func!r}")
        return self._operator(
            "Process", OperatorSpec(OperatorKind.PROCESS, func), output_type=output_type
        )

    def window(self, window_assigner: Any) -> WindowedStream:
        raise TypeError(
            "window() needs a KeyedStream: key the stream with key_by() first, or use "
            "window_all() for windows over the whole stream"
        )

    def count_window(self, size: int, slide: int = 0) -> WindowedStream:
        raise TypeError(
            "count_window() needs a KeyedStream: key the stream with key_by() first, or use "
            "window_all() with a count assigner"
        )

    def window_all(self, window_assigner: Any) -> AllWindowedStream:
        """Windows over the whole stream (one subtask does the windowing, as in PyFlink)."""
        return AllWindowedStream(self, window_assigner)

    def get_side_output(self, output_tag: OutputTag) -> DataStream:
        """The records this operator's functions yield as ``(output_tag, value)``."""
        if not isinstance(output_tag, OutputTag):
            raise TypeError(f"get_side_output needs an OutputTag, got {output_tag!r}")
        self._runnable("get_side_output()")
        t = Transformation(
            TransformationKind.SIDE_OUTPUT,
            f"SideOutput({output_tag.tag_id})",
            [self._transformation],
            output_tag=output_tag.tag_id,
            output_type=output_tag.type_info,
        )
        return DataStream(self._env, self._env._add(t))

    def assign_timestamps_and_watermarks(self, watermark_strategy: WatermarkStrategy) -> DataStream:
        """Timestamps from the strategy's assigner (or the ones records have) and watermarks
        from the timestamps each subtask of this operator sees."""
        check_strategy(watermark_strategy)
        spec = OperatorSpec(
            OperatorKind.FACTORY,
            partial(TimestampsAndWatermarksOperator, strategy=watermark_strategy),
        )
        t = Transformation(
            TransformationKind.OPERATOR,
            "Timestamps/Watermarks",
            [self._transformation],
            spec,
            timestamps=True,
            preserves_type=True,
        )
        return DataStream(self._env, self._env._add(t))

    def key_by(self, key_selector: Any, key_type: Any = None) -> KeyedStream:
        _check_function(key_selector, "get_key", "KeySelector")
        t = Transformation(
            TransformationKind.PARTITION,
            "KeyBy",
            [self._transformation],
            partitioning=Partitioning(
                PartitioningKind.KEY_GROUP, key_selector, declared_type(key_type, "key_type")
            ),
        )
        return KeyedStream(self._env, self._env._add(t), self)

    @overload
    def connect(self, ds: DataStream) -> ConnectedStreams: ...

    @overload
    def connect(self, ds: BroadcastStream) -> BroadcastConnectedStream: ...

    def connect(self, ds: DataStream | BroadcastStream) -> Any:
        """Two streams processed together by one two-input function (CoMapFunction,
        CoFlatMapFunction, CoProcessFunction; KeyedCoProcessFunction when both are keyed);
        with a ``BroadcastStream``, by a (Keyed)BroadcastProcessFunction."""
        if isinstance(ds, BroadcastStream):
            return BroadcastConnectedStream(self, ds)
        if not isinstance(ds, DataStream):
            raise TypeError(f"connect() needs a DataStream or a BroadcastStream, got {ds!r}")
        return ConnectedStreams(self, ds)

    @overload
    def broadcast(self) -> DataStream: ...

    @overload
    def broadcast(
        self, broadcast_state_descriptor: MapStateDescriptor, *others: MapStateDescriptor
    ) -> BroadcastStream: ...

    def broadcast(
        self,
        broadcast_state_descriptor: MapStateDescriptor | None = None,
        *others: MapStateDescriptor,
    ) -> DataStream | BroadcastStream:
        """Every record to every subtask of the next operator; with broadcast state
        descriptors, a ``BroadcastStream`` to ``connect`` a stream to."""
        descriptors = [broadcast_state_descriptor, *others] if broadcast_state_descriptor else []
        for descriptor in descriptors:
            if not isinstance(descriptor, MapStateDescriptor):
                raise TypeError(
                    f"broadcast state descriptors must be MapStateDescriptors, got {descriptor!r}"
                )
        t = Transformation(
            TransformationKind.PARTITION,
            "Broadcast",
            [self._transformation],
            partitioning=BROADCAST,
        )
        stream = DataStream(self._env, self._env._add(t))
        return BroadcastStream(stream, descriptors) if descriptors else stream

    def union(self, *streams: DataStream) -> DataStream:
        inputs = [self._transformation, *(s._transformation for s in streams)]
        return DataStream(
            self._env, self._env._add(Transformation(TransformationKind.UNION, "Union", inputs))
        )

    def _partition(self, name: str, partitioning: Partitioning) -> DataStream:
        t = Transformation(
            TransformationKind.PARTITION, name, [self._transformation], partitioning=partitioning
        )
        return DataStream(self._env, self._env._add(t))

    def rebalance(self) -> DataStream:
        """Records go round-robin to every subtask of the next operator."""
        return self._partition("Rebalance", REBALANCE)

    def rescale(self) -> DataStream:
        """Records go round-robin to a block of the next operator's subtasks, as in Flink:
        with 2 subtasks sending to 4, the first sends to subtasks 0 and 1, the second to 2
        and 3; with 4 sending to 2, subtasks 0 and 1 send to 0, subtasks 2 and 3 to 1."""
        return self._partition("Rescale", RESCALE)

    def shuffle(self) -> DataStream:
        """Each record goes to a uniformly random subtask of the next operator (drawn
        reproducibly: a retried epoch sends every record where the first run sent it)."""
        return self._partition("Shuffle", SHUFFLE)

    def forward(self) -> DataStream:
        """Subtask i sends to subtask i of the next operator, which must have the same
        parallelism: the job fails to build, before it starts, when it does not."""
        return self._partition("Forward", FORWARD)

    def partition_custom(self, partitioner: Any, key_selector: Any) -> DataStream:
        """Each record goes to the subtask ``partitioner.partition(key, num_partitions)``
        chooses for its key (``key_selector``'s), of the next operator's ``num_partitions``
        subtasks; both may be functions. Their ``open`` and ``close`` run in the sending
        subtask, as in PyFlink."""
        if not isinstance(partitioner, Partitioner) and not callable(partitioner):
            raise TypeError(
                "Parameter partitioner should be type of Partitioner or a callable function."
            )
        if not isinstance(key_selector, KeySelector) and not callable(key_selector):
            raise TypeError(
                "Parameter key_selector should be type of KeySelector or a callable function."
            )
        partitioning = Partitioning(PartitioningKind.CUSTOM, key_selector, partitioner=partitioner)
        return self._partition("PartitionCustom", partitioning)

    def project(self, *field_indexes: int) -> DataStream:
        """The tuples' fields at ``field_indexes``, as a tuple (a stream of tuples only: its
        type must be declared, e.g. ``output_type=Types.TUPLE([...])``, as in PyFlink)."""
        declared = self.get_type()
        if not isinstance(declared, TupleTypeInfo):
            raise TypeError(
                f"Only Tuple DataStreams can be projected, and this one's type is {declared!r}: "
                "declare it with output_type=Types.TUPLE([...])"
            )
        types = declared.get_field_types()
        for index in field_indexes:
            if not isinstance(index, int) or not -len(types) <= index < len(types):
                raise IndexError(
                    f"project() field index {index!r} is out of range for {len(types)} fields"
                )
        projected = Types.TUPLE([types[index] for index in field_indexes])
        spec = OperatorSpec(OperatorKind.MAP, Projection(field_indexes))
        return self._operator("Projection", spec, output_type=projected)

    def get_type(self) -> TypeInformation:
        """The declared type information of the stream's records; without one, PyFlink's
        ``Types.PICKLED_BYTE_ARRAY()`` (any Python value, pickled)."""
        declared = stream_type(self._transformation)
        return declared if declared is not None else Types.PICKLED_BYTE_ARRAY()

    def add_sink(self, sink_func: Any) -> DataStreamSink:
        """A sink function lockgate provides (``JdbcSink``); your own ``SinkFunction`` is not
        supported yet."""
        spec = getattr(sink_func, "operator_spec", None)
        if spec is None:  # a SinkFunction of the job's own
            not_supported("DataStream.add_sink", f"JdbcSink, or {SINK_ALTERNATIVE}")
        return self._sink(getattr(sink_func, "name", "Sink"), spec(), None)

    def cache(self) -> NoReturn:
        not_supported(
            "DataStream.cache",
            "sink_to() with a FileSink, and a FileSource reading its output in the next job",
        )

    # Properties of the operator that produced this stream ---------------------------------

    def _runnable(self, what: str) -> Transformation:
        t = self._transformation
        if not t.runs:
            raise ValueError(
                f"{what} applies to an operator; '{t.name}' only repartitions or merges streams"
            )
        return t

    def uid(self, uid: str) -> DataStream:
        if not isinstance(uid, str) or not uid:
            raise ValueError(f"uid must be a non-empty string, got {uid!r}")
        self._runnable("uid()").uid = uid
        return self

    def name(self, name: str) -> DataStream:
        self._runnable("name()").name = name
        return self

    def get_name(self) -> str:
        return self._transformation.name

    def set_parallelism(self, parallelism: int) -> DataStream:
        if not isinstance(parallelism, int) or parallelism < 1:
            raise ValueError(f"parallelism must be a positive integer, got {parallelism!r}")
        t = self._runnable("set_parallelism()")
        if t.fixed_parallelism and parallelism != 1:
            raise ValueError(
                f"'{t.name}' is non-parallel (force_non_parallel()): its parallelism must be "
                f"1, got {parallelism}"
            )
        t.parallelism = parallelism
        return self

    def set_max_parallelism(self, max_parallelism: int) -> DataStream:
        if not isinstance(max_parallelism, int) or not 0 < max_parallelism <= 32768:
            raise ValueError(f"max parallelism must be in 1..32768, got {max_parallelism!r}")
        self._runnable("set_max_parallelism()").max_parallelism = max_parallelism
        return self

    def force_non_parallel(self) -> DataStream:
        """Parallelism and max parallelism 1, and ``set_parallelism`` of another one fails."""
        t = self._runnable("force_non_parallel()")
        t.parallelism = t.max_parallelism = 1
        t.fixed_parallelism = True
        return self

    def start_new_chain(self) -> DataStream:
        """This operator heads a new task: it is not chained to the operator before it."""
        self._runnable("start_new_chain()").chaining = ChainingStrategy.HEAD
        return self

    def disable_chaining(self) -> DataStream:
        """This operator runs in a task of its own, chained to neither side."""
        self._runnable("disable_chaining()").chaining = ChainingStrategy.NEVER
        return self

    def set_description(self, description: str) -> DataStream:
        """A longer text than the name, shown in the execution plan (its ``contents``)."""
        self._runnable("set_description()").description = description
        return self

    def set_uid_hash(self, uid_hash: str) -> NoReturn:
        not_supported("DataStream.set_uid_hash", UID_HASH_ALTERNATIVE)

    def set_buffer_timeout(self, timeout_millis: int) -> NoReturn:
        not_supported("DataStream.set_buffer_timeout", BUFFER_TIMEOUT_ALTERNATIVE)

    def slot_sharing_group(self, slot_sharing_group: Any) -> NoReturn:
        not_supported("DataStream.slot_sharing_group", SLOTS_ALTERNATIVE)

    def get_execution_config(self) -> ExecutionConfig:
        return self._env.get_config()

    def get_execution_environment(self) -> StreamExecutionEnvironment:
        return self._env

    # Sinks --------------------------------------------------------------------------------

    def _sink(self, name: str, spec: OperatorSpec, parallelism: int | None) -> DataStreamSink:
        t = Transformation(
            TransformationKind.SINK, name, [self._transformation], spec, parallelism=parallelism
        )
        return DataStreamSink(self._env._add(t))

    def sink_to(self, sink: Any) -> DataStreamSink:
        spec = getattr(sink, "operator_spec", None)
        if spec is None:
            raise TypeError(
                f"sink_to needs a sink such as FileSink or DiscardingSink, got {sink!r}"
            )
        return self._sink(getattr(sink, "name", "Sink"), spec(), None)

    def print(self, sink_identifier: str | None = None) -> DataStreamSink:
        spec = OperatorSpec(OperatorKind.PRINT, options={"identifier": sink_identifier})
        return self._sink("Print to Std. Out", spec, None)

    def execute_and_collect(
        self, job_execution_name: str | None = None, limit: int | None = None
    ) -> CloseableIterator | list[Any]:
        """Run the job and return its results: an iterator, or a list of at most ``limit``."""
        t = Transformation(
            TransformationKind.SINK,
            "Collect",
            [self._transformation],
            OperatorSpec(OperatorKind.COLLECT),
        )
        self._env._add(t)
        iterator = self._env._execute_collect(job_execution_name)
        if limit is None:
            return iterator
        with iterator:
            return [record for _, record in zip(range(limit), iterator, strict=False)]


class DataStreamSink:
    """The end of a stream; lets a sink be named and given a uid and parallelism."""

    def __init__(self, transformation: Transformation):
        self._transformation = transformation

    def name(self, name: str) -> DataStreamSink:
        self._transformation.name = name
        return self

    def uid(self, uid: str) -> DataStreamSink:
        self._transformation.uid = uid
        return self

    def set_parallelism(self, parallelism: int) -> DataStreamSink:
        self._transformation.parallelism = parallelism
        return self

    def set_description(self, description: str) -> DataStreamSink:
        """A longer text than the name, shown in the execution plan (its ``contents``)."""
        self._transformation.description = description
        return self

    def disable_chaining(self) -> DataStreamSink:
        """The sink runs in a task of its own."""
        self._transformation.chaining = ChainingStrategy.NEVER
        return self

    def set_uid_hash(self, uid_hash: str) -> NoReturn:
        not_supported("DataStreamSink.set_uid_hash", UID_HASH_ALTERNATIVE)

    def slot_sharing_group(self, slot_sharing_group: Any) -> NoReturn:
        not_supported("DataStreamSink.slot_sharing_group", SLOTS_ALTERNATIVE)


class KeyedStream(DataStream):
    """A stream partitioned by key: its operators can use keyed state."""

    def __init__(
        self, env: StreamExecutionEnvironment, transformation: Transformation, origin: DataStream
    ):
        super().__init__(env, transformation)
        self._origin = origin

    def _keyed(
        self,
        name: str,
        spec: OperatorSpec,
        timestamps: bool = False,
        output_type: TypeInformation | None = None,
        preserves_type: bool = False,
    ) -> DataStream:
        return self._operator(name, spec, True, timestamps, output_type, preserves_type)

    def _reduced(self, name: str, spec: OperatorSpec) -> DataStream:
        # The reduced records have the input's type, and are converted to it as PyFlink
        # serializes them: a reduce function returning a tuple for a Row type fails there.
        return self._keyed(name, spec, output_type=stream_type(self._transformation))

    def map(self, func: Any, output_type: TypeInformation | None = None) -> DataStream:
        spec = OperatorSpec(OperatorKind.MAP, _check_function(func, "map", "MapFunction"))
        return self._keyed("Map", spec, output_type=output_type)

    def flat_map(self, func: Any, output_type: TypeInformation | None = None) -> DataStream:
        spec = OperatorSpec(
            OperatorKind.FLAT_MAP, _check_function(func, "flat_map", "FlatMapFunction")
        )
        return self._keyed("FlatMap", spec, output_type=output_type)

    def filter(self, func: Any) -> DataStream:
        spec = OperatorSpec(OperatorKind.FILTER, _check_function(func, "filter", "FilterFunction"))
        return self._keyed("Filter", spec, preserves_type=True)

    # takes a KeyedProcessFunction where DataStream.process takes a ProcessFunction (which
    # is rejected here): the parameter type is narrowed on purpose
    def process(  # type: ignore[override]
        self, func: KeyedProcessFunction, output_type: TypeInformation | None = None
    ) -> DataStream:
        if not isinstance(func, KeyedProcessFunction):
            raise TypeError(f"KeyedProcessFunction is required for KeyedStream, got {func!r}")
        # its timers' outputs carry the timers' times
        fires_timers = type(func).on_timer is not KeyedProcessFunction.on_timer
        spec = OperatorSpec(OperatorKind.KEYED_PROCESS, func)
        return self._keyed("KeyedProcess", spec, fires_timers, output_type)

    def window(self, window_assigner: Any) -> WindowedStream:
        return WindowedStream(self, window_assigner)

    def count_window(self, size: int, slide: int = 0) -> WindowedStream:
        """Windows of ``size`` elements per key, a new one every ``slide`` (0: tumbling)."""
        if slide == 0:
            return WindowedStream(self, CountTumblingWindowAssigner(size))
        return WindowedStream(self, CountSlidingWindowAssigner(size, slide))

    def reduce(self, func: Any) -> DataStream:
        spec = OperatorSpec(OperatorKind.REDUCE, _check_function(func, "reduce", "ReduceFunction"))
        return self._reduced("Reduce", spec)

    def sum(self, position_to_sum: int | str = 0) -> DataStream:
        spec = OperatorSpec(OperatorKind.REDUCE, FieldAggregator("sum", position_to_sum))
        return self._reduced("Sum", spec)

    def min(self, position_to_min: int | str = 0) -> DataStream:
        spec = OperatorSpec(OperatorKind.REDUCE, FieldAggregator("min", position_to_min))
        return self._reduced("Min", spec)

    def max(self, position_to_max: int | str = 0) -> DataStream:
        spec = OperatorSpec(OperatorKind.REDUCE, FieldAggregator("max", position_to_max))
        return self._reduced("Max", spec)

    def min_by(self, position_to_min_by: int | str = 0) -> DataStream:
        spec = OperatorSpec(OperatorKind.REDUCE, FieldAggregator("min_by", position_to_min_by))
        return self._reduced("MinBy", spec)

    def max_by(self, position_to_max_by: int | str = 0) -> DataStream:
        spec = OperatorSpec(OperatorKind.REDUCE, FieldAggregator("max_by", position_to_max_by))
        return self._reduced("MaxBy", spec)

    def key_by(self, key_selector: Any, key_type: Any = None) -> KeyedStream:
        return self._origin.key_by(key_selector, key_type)

    def _repartition(self) -> NoReturn:
        raise ValueError("cannot override partitioning for KeyedStream")

    def rebalance(self) -> DataStream:
        self._repartition()

    def rescale(self) -> DataStream:
        self._repartition()

    def shuffle(self) -> DataStream:
        self._repartition()

    def forward(self) -> DataStream:
        self._repartition()

    def broadcast(self, *args: Any) -> Any:
        self._repartition()

    def partition_custom(self, partitioner: Any, key_selector: Any) -> DataStream:
        self._repartition()

    def _not_supported(self, what: str) -> NoReturn:
        raise ValueError(f"{what} is not supported on a KeyedStream; apply it to an operator")

    def uid(self, uid: str) -> DataStream:
        self._not_supported("uid()")

    def name(self, name: str) -> DataStream:
        self._not_supported("name()")

    def set_parallelism(self, parallelism: int) -> DataStream:
        self._not_supported("set_parallelism()")

    def set_max_parallelism(self, max_parallelism: int) -> DataStream:
        self._not_supported("set_max_parallelism()")

    def force_non_parallel(self) -> DataStream:
        self._not_supported("force_non_parallel()")

    def start_new_chain(self) -> DataStream:
        self._not_supported("start_new_chain()")

    def disable_chaining(self) -> DataStream:
        self._not_supported("disable_chaining()")

    def set_description(self, description: str) -> DataStream:
        self._not_supported("set_description()")


class ConnectedStreams:
    """Two streams connected for a two-input function; keyed when both are keyed (then the
    function has keyed state and timers shared by both inputs)."""

    def __init__(self, stream1: DataStream, stream2: DataStream):
        self.stream1 = stream1
        self.stream2 = stream2

    def key_by(
        self, key_selector1: Any, key_selector2: Any, key_type: Any = None
    ) -> ConnectedStreams:
        return ConnectedStreams(
            _origin(self.stream1).key_by(key_selector1, key_type),
            _origin(self.stream2).key_by(key_selector2, key_type),
        )

    @property
    def _keyed(self) -> bool:
        return isinstance(self.stream1, KeyedStream) and isinstance(self.stream2, KeyedStream)

    def map(self, func: CoMapFunction, output_type: TypeInformation | None = None) -> DataStream:
        if not isinstance(func, CoMapFunction):
            raise TypeError("The input function must be a CoMapFunction!")
        return self._two_input("Co-Map", func, "co_map", output_type)

    def flat_map(
        self, func: CoFlatMapFunction, output_type: TypeInformation | None = None
    ) -> DataStream:
        if not isinstance(func, CoFlatMapFunction):
            raise TypeError("The input must be a CoFlatMapFunction!")
        return self._two_input("Co-Flat Map", func, "co_flat_map", output_type)

    def process(self, func: Any, output_type: TypeInformation | None = None) -> DataStream:
        """A CoProcessFunction, or on two keyed streams a KeyedCoProcessFunction (chosen by
        the streams, as PyFlink does)."""
        if not isinstance(func, CoProcessFunction | KeyedCoProcessFunction):
            raise TypeError(
                f"process() needs a CoProcessFunction or KeyedCoProcessFunction, got {func!r}"
            )
        if isinstance(func, KeyedCoProcessFunction) and not self._keyed:
            raise TypeError(
                "a KeyedCoProcessFunction needs two keyed streams: key them with "
                "connect(...).key_by(key_selector1, key_selector2)"
            )
        name = "Keyed Co-Process" if self._keyed else "Co-Process"
        return self._two_input(name, func, "co_process", output_type)

    def _two_input(
        self, name: str, function: Any, kind: str, output_type: TypeInformation | None
    ) -> DataStream:
        keyed = self._keyed
        fires_timers = keyed and getattr(type(function), "on_timer", None) not in (
            None,
            KeyedCoProcessFunction.on_timer,
        )
        spec = OperatorSpec(
            OperatorKind.FACTORY, partial(CoOperator, function=function, kind=kind, keyed=keyed)
        )
        env = self.stream1._env
        t = Transformation(
            TransformationKind.OPERATOR,
            name,
            [self.stream1._transformation, self.stream2._transformation],
            spec,
            keyed=keyed,
            timestamps=fires_timers,
            two_input=True,
            output_type=declared_type(output_type, "output_type"),
        )
        return DataStream(env, env._add(t))


class BroadcastStream:
    """A stream whose records every subtask of the operator it is connected to receives,
    with the broadcast states that operator holds; its only use is ``connect``."""

    def __init__(
        self, input_stream: DataStream, broadcast_state_descriptors: list[MapStateDescriptor]
    ):
        self.input_stream = input_stream
        self.broadcast_state_descriptors = broadcast_state_descriptors


class BroadcastConnectedStream:
    """A stream (keyed or not) connected to a ``BroadcastStream``."""

    def __init__(self, non_broadcast_stream: DataStream, broadcast_stream: BroadcastStream):
        self.non_broadcast_stream = non_broadcast_stream
        self.broadcast_stream = broadcast_stream
        self.broadcast_state_descriptors = broadcast_stream.broadcast_state_descriptors

    def process(self, func: Any, output_type: TypeInformation | None = None) -> DataStream:
        """A BroadcastProcessFunction, or on a keyed stream a KeyedBroadcastProcessFunction."""
        keyed = isinstance(self.non_broadcast_stream, KeyedStream)
        if keyed and not isinstance(func, KeyedBroadcastProcessFunction):
            raise TypeError(
                f"KeyedBroadcastProcessFunction should be applied to keyed DataStream, got {func!r}"
            )
        if not keyed and not isinstance(func, BroadcastProcessFunction):
            raise TypeError(
                f"BroadcastProcessFunction should be applied to non-keyed DataStream, got {func!r}"
            )
        fires_timers = keyed and type(func).on_timer is not KeyedBroadcastProcessFunction.on_timer
        spec = OperatorSpec(
            OperatorKind.FACTORY,
            partial(
                BroadcastProcessOperator,
                function=func,
                descriptors=self.broadcast_state_descriptors,
                keyed=keyed,
            ),
        )
        env = self.non_broadcast_stream._env
        t = Transformation(
            TransformationKind.OPERATOR,
            "Keyed-Co-Process-Broadcast" if keyed else "Co-Process-Broadcast",
            # the broadcast input first: its edge's records are processed first in an epoch
            [
                self.broadcast_stream.input_stream._transformation,
                self.non_broadcast_stream._transformation,
            ],
            spec,
            keyed=keyed,
            timestamps=fires_timers,
            two_input=True,
            output_type=declared_type(output_type, "output_type"),
        )
        return DataStream(env, env._add(t))


def _origin(stream: DataStream) -> DataStream:
    """The stream a keyed stream was keyed from (re-keying starts from it)."""
    return stream._origin if isinstance(stream, KeyedStream) else stream


class WindowedStream:
    """A keyed stream cut into windows: the terminal call (reduce, aggregate, apply,
    process) gives the windows' results as a DataStream."""

    def __init__(self, keyed_stream: KeyedStream, window_assigner: Any):
        if not callable(getattr(window_assigner, "assign_windows", None)):
            raise TypeError(
                "window() needs a WindowAssigner (e.g. TumblingEventTimeWindows.of(...)), "
                f"got {window_assigner!r}"
            )
        self._keyed_stream = keyed_stream
        self._assigner = window_assigner
        self._trigger: Any = None
        self._allowed_lateness = 0
        self._late_data_tag: OutputTag | None = None
        self._all = False  # an AllWindowedStream's functions take no key

    def get_execution_environment(self) -> StreamExecutionEnvironment:
        return self._keyed_stream.get_execution_environment()

    def get_input_type(self) -> Any:
        return None

    def trigger(self, trigger: Any) -> WindowedStream:
        if not callable(getattr(trigger, "on_element", None)):
            raise TypeError(f"trigger() needs a Trigger, got {trigger!r}")
        if _is_merging(self._assigner) and not trigger.can_merge():
            raise TypeError(
                "A merging window assigner cannot be used with a trigger that does not "
                f"support merging ({type(trigger).__name__})."
            )
        self._trigger = trigger
        return self

    def allowed_lateness(self, time_ms: int) -> WindowedStream:
        if isinstance(time_ms, Duration):
            time_ms = time_ms.to_milliseconds()
        if not isinstance(time_ms, int) or isinstance(time_ms, bool) or time_ms < 0:
            raise ValueError(f"allowed_lateness must be >= 0 milliseconds, got {time_ms!r}")
        self._allowed_lateness = time_ms
        return self

    def side_output_late_data(self, output_tag: OutputTag) -> WindowedStream:
        if not isinstance(output_tag, OutputTag):
            raise TypeError(f"side_output_late_data needs an OutputTag, got {output_tag!r}")
        self._late_data_tag = output_tag
        return self

    def reduce(
        self,
        reduce_function: Any,
        window_function: Any = None,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """Reduce each window's elements as they arrive; ``window_function`` (optional)
        gets the reduced value as a one-element list."""
        reduce = resolve_callable(reduce_function, "reduce", "ReduceFunction")
        contents = ReducingStateDescriptor(WINDOW_STATE_NAME, reduce)
        return self._build(contents, True, window_function, output_type)

    def aggregate(
        self,
        aggregate_function: AggregateFunction,
        window_function: Any = None,
        accumulator_type: Any = None,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """Aggregate each window's elements as they arrive; ``window_function`` (optional)
        gets the result as a one-element list."""
        if not isinstance(aggregate_function, AggregateFunction):
            raise TypeError(f"aggregate() needs an AggregateFunction, got {aggregate_function!r}")
        contents = AggregatingStateDescriptor(WINDOW_STATE_NAME, aggregate_function)
        return self._build(contents, True, window_function, output_type)

    def apply(self, window_function: Any, output_type: TypeInformation | None = None) -> DataStream:
        kind = AllWindowFunction if self._all else WindowFunction
        if not isinstance(window_function, kind):
            raise TypeError(f"apply() needs a {kind.__name__}, got {window_function!r}")
        contents = ListStateDescriptor(WINDOW_STATE_NAME)
        return self._build(contents, False, window_function, output_type)

    def process(
        self, process_window_function: Any, output_type: TypeInformation | None = None
    ) -> DataStream:
        kind = ProcessAllWindowFunction if self._all else ProcessWindowFunction
        if not isinstance(process_window_function, kind):
            raise TypeError(f"process() needs a {kind.__name__}, got {process_window_function!r}")
        contents = ListStateDescriptor(WINDOW_STATE_NAME)
        return self._build(contents, False, process_window_function, output_type)

    def _build(
        self,
        contents: Any,
        single_value: bool,
        function: Any,
        output_type: TypeInformation | None,
    ) -> DataStream:
        process, apply = (
            (ProcessAllWindowFunction, AllWindowFunction)
            if self._all
            else (ProcessWindowFunction, WindowFunction)
        )
        prefix = "all_" if self._all else ""
        if function is None:
            kind = "value"
        elif isinstance(function, process):
            kind = prefix + "process"
        elif isinstance(function, apply):
            kind = prefix + "apply"
        else:
            raise TypeError(
                f"window_function should be a {apply.__name__} or {process.__name__}, got "
                f"{function!r}"
            )
        assigner = self._assigner
        trigger = self._trigger or assigner.get_default_trigger(self.get_execution_environment())
        time_windows = None
        if type(trigger) is EventTimeTrigger:
            if type(assigner) is TumblingEventTimeWindows:
                time_windows = (assigner.size, assigner.size, assigner.offset)
            elif type(assigner) is SlidingEventTimeWindows:
                time_windows = (assigner.size, assigner.slide, assigner.offset)
        spec = WindowOperatorSpec(
            assigner=assigner,
            trigger=trigger,
            contents=contents,
            function_kind=kind,
            function=function,
            allowed_lateness=self._allowed_lateness,
            late_data_tag=self._late_data_tag,
            single_value=single_value,
            time_windows=time_windows,
            window_type=TimeWindow,
        )
        name = type(assigner).__name__
        operator = OperatorSpec(
            OperatorKind.FACTORY,
            partial(WindowOperator, spec=spec),
            states={WINDOW_STATE_NAME: namespaced_kind(contents.kind)},
        )
        # a reduce without a window function gives records of its input's type
        preserves = (
            output_type is None
            and function is None
            and isinstance(contents, ReducingStateDescriptor)
        )
        return self._keyed_stream._keyed(name, operator, True, output_type, preserves)


class AllWindowedStream(WindowedStream):
    """Windows over a whole stream: keyed by one constant key, as PyFlink does it."""

    def __init__(self, data_stream: DataStream, window_assigner: Any):
        super().__init__(data_stream.key_by(NullByteKeySelector()), window_assigner)
        self._all = True


WINDOW_STATE_NAME = "window-contents"


def _is_merging(assigner: Any) -> bool:
    return callable(getattr(assigner, "merge_windows", None))


class Projection:
    """``project()``'s map: the record's fields at the given indexes, as a tuple."""

    def __init__(self, field_indexes: tuple[int, ...]):
        self.field_indexes = field_indexes

    def map(self, value: Any) -> tuple[Any, ...]:
        return tuple(value[index] for index in self.field_indexes)


class FieldAggregator:
    """The reduce behind ``sum/min/max/min_by/max_by``, with PyFlink's rules per value type.

    Tuples, Rows and lists get a copy of the accumulated record with the field replaced
    (PyFlink updates lists in place, but serializes each output first, so the outputs
    are the same); plain values only allow position 0.
    """

    def __init__(self, kind: str, position: int | str):
        if not isinstance(position, int | str):
            raise TypeError(f"field position must be an int or a field name, got {position!r}")
        self.kind = kind
        self.position = position

    def _field(self, value: Any) -> Any:
        if isinstance(value, tuple | list | Row):
            position = self.position
            if isinstance(position, str):
                if not isinstance(value, Row):
                    raise TypeError(f"field name {position!r} needs Row records, got {value!r}")
                return value[position]
            return value[position]
        if self.position != 0:
            raise TypeError(
                f"the field {self.position!r} was selected on a basic type {type(value).__name__}"
            )
        return value

    def reduce(self, value1: Any, value2: Any) -> Any:
        a, b = self._field(value1), self._field(value2)
        kind = self.kind
        if kind == "min_by":
            return value2 if b < a else value1
        if kind == "max_by":
            return value2 if b > a else value1
        combined = a + b if kind == "sum" else (min(a, b) if kind == "min" else max(a, b))
        return self._replace(value1, combined)

    def _replace(self, record: Any, field: Any) -> Any:
        if isinstance(record, list):
            # A new list: the emitted value must not change when the next record arrives.
            updated = list(record)
            updated[self.position] = field  # type: ignore[index]
            return updated
        if isinstance(record, Row):
            # a copy of the Row, its names and its kind, with the field replaced (a name
            # reaches here only for a Row with field names: _field() checked value1)
            row = Row.of_kind(record.get_row_kind(), *record)
            if record._fields is not None:
                row.set_field_names(record._fields)
            row[self.position] = field
            return row
        if isinstance(record, tuple):
            values = list(record)
            values[self.position] = field  # type: ignore[index]
            return type(record)(values) if type(record) is tuple else type(record)(*values)
        return field


class CloseableIterator:
    """Results of ``execute_and_collect``; closing it stops the job."""

    def __init__(self, results: Iterator[Any], on_close: Callable[[], None]):
        self._results = results
        self._on_close = on_close

    def __iter__(self) -> CloseableIterator:
        return self

    def __next__(self) -> Any:
        return next(self._results)

    def next(self) -> Any:
        return next(self._results)

    def close(self) -> None:
        self._on_close()

    def __enter__(self) -> CloseableIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
