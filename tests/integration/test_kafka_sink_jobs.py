"""KafkaSink in jobs on Spark, against a real broker (``kafka_broker``): AT_LEAST_ONCE loses
nothing when a job fails and restores; NONE produces as records come; records go to the topic
their selector names, keyed by their key schema; what cannot work fails before the job
(EXACTLY_ONCE: ``test_kafka_exactly_once_jobs.py``)."""

from __future__ import annotations

from collections import Counter

import pytest
from exactly_once_job import (
    KEYS,
    CountPerKey,
    Trap,
    checkpointed_env,
    record_in_epoch,
    records,
    reference,
)

from lockgate.common import WatermarkStrategy
from lockgate.common.serialization import SimpleStringSchema
from lockgate.datastream.connectors import DeliveryGuarantee
from lockgate.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)

SPLITS = 2


def sink(broker, guarantee, **schema) -> KafkaSink:
    serializer = KafkaRecordSerializationSchema.builder().set_value_serialization_schema(
        SimpleStringSchema()
    )
    if "topic" in schema:
        serializer.set_topic(schema["topic"])
    if "selector" in schema:
        serializer.set_topic_selector(schema["selector"])
    if "key" in schema:
        serializer.set_key_serialization_schema(schema["key"])
    return (
        KafkaSink.builder()
        .set_bootstrap_servers(broker.bootstrap_servers)
        .set_delivery_guarantee(guarantee)
        .set_record_serializer(serializer.build())
        .build()
    )


def test_at_least_once_loses_nothing_when_the_job_fails_and_restores(
    make_env, tmp_path, kafka_broker
):
    source_topic = kafka_broker.create_topic(SPLITS)
    kafka_broker.produce(source_topic, [(s, f"{s},{i}".encode()) for s, i in records(SPLITS)])
    out = kafka_broker.create_topic(2)
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 2)
    trap = Trap(record_in_epoch(3, split=1), tmp_path / "markers", times=2)
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka_broker.bootstrap_servers)
        .set_topics(source_topic)
        .set_value_only_deserializer(SimpleStringSchema())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "in")
        .map(lambda line: tuple(int(x) for x in line.split(",")))
        .key_by(lambda r: (r[0], r[1] % KEYS))
        .process(CountPerKey(trap))
        .uid("count")
        .sink_to(sink(kafka_broker, DeliveryGuarantee.AT_LEAST_ONCE, topic=out))
        .uid("kafka-sink")
    )
    result = env.execute("at least once")
    assert trap.fired() == 2 and result.restarts >= 1  # the epoch ran again: a failover
    produced = Counter(value for _, value, _ in kafka_broker.read(out, 2))
    missing = reference(SPLITS) - produced
    assert not missing, f"lost: {sorted(missing)[:5]}"
    assert sum(produced.values()) >= sum(reference(SPLITS).values())


def test_records_go_to_their_selected_topic_keyed_and_partitioned_as_java_clients_do(
    make_env, kafka_broker
):
    even, odd = kafka_broker.create_topic(3), kafka_broker.create_topic(3)
    env = make_env(2)
    (
        env.from_collection([f"k{i % 5}:{i}" for i in range(40)]).sink_to(
            sink(
                kafka_broker,
                DeliveryGuarantee.NONE,
                selector=lambda line: even if int(line.split(":")[1]) % 2 == 0 else odd,
                key=KeyOf(),
            )
        )
    )
    env.execute("topic selector")
    found = kafka_broker.read(even, 3) + kafka_broker.read(odd, 3)
    assert sorted(value for _, value, _ in found) == sorted(f"k{i % 5}:{i}" for i in range(40))
    partitions: dict[bytes, set[int]] = {}
    for key, _, partition in found:
        partitions.setdefault(key, set()).add(partition)
    assert all(len(p) == 1 for p in partitions.values())  # one partition per key and topic
    # Java's default partitioner: murmur2 of the key, positive, modulo the partitions
    assert {key: p.pop() for key, p in partitions.items()} == {
        k: java_partition(k, 3) for k in partitions
    }


class KeyOf(SimpleStringSchema):
    def serialize(self, value):
        return value.split(":")[0].encode()


def java_partition(key: bytes, partitions: int) -> int:
    """Kafka's ``Utils.toPositive(Utils.murmur2(key)) % partitions``."""
    m, r = 0x5BD1E995, 24
    h = (0x9747B28C ^ len(key)) & 0xFFFFFFFF
    length4 = len(key) // 4
    for i in range(length4):
        k = int.from_bytes(key[i * 4 : i * 4 + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    rest = key[length4 * 4 :]
    if len(rest) >= 3:
        h ^= rest[2] << 16
    if len(rest) >= 2:
        h ^= rest[1] << 8
    if rest:
        h ^= rest[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return (h & 0x7FFFFFFF) % partitions


def test_a_missing_topic_fails_before_the_job_starts(make_env, kafka_broker):
    env = make_env(1)
    env.from_collection(["a"]).sink_to(
        sink(kafka_broker, DeliveryGuarantee.AT_LEAST_ONCE, topic="no-such-topic")
    )
    with pytest.raises(Exception, match=r"topic 'no-such-topic' does not exist"):
        env.execute("missing topic")
