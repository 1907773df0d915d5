"""The JDBC connector at PyFlink's path (``pyflink.datastream.connectors.jdbc``): not there yet."""

from lockgate.common.unsupported import unsupported

_ALTERNATIVE = "FileSink (exactly-once files to load into the database)"
JdbcSink = unsupported("JdbcSink", _ALTERNATIVE, __name__)
JdbcConnectionOptions = unsupported("JdbcConnectionOptions", _ALTERNATIVE, __name__)
JdbcExecutionOptions = unsupported("JdbcExecutionOptions", _ALTERNATIVE, __name__)

__all__ = ["JdbcConnectionOptions", "JdbcExecutionOptions", "JdbcSink"]
