"""The RabbitMQ connector at PyFlink's path (``pyflink.datastream.connectors.rabbitmq``):
not there yet."""

from lockgate.common.unsupported import unsupported

_ALTERNATIVE = "FileSink"
_SOURCE = "FileSource (monitor_continuously for a stream) or env.from_collection"
RMQConnectionConfig = unsupported("RMQConnectionConfig", _ALTERNATIVE, __name__)
RMQSource = unsupported("RMQSource", _SOURCE, __name__)
RMQSink = unsupported("RMQSink", _ALTERNATIVE, __name__)

__all__ = [
    "RMQConnectionConfig",
    "RMQSink",
    "RMQSource",
]
