"""PyFlink's ``pyflink.common`` for lockgate: configuration, types, time, watermarks."""

from lockgate.common.config_options import ConfigurationError
from lockgate.common.configuration import Configuration
from lockgate.common.restart_strategy import RestartStrategies, RestartStrategyConfiguration
from lockgate.common.serialization import Encoder
from lockgate.common.time import Duration, Time
from lockgate.common.types import Row, TypeInformation, Types
from lockgate.common.watermark_strategy import TimestampAssigner, WatermarkStrategy

__all__ = [
    "Configuration",
    "ConfigurationError",
    "Duration",
    "Encoder",
    "RestartStrategies",
    "RestartStrategyConfiguration",
    "Row",
    "Time",
    "TimestampAssigner",
    "TypeInformation",
    "Types",
    "WatermarkStrategy",
]
