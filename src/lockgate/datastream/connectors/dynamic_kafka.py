"""The dynamic Kafka source at PyFlink's path (``pyflink.datastream.connectors.dynamic_kafka``):
not there yet, but for ``KafkaRecordDeserializationSchema``, which ``KafkaSource`` uses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from lockgate.common.serialization import DeserializationSchema
from lockgate.common.unsupported import unsupported


class KafkaRecord(NamedTuple):
    """A Kafka message as a ``KafkaRecordDeserializationSchema`` sees it (Flink: a
    ``ConsumerRecord``)."""

    topic: str
    partition: int
    offset: int
    timestamp: int | None  # ms; None when the message has none
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]


class KafkaRecordDeserializationSchema:
    """How a Kafka message becomes a record: ``value_only(schema)`` decodes the value, or
    subclass it and override ``deserialize`` to use the key, headers, offset, ... A
    ``deserialize`` that returns None drops the message."""

    @staticmethod
    def value_only(
        deserialization_schema: DeserializationSchema,
    ) -> KafkaRecordDeserializationSchema:
        if not isinstance(deserialization_schema, DeserializationSchema):
            raise TypeError(
                f"value_only needs a DeserializationSchema (SimpleStringSchema, ...), not "
                f"{deserialization_schema!r}"
            )
        return _ValueOnly(deserialization_schema)

    def open(self) -> None:
        """Called once in each task process before the first ``deserialize``."""

    def deserialize(self, record: KafkaRecord) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must override deserialize(record)")

    def message_reader(self) -> Callable[[Any], Any]:
        """What the source's reader calls on each confluent-kafka message."""
        return _MessageReader(self.open, lambda message: self.deserialize(_record(message)))


class _ValueOnly(KafkaRecordDeserializationSchema):
    def __init__(self, schema: DeserializationSchema):
        self.schema = schema

    def open(self) -> None:
        self.schema.open()

    def deserialize(self, record: KafkaRecord) -> Any:
        return self.schema.deserialize(record.value)

    def message_reader(self) -> Callable[[Any], Any]:
        return _MessageReader(
            self.schema.open, lambda message: self.schema.deserialize(message.value())
        )


def _record(message: Any) -> KafkaRecord:
    kind, timestamp = message.timestamp()
    return KafkaRecord(
        message.topic(),
        message.partition(),
        message.offset(),
        timestamp if kind else None,  # 0: TIMESTAMP_NOT_AVAILABLE
        message.key(),
        message.value(),
        list(message.headers() or ()),
    )


class _MessageReader:
    """Opens the schema once in the task's process, then decodes each message."""

    def __init__(self, open_schema: Callable[[], None], decode: Callable[[Any], Any]):
        self.open_schema = open_schema
        self.decode = decode
        self.opened = False

    def __call__(self, message: Any) -> Any:
        if not self.opened:
            self.open_schema()
            self.opened = True
        return self.decode(message)


_ALTERNATIVE = "FileSource (monitor_continuously for a stream) or env.from_collection"
DynamicKafkaSource = unsupported("DynamicKafkaSource", _ALTERNATIVE, __name__)
DynamicKafkaSourceBuilder = unsupported("DynamicKafkaSourceBuilder", _ALTERNATIVE, __name__)
KafkaMetadataService = unsupported("KafkaMetadataService", _ALTERNATIVE, __name__)
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
