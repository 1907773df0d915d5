"""The Elasticsearch connector at PyFlink's path (``pyflink.datastream.connectors.elasticsearch``):
not there yet."""

from lockgate.common.unsupported import unsupported

_ALTERNATIVE = "FileSink (exactly-once files to index)"
FlushBackoffType = unsupported("FlushBackoffType", _ALTERNATIVE, __name__)
ElasticsearchEmitter = unsupported("ElasticsearchEmitter", _ALTERNATIVE, __name__)
Elasticsearch6SinkBuilder = unsupported("Elasticsearch6SinkBuilder", _ALTERNATIVE, __name__)
Elasticsearch7SinkBuilder = unsupported("Elasticsearch7SinkBuilder", _ALTERNATIVE, __name__)
ElasticsearchSink = unsupported("ElasticsearchSink", _ALTERNATIVE, __name__)

__all__ = [
    "Elasticsearch6SinkBuilder",
    "Elasticsearch7SinkBuilder",
    "ElasticsearchEmitter",
    "ElasticsearchSink",
    "FlushBackoffType",
]
