"""The Kafka source against a real broker (``kafka_broker``), without Spark: what the
driver's enumerator plans and what a task's reader reads of it."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from lockgate.common.serialization import SimpleStringSchema
from lockgate.connectors.kafka.enumerator import java_string_hash, owner
from lockgate.core.source import SourceError, SplitProgress
from lockgate.datastream.connectors.dynamic_kafka import (
    KafkaRecord,
    KafkaRecordDeserializationSchema,
)
from lockgate.datastream.connectors.kafka import (
    KafkaOffsetResetStrategy,
    KafkaOffsetsInitializer,
    KafkaSource,
    KafkaTopicPartition,
)

WHERE = "the test's source"


def recent_minute() -> int:
    """A time (ms) of the last minute, at the start of a minute: the broker deletes records
    older than its retention (7 days), so a test's records must be recent."""
    return int(time.time() * 1000) // 60_000 * 60_000 - 60_000


def source(broker, topic, **options):
    builder = (
        KafkaSource.builder()
        .set_bootstrap_servers(broker.bootstrap_servers)
        .set_value_only_deserializer(SimpleStringSchema())
    )
    if "pattern" in options:
        builder.set_topic_pattern(options.pop("pattern"))
    else:
        builder.set_topics(topic)
    for key, value in options.pop("properties", {}).items():
        builder.set_property(key, value)
    if "group" in options:
        builder.set_group_id(options.pop("group"))
    if "starting" in options:
        builder.set_starting_offsets(options.pop("starting"))
    stopping = options.pop("bounded", KafkaOffsetsInitializer.latest())
    if stopping is not None:
        builder.set_bounded(stopping)
    assert not options
    return builder.build()


def pattern_source(broker, prefix: str, discovery_ms: int):
    """An unbounded source of the topics named ``<prefix>-...``."""
    return source(
        broker,
        None,
        pattern=rf"{prefix}-.*",
        bounded=None,
        properties={"partition.discovery.interval.ms": str(discovery_ms)},
    )


def run_epoch(src, enumerator, cap):
    """Plan one epoch, read every assignment as the tasks would; the records by subtask."""
    read: dict[int, list] = {}
    progress: dict[str, SplitProgress] = {}
    for subtask, assignments in enumerator.plan(cap).items():
        for assignment in assignments:
            read.setdefault(subtask, []).extend(src.read(assignment, None, progress))
    enumerator.acknowledge(progress)
    return read


def values(read) -> list[str]:
    return sorted(v for records in read.values() for v, _ in records)


def test_a_bounded_source_reads_every_partition_in_capped_epochs(kafka_broker):
    topic = kafka_broker.create_topic(3)
    kafka_broker.produce(topic, [(i % 3, f"r{i}".encode()) for i in range(30)])
    src = source(kafka_broker, topic)
    enumerator = src.create_enumerator(2)
    first = run_epoch(src, enumerator, 4)
    assert len(values(first)) == 12  # 4 of each partition's 10
    assert set(first) <= {owner((topic, p), 2) for p in range(3)}
    assert not enumerator.is_finished()
    rest = [run_epoch(src, enumerator, 4) for _ in range(3)]
    assert enumerator.is_finished()
    assert sorted(values(first) + [v for r in rest for v in values(r)]) == sorted(
        f"r{i}" for i in range(30)
    )


def test_records_keep_their_kafka_timestamps(kafka_broker):
    topic = kafka_broker.create_topic(1)
    base = recent_minute()
    kafka_broker.produce(topic, [(0, b"a"), (0, b"b")], timestamps=[base, base + 1_000])
    src = source(kafka_broker, topic)
    read = run_epoch(src, src.create_enumerator(1), 100)
    assert read[0] == [("a", base), ("b", base + 1_000)]


def transactional_records(broker, topic):
    """Committed c0..c2, aborted a0..a2, committed c3 (markers take offsets too)."""
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": topic, "linger.ms": 0}
    )
    producer.init_transactions(30)
    for batch, commit in (("c0 c1 c2", True), ("a0 a1 a2", False), ("c3", True)):
        producer.begin_transaction()
        for value in batch.split():
            producer.produce(topic, value=value.encode(), partition=0)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


# An epoch may start anywhere, also inside an aborted transaction (cap 3: offsets 3..5) or
# right after its abort marker (cap 1: offset 8). The last case fails on noida-db, whose fetch
# response lists aborted transactions that ended before the fetch offset (Kafka lists only
# those reaching it), so librdkafka takes c3 of the same producer for aborted.
NOIDA_ABORTED_TXN_LIST = pytest.mark.xfail(
    strict=True, reason="noida-db 0.2.3 lists aborted transactions before the fetch offset"
)


@pytest.mark.parametrize("cap", [pytest.param(1, marks=NOIDA_ABORTED_TXN_LIST), 3, 100])
def test_a_read_committed_source_skips_aborted_records_and_markers(kafka_broker, cap):
    topic = kafka_broker.create_topic(1)
    transactional_records(kafka_broker, topic)
    src = source(kafka_broker, topic, properties={"isolation.level": "read_committed"})
    enumerator = src.create_enumerator(1)
    read: list[str] = []
    for _ in range(20):
        if enumerator.is_finished():
            break
        read += values(run_epoch(src, enumerator, cap))
    assert enumerator.is_finished()
    assert sorted(read) == ["c0", "c1", "c2", "c3"]
    uncommitted = source(kafka_broker, topic)
    assert "a1" in values(run_epoch(uncommitted, uncommitted.create_enumerator(1), 100))


def test_a_restore_resumes_every_partition_at_its_position_at_another_parallelism(kafka_broker):
    topic = kafka_broker.create_topic(4)
    kafka_broker.produce(topic, [(i % 4, f"r{i}".encode()) for i in range(40)])
    src = source(kafka_broker, topic)
    first = src.create_enumerator(2)
    before = values(run_epoch(src, first, 3))
    snapshot = first.snapshot()
    values(run_epoch(src, first, 3))  # read after the checkpoint: read again after a restore
    again = src.create_enumerator(3)
    again.restore(snapshot, WHERE)
    after: list[str] = []
    while not again.is_finished():
        read = run_epoch(src, again, 5)
        assert set(read) <= {owner((topic, p), 3) for p in range(4)}
        after += values(read)
    assert sorted(before + after) == sorted(f"r{i}" for i in range(40))


def test_starting_offsets_earliest_latest_timestamp_specific_and_committed(kafka_broker):
    topic = kafka_broker.create_topic(2)
    base = recent_minute()
    kafka_broker.produce(
        topic,
        [(i % 2, f"r{i}".encode()) for i in range(10)],
        timestamps=[base + i * 100 for i in range(10)],
    )

    def read_all(starting, **options):
        src = source(kafka_broker, topic, starting=starting, **options)
        enumerator = src.create_enumerator(1)
        return values(run_epoch(src, enumerator, 100)), enumerator

    assert len(read_all(KafkaOffsetsInitializer.earliest())[0]) == 10
    assert read_all(KafkaOffsetsInitializer.latest())[0] == []
    assert read_all(KafkaOffsetsInitializer.timestamp(base + 650))[0] == ["r7", "r8", "r9"]
    given = {KafkaTopicPartition(topic, 0): 3}  # partition 1: by the reset strategy
    assert read_all(KafkaOffsetsInitializer.offsets(given, KafkaOffsetResetStrategy.LATEST))[0] == [
        "r6",
        "r8",
    ]
    # a checkpoint's offsets go to the group once it completes; committed_offsets read them
    group = f"g-{topic}"
    _, enumerator = read_all(KafkaOffsetsInitializer.timestamp(base + 650), group=group)
    enumerator.notify_checkpoint_complete(enumerator.snapshot())
    assert read_all(KafkaOffsetsInitializer.committed_offsets(), group=group)[0] == []
    with pytest.raises(SourceError, match=r"partition 0 of topic .* has no committed offset"):
        read_all(KafkaOffsetsInitializer.committed_offsets(), group=f"{group}-new")


def test_a_topic_pattern_finds_topics_and_partitions_made_later(kafka_broker):
    prefix = f"p{int(time.time() * 1000)}"
    first = kafka_broker.create_topic(1, f"{prefix}-a")
    kafka_broker.produce(first, [(0, b"a")])
    src = pattern_source(kafka_broker, prefix, discovery_ms=1)
    enumerator = src.create_enumerator(2)
    assert values(run_epoch(src, enumerator, 10)) == ["a"]
    second = kafka_broker.create_topic(2, f"{prefix}-b")
    kafka_broker.produce(second, [(0, b"b0"), (1, b"b1")])  # before discovery: still read
    assert values(run_epoch(src, enumerator, 10)) == ["b0", "b1"]
    assert not enumerator.is_finished()


def test_a_missing_topic_and_an_unreachable_broker_are_named(kafka_broker):
    src = source(kafka_broker, "no-such-topic")
    with pytest.raises(SourceError, match=r"topic 'no-such-topic' does not exist at Kafka at 127"):
        src.create_enumerator(1).plan(10)
    builder = (
        KafkaSource.builder().set_topics("t").set_value_only_deserializer(SimpleStringSchema())
    )
    unreachable = builder.set_bootstrap_servers("127.0.0.1:1").build()
    started = time.monotonic()
    with pytest.raises(SourceError, match=r"127\.0\.0\.1:1.*do not answer"):
        unreachable.validate()
    assert time.monotonic() - started < 20


def test_the_builder_refuses_what_would_not_take_effect():
    builder = KafkaSource.builder()
    with pytest.raises(ValueError, match=r"sets 'enable.auto.commit' itself"):
        builder.set_property("enable.auto.commit", "true")
    with pytest.raises(ValueError, match=r"set only one of set_topics"):
        builder.set_topics("a").set_topic_pattern("b.*")
    with pytest.raises(ValueError, match=r"needs set_bootstrap_servers"):
        KafkaSource.builder().set_topics("a").build()


def test_partitions_are_owned_as_flink_assigns_them():
    assert java_string_hash("hello") == 99162322  # Java's "hello".hashCode()
    start = ((java_string_hash("orders") * 31) & 0x7FFFFFFF) % 3
    assert [owner(("orders", p), 3) for p in range(4)] == [(start + p) % 3 for p in range(4)]


def test_discovery_interval_zero_or_negative_turns_discovery_off(kafka_broker):
    prefix = f"off{int(time.time() * 1000)}"
    kafka_broker.create_topic(1, f"{prefix}-a")
    src = pattern_source(kafka_broker, prefix, discovery_ms=0)
    enumerator = src.create_enumerator(1)
    run_epoch(src, enumerator, 10)
    later = kafka_broker.create_topic(1, f"{prefix}-b")
    kafka_broker.produce(later, [(0, b"b")])
    assert values(run_epoch(src, enumerator, 10)) == []


def test_a_deleted_topic_is_no_longer_read_and_the_others_go_on(kafka_broker, caplog):
    prefix = f"del{int(time.time() * 1000)}"
    kept = kafka_broker.create_topic(1, f"{prefix}-a")
    deleted = kafka_broker.create_topic(1, f"{prefix}-b")
    kafka_broker.produce(kept, [(0, b"a0")])
    kafka_broker.produce(deleted, [(0, b"b0")])
    src = pattern_source(kafka_broker, prefix, discovery_ms=1)
    enumerator = src.create_enumerator(2)
    assert values(run_epoch(src, enumerator, 10)) == ["a0", "b0"]
    snapshot = enumerator.snapshot()
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for future in admin.delete_topics([deleted]).values():
        future.result(30)
    kafka_broker.produce(kept, [(0, b"a1")])
    assert values(run_epoch(src, enumerator, 10)) == ["a1"]
    restored = src.create_enumerator(2)
    restored.restore(snapshot, WHERE)
    assert values(run_epoch(src, restored, 10)) == ["a1"]
    assert f"partition {deleted}:0 is gone" in caplog.text


@pytest.mark.parametrize(
    ("reset", "expected"),
    [
        (KafkaOffsetResetStrategy.EARLIEST, ["r6", "r7", "r8", "r9"]),
        (KafkaOffsetResetStrategy.NONE, None),
    ],
)
def test_a_position_retention_deleted_goes_on_by_the_reset_strategy(
    kafka_broker, caplog, reset, expected
):
    topic = kafka_broker.create_topic(1)
    kafka_broker.produce(topic, [(0, f"r{i}".encode()) for i in range(10)])
    given = KafkaOffsetsInitializer.offsets({KafkaTopicPartition(topic, 0): 2}, reset)
    src = source(kafka_broker, topic, starting=given)
    enumerator = src.create_enumerator(1)
    enumerator.snapshot()  # a checkpoint holds position 2
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for future in admin.delete_records([TopicPartition(topic, 0, 6)]).values():
        future.result(30)  # offsets 0 to 5 are gone, 2 to 5 unread
    if expected is None:
        with pytest.raises(SourceError, match=r"offsets 2 to 5 were deleted .* strategy is NONE"):
            run_epoch(src, enumerator, 100)
        return
    assert values(run_epoch(src, enumerator, 100)) == expected
    assert "offsets 2 to 5 were deleted before they were read" in caplog.text


def test_a_stopping_offset_beyond_the_end_is_read_up_to_as_records_come(kafka_broker):
    topic = kafka_broker.create_topic(1)
    kafka_broker.produce(topic, [(0, f"r{i}".encode()) for i in range(3)])
    stop = KafkaOffsetsInitializer.offsets({KafkaTopicPartition(topic, 0): 5})
    src = source(kafka_broker, topic, bounded=stop)
    enumerator = src.create_enumerator(1)
    assert values(run_epoch(src, enumerator, 100)) == ["r0", "r1", "r2"]
    assert not enumerator.is_finished()
    kafka_broker.produce(topic, [(0, f"r{i}".encode()) for i in range(3, 8)])
    assert values(run_epoch(src, enumerator, 100)) == ["r3", "r4"]
    assert enumerator.is_finished()
    src.close()
    assert src._consumer is None


class KeyAndOffset(KafkaRecordDeserializationSchema):
    """Sees the whole message; drops tombstones."""

    def deserialize(self, record: KafkaRecord):
        if record.value is None:
            return None
        return (record.key, record.value.decode(), record.partition, record.offset)


def test_a_record_deserializer_sees_key_partition_and_offset_and_drops_what_it_returns_none(
    kafka_broker,
):
    topic = kafka_broker.create_topic(1)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for key, value in ((b"k0", b"a"), (b"k1", None), (b"k2", b"c")):
        producer.produce(topic, value=value, key=key, partition=0)
    assert producer.flush(30) == 0
    src = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka_broker.bootstrap_servers)
        .set_topics(topic)
        .set_deserializer(KeyAndOffset())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    read = run_epoch(src, src.create_enumerator(1), 10)
    assert [record for record, _ in read[0]] == [(b"k0", "a", 0, 0), (b"k2", "c", 0, 2)]
