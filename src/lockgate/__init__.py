"""lockgate: Flink's state and checkpoint model for PyFlink-style jobs on Apache Spark."""

from lockgate.common.version import __version__

__all__ = ["__version__"]
