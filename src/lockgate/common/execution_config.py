"""``ExecutionConfig`` at PyFlink's path (``pyflink.common.execution_config``).

A view of the environment's configuration, as ``CheckpointConfig`` is: its parallelism and
max parallelism are the keys ``parallelism.default`` and ``pipeline.max-parallelism``. Of
the rest, what describes lockgate as it is answers (no Kryo, no Avro, auto-generated uids,
functions of a chain passing objects as they are), the global job parameters are the key
``pipeline.global-job-parameters``, and what lockgate cannot honor raises
``NotSupportedYetError`` naming what to use instead.
"""

from __future__ import annotations

from typing import Any, NoReturn

from lockgate.common import config_options as options
from lockgate.common.configuration import Configuration
from lockgate.common.unsupported import not_supported

_WATERMARKS = (
    "lockgate.epoch.target-duration: watermarks advance at the end of every epoch, from "
    "the timestamps each subtask saw"
)
_CANCELLATION = "execution.checkpointing.timeout: an epoch running longer is cancelled"
_JAVA_SERIALIZERS = (
    "type information (Types.ROW, Types.TUPLE, ...) or pickled Python values: lockgate has "
    "no Java serializers"
)


def _unsupported(method: str, alternative: str) -> NoReturn:
    not_supported(f"ExecutionConfig.{method}", alternative)


class ExecutionConfig:
    """The job's execution settings (``env.get_config()``, ``stream.get_execution_config()``)."""

    def __init__(self, configuration: Configuration):
        self._config = configuration

    # Parallelism --------------------------------------------------------------------------

    def get_parallelism(self) -> int:
        """The default parallelism of operators; -1: Spark's default parallelism."""
        return options.PARALLELISM.read(self._config.to_dict())

    def set_parallelism(self, parallelism: int) -> ExecutionConfig:
        if not isinstance(parallelism, int) or parallelism < 1:
            raise ValueError(f"parallelism must be a positive integer, got {parallelism!r}")
        self._config.set_integer(options.PARALLELISM.key, parallelism)
        return self

    def get_max_parallelism(self) -> int:
        """The number of key groups of keyed operators; -1: derived from the parallelism."""
        return options.MAX_PARALLELISM.read(self._config.to_dict())

    def set_max_parallelism(self, max_parallelism: int) -> ExecutionConfig:
        if not isinstance(max_parallelism, int) or not 0 < max_parallelism <= 32768:
            raise ValueError(f"max parallelism must be in 1..32768, got {max_parallelism!r}")
        self._config.set_integer(options.MAX_PARALLELISM.key, max_parallelism)
        return self

    # Watermarks, latency, cancellation ----------------------------------------------------

    def set_auto_watermark_interval(self, interval: int) -> NoReturn:
        _unsupported("set_auto_watermark_interval", _WATERMARKS)

    def get_auto_watermark_interval(self) -> NoReturn:
        _unsupported("get_auto_watermark_interval", _WATERMARKS)

    def get_latency_tracking_interval(self) -> int:
        """0: lockgate sends no latency markers (Flink's 0 disables them too)."""
        return 0

    def set_latency_tracking_interval(self, interval: int) -> ExecutionConfig:
        """Only 0 or less (disabled)."""
        if interval > 0:
            _unsupported(
                "set_latency_tracking_interval",
                "lockgate.progress, a line per epoch with its records and duration",
            )
        return self

    def get_task_cancellation_interval(self) -> NoReturn:
        _unsupported("get_task_cancellation_interval", _CANCELLATION)

    def set_task_cancellation_interval(self, interval: int) -> NoReturn:
        _unsupported("set_task_cancellation_interval", _CANCELLATION)

    def get_task_cancellation_timeout(self) -> NoReturn:
        _unsupported("get_task_cancellation_timeout", _CANCELLATION)

    def set_task_cancellation_timeout(self, timeout: int) -> NoReturn:
        _unsupported("set_task_cancellation_timeout", _CANCELLATION)

    # Java's closure cleaner and serializers: lockgate has none -----------------------------

    def enable_closure_cleaner(self) -> NoReturn:
        _unsupported(
            "enable_closure_cleaner",
            "functions that reference only what they need: they are "
            "pickled with cloudpickle, as in PySpark",
        )

    def disable_closure_cleaner(self) -> ExecutionConfig:
        return self

    def is_closure_cleaner_enabled(self) -> bool:
        return False

    def enable_force_kryo(self) -> NoReturn:
        _unsupported("enable_force_kryo", _JAVA_SERIALIZERS)

    def disable_force_kryo(self) -> ExecutionConfig:
        return self

    def is_force_kryo_enabled(self) -> bool:
        return False

    def enable_force_avro(self) -> NoReturn:
        _unsupported("enable_force_avro", _JAVA_SERIALIZERS)

    def disable_force_avro(self) -> ExecutionConfig:
        return self

    def is_force_avro_enabled(self) -> bool:
        return False

    def enable_generic_types(self) -> ExecutionConfig:
        """Values of any Python type travel pickled: generic types are always enabled."""
        return self

    def disable_generic_types(self) -> NoReturn:
        _unsupported(
            "disable_generic_types",
            "type information on every stream (output_type=...): values without one travel pickled",
        )

    def has_generic_types_disabled(self) -> bool:
        return False

    def get_default_kryo_serializer_classes(self) -> dict[str, str]:
        return {}

    def get_registered_kryo_types(self) -> list[str]:
        return []

    def get_registered_pojo_types(self) -> list[str]:
        return []

    # Uids, objects, parameters, compression ------------------------------------------------

    def enable_auto_generated_uids(self) -> ExecutionConfig:
        return self

    def disable_auto_generated_uids(self) -> NoReturn:
        _unsupported(
            "disable_auto_generated_uids",
            "uid() on every stateful operator: an operator without one gets a uid derived "
            "from its name and its inputs",
        )

    def has_auto_generated_uids_enabled(self) -> bool:
        return True

    def enable_object_reuse(self) -> ExecutionConfig:
        """Chained functions already get the objects the function before them returned, as
        PyFlink's chained Python functions do; records crossing tasks are pickled."""
        return self

    def disable_object_reuse(self) -> NoReturn:
        _unsupported(
            "disable_object_reuse",
            "a copy made in the function that changes a record, or disable_chaining() "
            "(records crossing tasks are pickled)",
        )

    def is_object_reuse_enabled(self) -> bool:
        return True

    def get_global_job_parameters(self) -> dict[str, str]:
        return options.JOB_PARAMETERS.read(self._config.to_dict())

    def set_global_job_parameters(
        self, global_job_parameters_dict: dict[str, Any]
    ) -> ExecutionConfig:
        """What functions read with ``RuntimeContext.get_job_parameter`` (the setting
        ``pipeline.global-job-parameters``); keys and values are strings, as in PyFlink."""
        for key, value in global_job_parameters_dict.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TypeError(
                    f"job parameters are strings, got {key!r}: {value!r} "
                    f"({type(key).__name__}: {type(value).__name__})"
                )
        self._config.set_string(
            options.JOB_PARAMETERS.key, options.format_flink_map(global_job_parameters_dict)
        )
        return self

    def is_use_snapshot_compression(self) -> bool:
        return False

    def set_use_snapshot_compression(self, use_snapshot_compression: bool) -> ExecutionConfig:
        """Only False."""
        if use_snapshot_compression:
            _unsupported(
                "set_use_snapshot_compression",
                "EmbeddedRocksDBStateBackend with execution.checkpointing.incremental "
                "(checkpoints upload only new SST files)",
            )
        return self


__all__ = ["ExecutionConfig"]
