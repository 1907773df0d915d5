"""The events the Kafka-fed benchmarks (``kafka.py``, ``postgres.py``) read: ``key,sent_ms``
lines in a 2-partition topic, key ``i % keys`` in partition ``key % 2`` (a key's events stay
in order). Driver-side helpers only: what runs in tasks stays in each script, which Spark
pickles by value."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Producer

from lockgate.common.serialization import SimpleStringSchema
from lockgate.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaSource


def _produce(producer: Producer, topic: str, key: int, sent: int) -> None:
    while True:
        try:
            producer.produce(topic, f"{key},{sent}".encode(), partition=key % 2)
            return
        except BufferError:  # the producer's queue is full: let it send
            producer.poll(0.1)


def fill_topic(broker, events: int, keys: int) -> str:
    """A new topic holding ``events`` events, all sent now."""
    topic = broker.create_topic(2)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    now = int(time.time() * 1000)
    for i in range(events):
        _produce(producer, topic, i % keys, now)
    producer.flush(60)
    return topic


def feed(
    broker, topic: str, rate: int, total: int, keys: int, sent: Callable[[int, int], None]
) -> None:
    """Send ``total`` events at ``rate`` per second, telling ``sent(i, ms)`` of each."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 1})
    started = time.monotonic()
    for i in range(total):
        pause = started + i / rate - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        now = int(time.time() * 1000)
        sent(i, now)
        _produce(producer, topic, i % keys, now)
        producer.poll(0)
    producer.flush(60)


def events_source(broker, topic: str, bounded: bool) -> KafkaSource:
    """The topic's events as lines: up to its end at the start (``bounded``), or for ever."""
    builder = (
        KafkaSource.builder()
        .set_bootstrap_servers(broker.bootstrap_servers)
        .set_topics(topic)
        .set_value_only_deserializer(SimpleStringSchema())
    )
    if bounded:
        builder.set_bounded(KafkaOffsetsInitializer.latest())
    return builder.build()
