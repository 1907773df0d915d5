"""The Kafka connector at PyFlink's path (``pyflink.datastream.connectors.kafka``): not there
yet."""

from lockgate.common.unsupported import unsupported

_SOURCE = "FileSource (monitor_continuously for a stream) or env.from_collection"
_SINK = "FileSink"
FlinkKafkaConsumer = unsupported("FlinkKafkaConsumer", _SOURCE, __name__)
FlinkKafkaProducer = unsupported("FlinkKafkaProducer", _SINK, __name__)
KafkaSource = unsupported("KafkaSource", _SOURCE, __name__)
KafkaSourceBuilder = unsupported("KafkaSourceBuilder", _SOURCE, __name__)
KafkaSink = unsupported("KafkaSink", _SINK, __name__)
KafkaSinkBuilder = unsupported("KafkaSinkBuilder", _SINK, __name__)
Semantic = unsupported("Semantic", _SINK, __name__)
KafkaTopicPartition = unsupported("KafkaTopicPartition", _SOURCE, __name__)
KafkaOffsetsInitializer = unsupported("KafkaOffsetsInitializer", _SOURCE, __name__)
KafkaOffsetResetStrategy = unsupported("KafkaOffsetResetStrategy", _SOURCE, __name__)
KafkaRecordSerializationSchema = unsupported("KafkaRecordSerializationSchema", _SINK, __name__)
KafkaRecordSerializationSchemaBuilder = unsupported(
    "KafkaRecordSerializationSchemaBuilder", _SINK, __name__
)
KafkaTopicSelector = unsupported("KafkaTopicSelector", _SINK, __name__)

__all__ = [
    "FlinkKafkaConsumer",
    "FlinkKafkaProducer",
    "KafkaOffsetResetStrategy",
    "KafkaOffsetsInitializer",
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
    "KafkaSource",
    "KafkaSourceBuilder",
    "KafkaTopicPartition",
    "KafkaTopicSelector",
    "Semantic",
]
