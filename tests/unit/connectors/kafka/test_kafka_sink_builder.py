"""KafkaSink's builders: what a record becomes, and what would not take effect is refused."""

from __future__ import annotations

import pytest

from lockgate.common.serialization import SimpleStringSchema
from lockgate.datastream.connectors import DeliveryGuarantee
from lockgate.datastream.connectors.kafka import (
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaTopicSelector,
)


class ByLength(KafkaTopicSelector):
    def apply(self, data):
        return "long" if len(data) > 3 else "short"


def test_a_record_becomes_topic_key_and_value():
    fixed = (
        KafkaRecordSerializationSchema.builder()
        .set_topic("out")
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    assert fixed.serialize("héllo") == ("out", None, "héllo".encode())
    selected = (
        KafkaRecordSerializationSchema.builder()
        .set_topic_selector(ByLength())
        .set_key_serialization_schema(SimpleStringSchema())
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    assert selected.serialize("abcd") == ("long", b"abcd", b"abcd")
    assert selected.serialize("ab")[0] == "short"
    with pytest.raises(TypeError, match=r"SimpleStringSchema serializes strings, not int"):
        fixed.serialize(3)


def test_the_builders_refuse_what_would_not_take_effect():
    with pytest.raises(ValueError, match=r"one of set_topic and set_topic_selector"):
        KafkaRecordSerializationSchema.builder().set_value_serialization_schema(
            SimpleStringSchema()
        ).build()
    with pytest.raises(TypeError, match=r"KafkaTopicSelector or a callable"):
        KafkaRecordSerializationSchema.builder().set_topic_selector("out")
    with pytest.raises(ValueError, match=r"sets 'transactional.id' itself"):
        KafkaSink.builder().set_property("transactional.id", "x")
    with pytest.raises(ValueError, match=r"EXACTLY_ONCE needs set_transactional_id_prefix"):
        KafkaSink.builder().set_bootstrap_servers("127.0.0.1:9092").set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic("out")
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        ).set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE).build()
    with pytest.raises(ValueError, match=r"needs set_record_serializer"):
        KafkaSink.builder().set_bootstrap_servers("127.0.0.1:9092").build()


def test_idempotence_only_where_the_given_properties_allow_it():
    from confluent_kafka import Producer

    from lockgate.connectors.kafka.sink import ProducerSettings

    assert ProducerSettings("127.0.0.1:1", "NONE", None).config("c")["enable.idempotence"]
    config = ProducerSettings("127.0.0.1:1", "NONE", None, {"acks": "1"}).config("c")
    assert config["acks"] == "1" and "enable.idempotence" not in config
    Producer(config)  # librdkafka takes it (acks=1 with idempotence it refuses)
