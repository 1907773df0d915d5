"""PyFlink's ``pyflink.datastream.timerservice``."""

from lockgate.runtime.taskexecutor.context import TimerService

__all__ = ["TimerService"]
