"""The Kafka connector at PyFlink's path (``pyflink.datastream.connectors.kafka``).

``KafkaSource`` reads topic partitions as splits whose offsets live in lockgate's
checkpoints, and ``KafkaSink`` produces with delivery guarantee NONE, AT_LEAST_ONCE or
EXACTLY_ONCE (``lockgate.connectors.kafka``), on confluent-kafka
(``pip install 'lockgate[kafka]'``).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

from lockgate.common.serialization import DeserializationSchema, SerializationSchema
from lockgate.common.unsupported import unsupported
from lockgate.connectors.kafka.client import OWN_CONSUMER_PROPERTIES, ConsumerSettings
from lockgate.connectors.kafka.committer import KafkaCommitter
from lockgate.connectors.kafka.enumerator import KafkaSourceSettings, Subscription
from lockgate.connectors.kafka.exactly_once_writer import kafka_exactly_once_writer
from lockgate.connectors.kafka.offsets import OffsetKind, OffsetsSpec, ResetStrategy
from lockgate.connectors.kafka.sink import (
    AT_LEAST_ONCE,
    EXACTLY_ONCE,
    NONE,
    OWN_PRODUCER_PROPERTIES,
    ProducerSettings,
)
from lockgate.connectors.kafka.source import DEFAULT_DISCOVERY_INTERVAL_MS, KafkaPartitionSource
from lockgate.connectors.kafka.writer import kafka_sink_writer
from lockgate.datastream.connectors import DeliveryGuarantee
from lockgate.datastream.connectors.dynamic_kafka import KafkaRecordDeserializationSchema
from lockgate.graph.operator_spec import OperatorKind, OperatorSpec


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
        settings = KafkaSourceSettings(
            ConsumerSettings(self._bootstrap_servers, properties, self._group_id, prefix),
            self._subscription,
            self._starting,
            self._stopping,
            self._bounded,
            -1 if self._bounded else discovery,
            commit == "true",
        )
        return KafkaSource(settings, self._deserializer.message_reader())


def _spec(initializer: KafkaOffsetsInitializer) -> OffsetsSpec:
    if not isinstance(initializer, KafkaOffsetsInitializer):
        raise TypeError(f"expected a KafkaOffsetsInitializer, not {initializer!r}")
    return initializer._spec


def _int_property(value: Any, key: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{key} must be an integer (milliseconds), not {value!r}") from None


class KafkaTopicSelector:
    """Chooses the topic of each record (``set_topic_selector``)."""

    def apply(self, data: Any) -> str:
        raise NotImplementedError(f"{type(self).__name__} must override apply(data)")


class KafkaRecordSerializationSchema(SerializationSchema):
    """How a record becomes a Kafka message: its topic, key and value; build one with
    ``KafkaRecordSerializationSchema.builder()``."""

    def __init__(
        self,
        topic: str | None,
        topic_selector: Callable[[Any], str] | None,
        key_schema: SerializationSchema | None,
        value_schema: SerializationSchema,
    ):
        self.topic = topic  # a fixed topic (None: the selector's)
        self.topic_selector = topic_selector
        self.key_schema = key_schema
        self.value_schema = value_schema

    @staticmethod
    def builder() -> KafkaRecordSerializationSchemaBuilder:
        return KafkaRecordSerializationSchemaBuilder()

    def serialize(self, value: Any) -> tuple[str, bytes | None, bytes]:  # type: ignore[override]
        topic = self.topic if self.topic is not None else self.topic_selector(value)  # type: ignore[misc]
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"the topic selector returned {topic!r}, not a topic name")
        key = self.key_schema.serialize(value) if self.key_schema is not None else None
        return topic, key, self.value_schema.serialize(value)


class KafkaRecordSerializationSchemaBuilder:
    def __init__(self) -> None:
        self._topic: str | None = None
        self._selector: Callable[[Any], str] | None = None
        self._key: SerializationSchema | None = None
        self._value: SerializationSchema | None = None

    def set_topic(self, topic: str) -> KafkaRecordSerializationSchemaBuilder:
        self._topic = topic
        return self

    def set_topic_selector(
        self, topic_selector: Callable[[Any], str] | KafkaTopicSelector
    ) -> KafkaRecordSerializationSchemaBuilder:
        if isinstance(topic_selector, KafkaTopicSelector):
            self._selector = topic_selector.apply
        elif callable(topic_selector):
            self._selector = topic_selector
        else:
            raise TypeError("topic_selector must be KafkaTopicSelector or a callable")
        return self

    def set_key_serialization_schema(
        self, key_serialization_schema: SerializationSchema
    ) -> KafkaRecordSerializationSchemaBuilder:
        self._key = _schema(key_serialization_schema, "key")
        return self

    def set_value_serialization_schema(
        self, value_serialization_schema: SerializationSchema
    ) -> KafkaRecordSerializationSchemaBuilder:
        self._value = _schema(value_serialization_schema, "value")
        return self

    def build(self) -> KafkaRecordSerializationSchema:
        if (self._topic is None) == (self._selector is None):
            raise ValueError(
                "KafkaRecordSerializationSchema needs one of set_topic and set_topic_selector"
            )
        if self._value is None:
            raise ValueError("KafkaRecordSerializationSchema needs set_value_serialization_schema")
        return KafkaRecordSerializationSchema(self._topic, self._selector, self._key, self._value)


def _schema(schema: Any, what: str) -> SerializationSchema:
    if not isinstance(schema, SerializationSchema):
        raise TypeError(
            f"the {what} schema must be a SerializationSchema (SimpleStringSchema, ...), not "
            f"{schema!r}"
        )
    return schema


class KafkaSink:
    """Writes a stream to Kafka; build one with ``KafkaSink.builder()``.

    Delivery NONE (the default, as in Flink); AT_LEAST_ONCE: at the end of every epoch the
    brokers have acknowledged all of its records; EXACTLY_ONCE: records are produced in
    Kafka transactions when the checkpoint that covers them completes (it needs
    checkpointing in EXACTLY_ONCE mode and ``set_transactional_id_prefix``)."""

    name = "Kafka Sink"

    def __init__(self, settings: ProducerSettings):
        self._settings = settings

    @staticmethod
    def builder() -> KafkaSinkBuilder:
        return KafkaSinkBuilder()

    def operator_spec(self) -> OperatorSpec:
        settings = self._settings
        if settings.guarantee != EXACTLY_ONCE:
            return OperatorSpec(
                OperatorKind.FACTORY, kafka_sink_writer(settings), validator=settings.validate
            )
        return OperatorSpec(
            OperatorKind.FACTORY,
            kafka_exactly_once_writer(settings),
            validator=settings.validate,
            committer=KafkaCommitter(settings),
            exactly_once=True,
        )

    def get_transformer(self) -> None:
        """None: the topic selector runs in the sink's writer, no stream goes before it."""
        return None


class KafkaSinkBuilder:
    def __init__(self) -> None:
        self._bootstrap_servers: str | None = None
        self._guarantee = DeliveryGuarantee.NONE
        self._prefix: str | None = None
        self._serializer: KafkaRecordSerializationSchema | None = None
        self._properties: dict[str, str] = {}

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSinkBuilder:
        self._bootstrap_servers = bootstrap_servers
        return self

    def set_delivery_guarantee(self, delivery_guarantee: DeliveryGuarantee) -> KafkaSinkBuilder:
        if not isinstance(delivery_guarantee, DeliveryGuarantee):
            raise TypeError(f"expected a DeliveryGuarantee, not {delivery_guarantee!r}")
        self._guarantee = delivery_guarantee
        return self

    def set_transactional_id_prefix(self, transactional_id_prefix: str) -> KafkaSinkBuilder:
        """The prefix of the sink's transactional ids, ``<prefix>-<subtask>`` (EXACTLY_ONCE
        needs one, unique to the job among those writing to the brokers; with another
        guarantee it has no effect, as in Flink)."""
        self._prefix = transactional_id_prefix
        return self

    def set_record_serializer(
        self, record_serializer: KafkaRecordSerializationSchema
    ) -> KafkaSinkBuilder:
        if not isinstance(record_serializer, KafkaRecordSerializationSchema):
            raise TypeError(
                f"set_record_serializer needs a KafkaRecordSerializationSchema, not "
                f"{record_serializer!r}"
            )
        self._serializer = record_serializer
        return self

    def set_property(self, key: str, value: str) -> KafkaSinkBuilder:
        """A property of the Kafka producers (librdkafka's names, as Kafka's for the common
        ones: ``acks``, ``compression.type``, ``security.protocol``, ...)."""
        if key in OWN_PRODUCER_PROPERTIES:
            raise ValueError(
                f"KafkaSink sets {key!r} itself ({OWN_PRODUCER_PROPERTIES[key]}): leave it out"
            )
        if key == "bootstrap.servers":
            return self.set_bootstrap_servers(str(value))
        self._properties[key] = str(value)
        return self

    def build(self) -> KafkaSink:
        if not self._bootstrap_servers:
            raise ValueError("KafkaSink needs set_bootstrap_servers")
        if self._serializer is None:
            raise ValueError("KafkaSink needs set_record_serializer")
        guarantee = {
            DeliveryGuarantee.AT_LEAST_ONCE: AT_LEAST_ONCE,
            DeliveryGuarantee.EXACTLY_ONCE: EXACTLY_ONCE,
        }.get(self._guarantee, NONE)
        if guarantee == EXACTLY_ONCE and not self._prefix:
            raise ValueError(
                "KafkaSink with DeliveryGuarantee.EXACTLY_ONCE needs set_transactional_id_prefix "
                "(unique to the job, as in Flink: its transactional ids are <prefix>-<subtask>)"
            )
        return KafkaSink(
            ProducerSettings(
                self._bootstrap_servers,
                guarantee,
                self._serializer,
                dict(self._properties),
                self._prefix if guarantee == EXACTLY_ONCE else None,
            )
        )


_LEGACY = "KafkaSource (FlinkKafkaConsumer is deprecated in Flink too)"
FlinkKafkaConsumer = unsupported("FlinkKafkaConsumer", _LEGACY, __name__)
FlinkKafkaProducer = unsupported(
    "FlinkKafkaProducer", "KafkaSink (FlinkKafkaProducer is deprecated in Flink too)", __name__
)
Semantic = unsupported("Semantic", "KafkaSink with a DeliveryGuarantee", __name__)

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
