"""The dynamic Kafka source at PyFlink's path (``pyflink.datastream.connectors.dynamic_kafka``):
not there yet."""

from lockgate.common.unsupported import unsupported

_ALTERNATIVE = "FileSource (monitor_continuously for a stream) or env.from_collection"
DynamicKafkaSource = unsupported("DynamicKafkaSource", _ALTERNATIVE, __name__)
DynamicKafkaSourceBuilder = unsupported("DynamicKafkaSourceBuilder", _ALTERNATIVE, __name__)
KafkaMetadataService = unsupported("KafkaMetadataService", _ALTERNATIVE, __name__)
KafkaRecordDeserializationSchema = unsupported(
    "KafkaRecordDeserializationSchema", _ALTERNATIVE, __name__
)
KafkaStreamSetSubscriber = unsupported("KafkaStreamSetSubscriber", _ALTERNATIVE, __name__)
KafkaStreamSubscriber = unsupported("KafkaStreamSubscriber", _ALTERNATIVE, __name__)
StreamPatternSubscriber = unsupported("StreamPatternSubscriber", _ALTERNATIVE, __name__)
SingleClusterTopicMetadataService = unsupported(
    "SingleClusterTopicMetadataService", _ALTERNATIVE, __name__
)

__all__ = [
    "DynamicKafkaSource",
    "DynamicKafkaSourceBuilder",
    "KafkaMetadataService",
    "KafkaRecordDeserializationSchema",
    "KafkaStreamSetSubscriber",
    "KafkaStreamSubscriber",
    "SingleClusterTopicMetadataService",
    "StreamPatternSubscriber",
]
