"""The Kinesis connectors at PyFlink's path (``pyflink.datastream.connectors.kinesis``):
not there yet."""

from lockgate.common.unsupported import unsupported

_ALTERNATIVE = "FileSink"
_SOURCE = "FileSource (monitor_continuously for a stream) or env.from_collection"
KinesisShardAssigner = unsupported("KinesisShardAssigner", _SOURCE, __name__)
KinesisDeserializationSchema = unsupported("KinesisDeserializationSchema", _SOURCE, __name__)
WatermarkTracker = unsupported("WatermarkTracker", _SOURCE, __name__)
PartitionKeyGenerator = unsupported("PartitionKeyGenerator", _ALTERNATIVE, __name__)
FlinkKinesisConsumer = unsupported("FlinkKinesisConsumer", _SOURCE, __name__)
KinesisStreamsSink = unsupported("KinesisStreamsSink", _ALTERNATIVE, __name__)
KinesisStreamsSinkBuilder = unsupported("KinesisStreamsSinkBuilder", _ALTERNATIVE, __name__)
KinesisFirehoseSink = unsupported("KinesisFirehoseSink", _ALTERNATIVE, __name__)
KinesisFirehoseSinkBuilder = unsupported("KinesisFirehoseSinkBuilder", _ALTERNATIVE, __name__)

__all__ = [
    "FlinkKinesisConsumer",
    "KinesisDeserializationSchema",
    "KinesisFirehoseSink",
    "KinesisFirehoseSinkBuilder",
    "KinesisShardAssigner",
    "KinesisStreamsSink",
    "KinesisStreamsSinkBuilder",
    "PartitionKeyGenerator",
    "WatermarkTracker",
]
