"""PyFlink's ``pyflink.common`` for lockgate: configuration, types, time, watermarks."""

from lockgate.common.completable_future import CompletableFuture
from lockgate.common.config_options import ConfigOption, ConfigOptions, ConfigurationError
from lockgate.common.configuration import Configuration
from lockgate.common.execution_config import ExecutionConfig
from lockgate.common.input_dependency_constraint import InputDependencyConstraint
from lockgate.common.job_client import JobClient
from lockgate.common.job_execution_result import JobExecutionResult
from lockgate.common.job_id import JobID
from lockgate.common.job_status import JobStatus
from lockgate.common.restart_strategy import RestartStrategies, RestartStrategyConfiguration
from lockgate.common.serialization import (
    ByteArraySchema,
    DeserializationSchema,
    Encoder,
    SerializationSchema,
    SimpleStringSchema,
)
from lockgate.common.serializer import TypeSerializer
from lockgate.common.time import Duration, Instant, Time
from lockgate.common.types import Row, RowKind, TypeInformation, Types
from lockgate.common.watermark_strategy import (
    AssignerWithPeriodicWatermarksWrapper,
    TimestampAssigner,
    WatermarkStrategy,
)

__all__ = [
    "AssignerWithPeriodicWatermarksWrapper",
    "ByteArraySchema",
    "CompletableFuture",
    "ConfigOption",
    "ConfigOptions",
    "Configuration",
    "ConfigurationError",
    "DeserializationSchema",
    "Duration",
    "Encoder",
    "ExecutionConfig",
    "InputDependencyConstraint",
    "Instant",
    "JobClient",
    "JobExecutionResult",
    "JobID",
    "JobStatus",
    "RestartStrategies",
    "RestartStrategyConfiguration",
    "Row",
    "RowKind",
    "SerializationSchema",
    "SimpleStringSchema",
    "Time",
    "TimestampAssigner",
    "TypeInformation",
    "TypeSerializer",
    "Types",
    "WatermarkStrategy",
]
