"""The Cassandra connector at PyFlink's path (``pyflink.datastream.connectors.cassandra``):
not there yet."""

from lockgate.common.unsupported import unsupported

_ALTERNATIVE = "FileSink (exactly-once files to load into Cassandra)"
CassandraSink = unsupported("CassandraSink", _ALTERNATIVE, __name__)
ConsistencyLevel = unsupported("ConsistencyLevel", _ALTERNATIVE, __name__)
MapperOptions = unsupported("MapperOptions", _ALTERNATIVE, __name__)
ClusterBuilder = unsupported("ClusterBuilder", _ALTERNATIVE, __name__)
CassandraCommitter = unsupported("CassandraCommitter", _ALTERNATIVE, __name__)
CassandraFailureHandler = unsupported("CassandraFailureHandler", _ALTERNATIVE, __name__)

__all__ = [
    "CassandraCommitter",
    "CassandraFailureHandler",
    "CassandraSink",
    "ClusterBuilder",
    "ConsistencyLevel",
    "MapperOptions",
]
