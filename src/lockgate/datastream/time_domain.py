"""PyFlink's ``pyflink.datastream.time_domain``."""

from lockgate.runtime.taskexecutor.context import TimeDomain

__all__ = ["TimeDomain"]
