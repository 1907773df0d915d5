"""``RuntimeExecutionMode`` at PyFlink's path (``pyflink.datastream.execution_mode``)."""

from lockgate.datastream.stream_execution_environment import RuntimeExecutionMode

__all__ = ["RuntimeExecutionMode"]
