"""PyFlink's ``pyflink.datastream`` for lockgate."""

from lockgate.datastream.checkpoint_config import (
    CheckpointConfig,
    CheckpointingMode,
    ExternalizedCheckpointRetention,
)
from lockgate.datastream.data_stream import (
    CloseableIterator,
    DataStream,
    DataStreamSink,
    KeyedStream,
)
from lockgate.datastream.functions import (
    AggregateFunction,
    FilterFunction,
    FlatMapFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    ProcessFunction,
    ReduceFunction,
    RuntimeContext,
)
from lockgate.datastream.stream_execution_environment import (
    JobExecutionResult,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
)

__all__ = [
    "AggregateFunction",
    "CheckpointConfig",
    "CheckpointingMode",
    "CloseableIterator",
    "DataStream",
    "DataStreamSink",
    "ExternalizedCheckpointRetention",
    "FilterFunction",
    "FlatMapFunction",
    "JobExecutionResult",
    "KeySelector",
    "KeyedProcessFunction",
    "KeyedStream",
    "MapFunction",
    "ProcessFunction",
    "ReduceFunction",
    "RuntimeContext",
    "RuntimeExecutionMode",
    "StreamExecutionEnvironment",
]
