"""PyFlink's ``pyflink.datastream`` for lockgate."""

from lockgate.common.output_tag import OutputTag
from lockgate.datastream.checkpoint_config import (
    CheckpointConfig,
    CheckpointingMode,
    ExternalizedCheckpointRetention,
)
from lockgate.datastream.data_stream import (
    AllWindowedStream,
    CloseableIterator,
    ConnectedStreams,
    DataStream,
    DataStreamSink,
    KeyedStream,
    WindowedStream,
)
from lockgate.datastream.functions import (
    AggregateFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    ProcessFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    WindowFunction,
)
from lockgate.datastream.stream_execution_environment import (
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
)
from lockgate.datastream.time_domain import TimeDomain
from lockgate.datastream.timerservice import TimerService
from lockgate.datastream.window import (
    CountWindow,
    GlobalWindow,
    MergingWindowAssigner,
    TimeWindow,
    Trigger,
    TriggerResult,
    Window,
    WindowAssigner,
)

__all__ = [
    "AggregateFunction",
    "AllWindowedStream",
    "CheckpointConfig",
    "CheckpointingMode",
    "CloseableIterator",
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "ConnectedStreams",
    "CountWindow",
    "DataStream",
    "DataStreamSink",
    "ExternalizedCheckpointRetention",
    "FilterFunction",
    "FlatMapFunction",
    "GlobalWindow",
    "KeySelector",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStream",
    "MapFunction",
    "MergingWindowAssigner",
    "OutputTag",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "RuntimeExecutionMode",
    "StreamExecutionEnvironment",
    "TimeDomain",
    "TimeWindow",
    "TimerService",
    "Trigger",
    "TriggerResult",
    "Window",
    "WindowAssigner",
    "WindowFunction",
    "WindowedStream",
]
