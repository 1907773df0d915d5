"""PyFlink's ``pyflink.datastream.time_domain``."""

from lockgate.runtime.subtaskhost.context import TimeDomain

__all__ = ["TimeDomain"]
