"""The Pulsar connector at PyFlink's path (``pyflink.datastream.connectors.pulsar``):
not there yet."""

from lockgate.common.unsupported import unsupported

_ALTERNATIVE = "FileSink"
_SOURCE = "FileSource (monitor_continuously for a stream) or env.from_collection"
PulsarSource = unsupported("PulsarSource", _SOURCE, __name__)
PulsarSourceBuilder = unsupported("PulsarSourceBuilder", _SOURCE, __name__)
StartCursor = unsupported("StartCursor", _SOURCE, __name__)
StopCursor = unsupported("StopCursor", _SOURCE, __name__)
RangeGenerator = unsupported("RangeGenerator", _SOURCE, __name__)
PulsarSink = unsupported("PulsarSink", _ALTERNATIVE, __name__)
PulsarSinkBuilder = unsupported("PulsarSinkBuilder", _ALTERNATIVE, __name__)
MessageDelayer = unsupported("MessageDelayer", _ALTERNATIVE, __name__)
TopicRoutingMode = unsupported("TopicRoutingMode", _ALTERNATIVE, __name__)

__all__ = [
    "MessageDelayer",
    "PulsarSink",
    "PulsarSinkBuilder",
    "PulsarSource",
    "PulsarSourceBuilder",
    "RangeGenerator",
    "StartCursor",
    "StopCursor",
    "TopicRoutingMode",
]
