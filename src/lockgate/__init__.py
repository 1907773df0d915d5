"""lockgate: Flink's state and checkpoint model for PyFlink-style jobs on Apache Spark."""

import logging

from lockgate.common.version import __version__

# lockgate's diagnostics go to the loggers under "lockgate", and nowhere unless the application
# configures logging: without a handler of its own, Python's last-resort handler would write
# lockgate's warnings to stderr, among a local job's printed records.
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = ["__version__"]
