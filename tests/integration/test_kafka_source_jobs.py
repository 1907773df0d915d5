"""KafkaSource in jobs on Spark, against a real broker (``kafka_broker``): partitions are
splits whose offsets are in the checkpoints, so a failure anywhere neither loses nor repeats a
record in the committed output; records carry their Kafka timestamps into event time."""

from __future__ import annotations

import time

from exactly_once_job import (
    KEYS,
    CountPerKey,
    Trap,
    assert_committed_output_exact,
    checkpointed_env,
    file_sink,
    record_in_epoch,
    records,
)
from lockgate_it_support import BACKENDS

from lockgate.common import Time, WatermarkStrategy
from lockgate.common.serialization import SimpleStringSchema
from lockgate.common.watermark_strategy import TimestampAssigner
from lockgate.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaSource
from lockgate.datastream.functions import ProcessWindowFunction
from lockgate.datastream.window import TumblingEventTimeWindows

SPLITS = 3  # partitions, each read as one split of exactly_once_job's records


def fill_topic(broker) -> str:
    """exactly_once_job's records, split s in partition s, as 's,i' strings."""
    topic = broker.create_topic(SPLITS)
    broker.produce(topic, [(s, f"{s},{i}".encode()) for s, i in records(SPLITS)])
    return topic


def kafka_source(broker, topic: str) -> KafkaSource:
    return (
        KafkaSource.builder()
        .set_bootstrap_servers(broker.bootstrap_servers)
        .set_topics(topic)
        .set_group_id(f"lockgate-{topic}")
        .set_value_only_deserializer(SimpleStringSchema())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )


def recent_minute() -> int:
    """A time (ms) of the last minute, at the start of a minute: the broker deletes records
    older than its retention (7 days), so a test's records must be recent."""
    return int(time.time() * 1000) // 60_000 * 60_000 - 60_000


def parse(line: str) -> tuple[int, int]:
    split, i = line.split(",")
    return int(split), int(i)


@BACKENDS
def test_a_failing_job_reads_every_record_once_into_its_committed_output(
    make_env, tmp_path, kafka_broker
):
    topic = fill_topic(kafka_broker)
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 2)
    trap = Trap(record_in_epoch(3, split=1), tmp_path / "markers", times=2)
    (
        env.from_source(kafka_source(kafka_broker, topic), WatermarkStrategy.no_watermarks(), "k")
        .uid("kafka")
        .map(parse)
        .key_by(lambda r: (r[0], r[1] % KEYS))
        .process(CountPerKey(trap))
        .uid("count-per-key")
        .sink_to(file_sink(tmp_path / "out"))
        .uid("file-sink")
    )
    result = env.execute("kafka exactly once")
    assert trap.fired() == 2 and result.restarts >= 1
    assert_committed_output_exact(tmp_path / "out", SPLITS)


def test_records_carry_their_kafka_timestamps_into_event_time(make_env, kafka_broker):
    """No timestamp assigner: windows group records by the timestamps Kafka holds; an
    assigner receives them as ``record_timestamp``."""
    topic = kafka_broker.create_topic(2)
    base = recent_minute()
    kafka_broker.produce(
        topic,
        [(i % 2, f"r{i}".encode()) for i in range(20)],
        timestamps=[base + i * 1_000 for i in range(20)],
    )
    env = make_env(2, 4)
    counts = (
        env.from_source(
            kafka_source(kafka_broker, topic), WatermarkStrategy.for_monotonous_timestamps(), "k"
        )
        .map(lambda value: (int(value[1:]) % 2, 1))
        .key_by(lambda r: r[0])
        .window(TumblingEventTimeWindows.of(Time.seconds(5)))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )
    # 20 s of records, 5 s windows: 4 windows, each with 5 records over both partitions
    assert sorted(counts.execute_and_collect()) == sorted([(0, 3), (1, 2), (0, 2), (1, 3)] * 2)

    class Shifted(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return record_timestamp + 5_000  # one window later

    shifted = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Shifted())
    windows = (
        env.from_source(kafka_source(kafka_broker, topic), shifted, "k")
        .map(lambda value: (0, 1))
        .key_by(lambda r: r[0])
        .window(TumblingEventTimeWindows.of(Time.seconds(5)))
        .process(WindowStart())
    )
    assert sorted(windows.execute_and_collect()) == [
        base + start for start in (5_000, 10_000, 15_000, 20_000)
    ]


class WindowStart(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield context.window().start
