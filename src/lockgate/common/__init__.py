"""PyFlink's ``pyflink.common`` for lockgate: configuration, types, time, watermarks."""

from lockgate.common.completable_future import CompletableFuture
from lockgate.common.config_options import ConfigurationError
from lockgate.common.configuration import Configuration
from lockgate.common.job_client import JobClient
from lockgate.common.job_execution_result import JobExecutionResult
from lockgate.common.job_id import JobID
from lockgate.common.job_status import JobStatus
from lockgate.common.restart_strategy import RestartStrategies, RestartStrategyConfiguration
from lockgate.common.serialization import Encoder
from lockgate.common.time import Duration, Time
from lockgate.common.types import Row, TypeInformation, Types
from lockgate.common.watermark_strategy import TimestampAssigner, WatermarkStrategy

__all__ = [
    "CompletableFuture",
    "Configuration",
    "ConfigurationError",
    "Duration",
    "Encoder",
    "JobClient",
    "JobExecutionResult",
    "JobID",
    "JobStatus",
    "RestartStrategies",
    "RestartStrategyConfiguration",
    "Row",
    "Time",
    "TimestampAssigner",
    "TypeInformation",
    "Types",
    "WatermarkStrategy",
]
