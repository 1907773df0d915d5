"""PyFlink's ``pyflink.datastream.timerservice``."""

from lockgate.runtime.subtaskhost.context import TimerService

__all__ = ["TimerService"]
