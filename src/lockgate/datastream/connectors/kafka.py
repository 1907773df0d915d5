"""The Kafka connector at PyFlink's path (``pyflink.datastream.connectors.kafka``).

``KafkaSource`` reads topic partitions as splits whose offsets live in lockgate's
checkpoints (``lockgate.connectors.kafka``), on confluent-kafka (``pip install
'lockgate[kafka]'``). The sink is not there yet.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from lockgate.common.serialization import DeserializationSchema
from lockgate.common.unsupported import unsupported
from lockgate.connectors.kafka.client import OWN_CONSUMER_PROPERTIES, ConsumerSettings
from lockgate.connectors.kafka.enumerator import Subscription
from lockgate.connectors.kafka.offsets import OffsetKind, OffsetsSpec, ResetStrategy
from lockgate.connectors.kafka.source import DEFAULT_DISCOVERY_INTERVAL_MS, KafkaPartitionSource
from lockgate.datastream.connectors.dynamic_kafka import KafkaRecordDeserializationSchema


class KafkaTopicPartition:
    """A topic and a partition number."""

    def __init__(self, topic: str, partition: int):
        self._topic = topic
        self._partition = partition

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, KafkaTopicPartition)
            and self._topic == other._topic
            and self._partition == other._partition
        )

    def __hash__(self) -> int:
        return hash((self._topic, self._partition))

    def __repr__(self) -> str:
        return f"KafkaTopicPartition({self._topic!r}, {self._partition})"


class KafkaOffsetResetStrategy(Enum):
    """Where a partition starts when its committed or given offset is missing."""

    LATEST = 0
    EARLIEST = 1
    NONE = 2


class KafkaOffsetsInitializer:
    """Where a source starts (``set_starting_offsets``) or stops (``set_bounded``,
    ``set_unbounded``) reading each partition; resolved when the job starts."""

    def __init__(self, spec: OffsetsSpec):
        self._spec = spec

    @staticmethod
    def committed_offsets(
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.NONE,
    ) -> KafkaOffsetsInitializer:
        """The consumer group's committed offsets (``set_group_id``)."""
        return KafkaOffsetsInitializer(
            OffsetsSpec(OffsetKind.COMMITTED, reset=_reset(offset_reset_strategy))
        )

    @staticmethod
    def timestamp(timestamp: int) -> KafkaOffsetsInitializer:
        """The first record at or after ``timestamp`` (ms); the end where there is none."""
        if type(timestamp) is not int:
            raise TypeError(f"timestamp must be an int (ms), not {timestamp!r}")
        return KafkaOffsetsInitializer(OffsetsSpec(OffsetKind.TIMESTAMP, timestamp=timestamp))

    @staticmethod
    def earliest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer(OffsetsSpec(OffsetKind.EARLIEST))

    @staticmethod
    def latest() -> KafkaOffsetsInitializer:
        """The end of each partition when the job starts (for a read_committed source, the
        last stable offset)."""
        return KafkaOffsetsInitializer(OffsetsSpec(OffsetKind.LATEST))

    @staticmethod
    def offsets(
        offsets: dict[KafkaTopicPartition, int],
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.EARLIEST,
    ) -> KafkaOffsetsInitializer:
        """The given offset of each listed partition; the others by the reset strategy."""
        given = {}
        for partition, offset in offsets.items():
            if not isinstance(partition, KafkaTopicPartition) or type(offset) is not int:
                raise TypeError(
                    f"offsets maps KafkaTopicPartition to an int offset, not {partition!r} to "
                    f"{offset!r}"
                )
            given[(partition._topic, partition._partition)] = offset
        return KafkaOffsetsInitializer(
            OffsetsSpec(OffsetKind.SPECIFIC, offsets=given, reset=_reset(offset_reset_strategy))
        )


def _reset(strategy: KafkaOffsetResetStrategy) -> ResetStrategy:
    if not isinstance(strategy, KafkaOffsetResetStrategy):
        raise TypeError(f"expected a KafkaOffsetResetStrategy, not {strategy!r}")
    return ResetStrategy[strategy.name]


# Properties of Flink's KafkaSource that are not the Kafka client's: set on the source, not
# passed to the consumers
_DISCOVERY = "partition.discovery.interval.ms"
_COMMIT_ON_CHECKPOINT = "commit.offsets.on.checkpoint"
_CLIENT_ID_PREFIX = "client.id.prefix"


class KafkaSource(KafkaPartitionSource):
    """Reads Kafka topics; build one with ``KafkaSource.builder()``.

    Every topic partition is a split: the offsets each epoch reads are fixed on the driver
    and the positions are in every checkpoint, so a restore (at any parallelism) resumes
    exactly where the checkpoint was. Records carry their Kafka timestamps. With
    ``isolation.level=read_committed`` the source skips aborted records."""

    @staticmethod
    def builder() -> KafkaSourceBuilder:
        return KafkaSourceBuilder()


class KafkaSourceBuilder:
    def __init__(self) -> None:
        self._bootstrap_servers: str | None = None
        self._group_id: str | None = None
        self._subscription: Subscription | None = None
        self._starting = OffsetsSpec(OffsetKind.EARLIEST)
        self._stopping: OffsetsSpec | None = None
        self._bounded = False
        self._deserializer: KafkaRecordDeserializationSchema | None = None
        self._properties: dict[str, str] = {}

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSourceBuilder:
        self._bootstrap_servers = bootstrap_servers
        return self

    def set_group_id(self, group_id: str) -> KafkaSourceBuilder:
        """The consumer group the source commits its checkpoints' offsets to (for
        monitoring) and reads ``committed_offsets`` from."""
        self._group_id = group_id
        return self

    def set_topics(self, *topics: str) -> KafkaSourceBuilder:
        self._subscribe(Subscription(topics=tuple(topics)))
        return self

    def set_topic_pattern(self, topic_pattern: str) -> KafkaSourceBuilder:
        """Every topic whose whole name matches the regular expression, also topics made
        after the start (found every ``partition.discovery.interval.ms``)."""
        self._subscribe(Subscription(pattern=topic_pattern))
        return self

    def set_partitions(self, partitions: set[KafkaTopicPartition]) -> KafkaSourceBuilder:
        self._subscribe(
            Subscription(partitions=tuple(sorted((p._topic, p._partition) for p in partitions)))
        )
        return self

    def _subscribe(self, subscription: Subscription) -> None:
        if self._subscription is not None:
            raise ValueError(
                "KafkaSource reads topics, a topic pattern or partitions: set only one of "
                "set_topics, set_topic_pattern and set_partitions"
            )
        self._subscription = subscription

    def set_starting_offsets(
        self, starting_offsets_initializer: KafkaOffsetsInitializer
    ) -> KafkaSourceBuilder:
        self._starting = _spec(starting_offsets_initializer)
        return self

    def set_unbounded(
        self, stopping_offsets_initializer: KafkaOffsetsInitializer
    ) -> KafkaSourceBuilder:
        """Stop reading each partition at these offsets, and keep the job running (a
        streaming job: it ends when cancelled)."""
        self._stopping = _spec(stopping_offsets_initializer)
        self._bounded = False
        return self

    def set_bounded(
        self, stopping_offsets_initializer: KafkaOffsetsInitializer
    ) -> KafkaSourceBuilder:
        """Stop reading each partition at these offsets; the source ends when all have."""
        self._stopping = _spec(stopping_offsets_initializer)
        self._bounded = True
        return self

    def set_value_only_deserializer(
        self, deserialization_schema: DeserializationSchema
    ) -> KafkaSourceBuilder:
        return self.set_deserializer(
            KafkaRecordDeserializationSchema.value_only(deserialization_schema)
        )

    def set_deserializer(
        self, record_deserializer: KafkaRecordDeserializationSchema
    ) -> KafkaSourceBuilder:
        if not isinstance(record_deserializer, KafkaRecordDeserializationSchema):
            raise TypeError(
                f"set_deserializer needs a KafkaRecordDeserializationSchema, not "
                f"{record_deserializer!r}"
            )
        self._deserializer = record_deserializer
        return self

    def set_client_id_prefix(self, prefix: str) -> KafkaSourceBuilder:
        return self.set_property(_CLIENT_ID_PREFIX, prefix)

    def set_property(self, key: str, value: str) -> KafkaSourceBuilder:
        """A property of the Kafka consumers (librdkafka's names, as Kafka's: ``isolation.level``,
        ``security.protocol``, ...), or one of Flink's source properties
        (``partition.discovery.interval.ms``, ``commit.offsets.on.checkpoint``,
        ``client.id.prefix``)."""
        if key in OWN_CONSUMER_PROPERTIES:
            raise ValueError(
                f"KafkaSource sets {key!r} itself ({OWN_CONSUMER_PROPERTIES[key]}): leave it out"
            )
        if key == "bootstrap.servers":
            return self.set_bootstrap_servers(str(value))
        if key == "group.id":
            return self.set_group_id(str(value))
        self._properties[key] = str(value)
        return self

    def set_properties(self, props: dict[str, str]) -> KafkaSourceBuilder:
        for key, value in props.items():
            self.set_property(key, value)
        return self

    def build(self) -> KafkaSource:
        if not self._bootstrap_servers:
            raise ValueError("KafkaSource needs set_bootstrap_servers")
        if self._subscription is None:
            raise ValueError("KafkaSource needs set_topics, set_topic_pattern or set_partitions")
        if self._deserializer is None:
            raise ValueError("KafkaSource needs set_value_only_deserializer or set_deserializer")
        properties = dict(self._properties)
        discovery = _int_property(
            properties.pop(_DISCOVERY, str(DEFAULT_DISCOVERY_INTERVAL_MS)), _DISCOVERY
        )
        commit = properties.pop(_COMMIT_ON_CHECKPOINT, "true").lower()
        if commit not in ("true", "false"):
            raise ValueError(f"{_COMMIT_ON_CHECKPOINT} must be true or false, not {commit!r}")
        prefix = properties.pop(_CLIENT_ID_PREFIX, None)
        if (
            self._starting.kind is OffsetKind.COMMITTED
            or (self._stopping is not None and self._stopping.kind is OffsetKind.COMMITTED)
        ) and self._group_id is None:
            raise ValueError("KafkaOffsetsInitializer.committed_offsets needs set_group_id")
        source = KafkaSource(
            ConsumerSettings(self._bootstrap_servers, properties, self._group_id, prefix),
            self._subscription,
            self._starting,
            self._stopping,
            self._bounded,
            -1 if self._bounded else discovery,
            commit == "true",
            self._deserializer.message_reader(),
        )
        return source


def _spec(initializer: KafkaOffsetsInitializer) -> OffsetsSpec:
    if not isinstance(initializer, KafkaOffsetsInitializer):
        raise TypeError(f"expected a KafkaOffsetsInitializer, not {initializer!r}")
    return initializer._spec


def _int_property(value: Any, key: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{key} must be an integer (milliseconds), not {value!r}") from None


_SINK = "FileSink (the Kafka sink is not there yet)"
_LEGACY = "KafkaSource (FlinkKafkaConsumer is deprecated in Flink too)"
FlinkKafkaConsumer = unsupported("FlinkKafkaConsumer", _LEGACY, __name__)
FlinkKafkaProducer = unsupported("FlinkKafkaProducer", _SINK, __name__)
KafkaSink = unsupported("KafkaSink", _SINK, __name__)
KafkaSinkBuilder = unsupported("KafkaSinkBuilder", _SINK, __name__)
Semantic = unsupported("Semantic", _SINK, __name__)
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
