"""lockgate: Flink's state and checkpoint model for PyFlink-style jobs on Apache Spark."""

__version__ = "0.1.0"
