"""``ExecutionConfig`` at PyFlink's path (``pyflink.common.execution_config``): not there yet."""

from lockgate.common.unsupported import unsupported

ExecutionConfig = unsupported(
    "ExecutionConfig",
    "StreamExecutionEnvironment's setters (set_parallelism, ...) or a Configuration",
    __name__,
)

__all__ = ["ExecutionConfig"]
