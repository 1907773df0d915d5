"""``DataStream`` and ``KeyedStream``: PyFlink's fluent API, recording transformations."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn

from lockgate.common.types import Row
from lockgate.datastream.functions import KeyedProcessFunction, ProcessFunction
from lockgate.graph.transformations import REBALANCE, Partitioning, Transformation
from lockgate.runtime.taskexecutor.operators import OperatorSpec

if TYPE_CHECKING:
    from lockgate.datastream.stream_execution_environment import StreamExecutionEnvironment


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

    def _operator(self, name: str, spec: OperatorSpec, keyed: bool = False) -> DataStream:
        t = Transformation("operator", name, [self._transformation], spec, keyed=keyed)
        return DataStream(self._env, self._env._add(t))

    def map(self, func: Any, output_type: Any = None) -> DataStream:
        return self._operator(
            "Map", OperatorSpec("map", _check_function(func, "map", "MapFunction"))
        )

    def flat_map(self, func: Any, output_type: Any = None) -> DataStream:
        spec = OperatorSpec("flat_map", _check_function(func, "flat_map", "FlatMapFunction"))
        return self._operator("FlatMap", spec)

    def filter(self, func: Any) -> DataStream:
        spec = OperatorSpec("filter", _check_function(func, "filter", "FilterFunction"))
        return self._operator("Filter", spec)

    def process(self, func: ProcessFunction, output_type: Any = None) -> DataStream:
        if isinstance(func, KeyedProcessFunction) or not callable(
            getattr(func, "process_element", None)
        ):
            raise TypeError(f"DataStream.process needs a ProcessFunction, got {func!r}")
        return self._operator("Process", OperatorSpec("process", func))

    def key_by(self, key_selector: Any, key_type: Any = None) -> KeyedStream:
        _check_function(key_selector, "get_key", "KeySelector")
        t = Transformation(
            "partition",
            "KeyBy",
            [self._transformation],
            partitioning=Partitioning("key_group", key_selector),
        )
        return KeyedStream(self._env, self._env._add(t), self)

    def union(self, *streams: DataStream) -> DataStream:
        inputs = [self._transformation, *(s._transformation for s in streams)]
        return DataStream(self._env, self._env._add(Transformation("union", "Union", inputs)))

    def rebalance(self) -> DataStream:
        t = Transformation("partition", "Rebalance", [self._transformation], partitioning=REBALANCE)
        return DataStream(self._env, self._env._add(t))

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
        self._runnable("set_parallelism()").parallelism = parallelism
        return self

    def set_max_parallelism(self, max_parallelism: int) -> DataStream:
        if not isinstance(max_parallelism, int) or not 0 < max_parallelism <= 32768:
            raise ValueError(f"max parallelism must be in 1..32768, got {max_parallelism!r}")
        self._runnable("set_max_parallelism()").max_parallelism = max_parallelism
        return self

    def get_execution_environment(self) -> StreamExecutionEnvironment:
        return self._env

    # Sinks --------------------------------------------------------------------------------

    def _sink(self, name: str, spec: OperatorSpec, parallelism: int | None) -> DataStreamSink:
        t = Transformation("sink", name, [self._transformation], spec, parallelism=parallelism)
        return DataStreamSink(self._env._add(t))

    def sink_to(self, sink: Any) -> DataStreamSink:
        spec = getattr(sink, "operator_spec", None)
        if spec is None:
            raise TypeError(
                f"sink_to needs a sink such as FileSink or DiscardingSink, got {sink!r}"
            )
        return self._sink(getattr(sink, "name", "Sink"), spec(), None)

    def print(self, sink_identifier: str | None = None) -> DataStreamSink:
        spec = OperatorSpec("print", options={"identifier": sink_identifier})
        return self._sink("Print to Std. Out", spec, None)

    def execute_and_collect(
        self, job_execution_name: str | None = None, limit: int | None = None
    ) -> CloseableIterator | list[Any]:
        """Run the job and return its results: an iterator, or a list of at most ``limit``."""
        t = Transformation("sink", "Collect", [self._transformation], OperatorSpec("collect"))
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


class KeyedStream(DataStream):
    """A stream partitioned by key: its operators can use keyed state."""

    def __init__(
        self, env: StreamExecutionEnvironment, transformation: Transformation, origin: DataStream
    ):
        super().__init__(env, transformation)
        self._origin = origin

    def _keyed(self, name: str, spec: OperatorSpec) -> DataStream:
        return self._operator(name, spec, keyed=True)

    def map(self, func: Any, output_type: Any = None) -> DataStream:
        return self._keyed("Map", OperatorSpec("map", _check_function(func, "map", "MapFunction")))

    def flat_map(self, func: Any, output_type: Any = None) -> DataStream:
        spec = OperatorSpec("flat_map", _check_function(func, "flat_map", "FlatMapFunction"))
        return self._keyed("FlatMap", spec)

    def filter(self, func: Any) -> DataStream:
        spec = OperatorSpec("filter", _check_function(func, "filter", "FilterFunction"))
        return self._keyed("Filter", spec)

    # takes a KeyedProcessFunction where DataStream.process takes a ProcessFunction (which
    # is rejected here): the parameter type is narrowed on purpose
    def process(  # type: ignore[override]
        self, func: KeyedProcessFunction, output_type: Any = None
    ) -> DataStream:
        if not isinstance(func, KeyedProcessFunction):
            raise TypeError(f"KeyedProcessFunction is required for KeyedStream, got {func!r}")
        return self._keyed("KeyedProcess", OperatorSpec("keyed_process", func))

    def reduce(self, func: Any) -> DataStream:
        spec = OperatorSpec("reduce", _check_function(func, "reduce", "ReduceFunction"))
        return self._keyed("Reduce", spec)

    def sum(self, position_to_sum: int | str = 0) -> DataStream:
        return self._keyed("Sum", OperatorSpec("reduce", FieldAggregator("sum", position_to_sum)))

    def min(self, position_to_min: int | str = 0) -> DataStream:
        return self._keyed("Min", OperatorSpec("reduce", FieldAggregator("min", position_to_min)))

    def max(self, position_to_max: int | str = 0) -> DataStream:
        return self._keyed("Max", OperatorSpec("reduce", FieldAggregator("max", position_to_max)))

    def min_by(self, position_to_min_by: int | str = 0) -> DataStream:
        spec = OperatorSpec("reduce", FieldAggregator("min_by", position_to_min_by))
        return self._keyed("MinBy", spec)

    def max_by(self, position_to_max_by: int | str = 0) -> DataStream:
        spec = OperatorSpec("reduce", FieldAggregator("max_by", position_to_max_by))
        return self._keyed("MaxBy", spec)

    def key_by(self, key_selector: Any, key_type: Any = None) -> KeyedStream:
        return self._origin.key_by(key_selector, key_type)

    def rebalance(self) -> DataStream:
        raise ValueError("cannot override partitioning for KeyedStream")

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
        if isinstance(value, tuple | list):
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
            # a name reaches here only for a Row with field names: _field() checked value1
            index = (
                record._fields.index(self.position)  # type: ignore[union-attr]
                if isinstance(self.position, str)
                else (self.position)
            )
            values = list(record)
            values[index] = field
            if record._fields:
                return Row(**dict(zip(record._fields, values, strict=True)))
            return Row(*values)
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
