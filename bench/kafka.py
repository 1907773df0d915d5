"""Kafka -> keyed count -> Kafka on lockgate: events/s and end-to-end latency per guarantee.

Against a Kafka-protocol broker the script starts on 127.0.0.1 (noida-db, the tests' broker,
``tests/unit/kafka_broker.py``: one node, on this machine, so its own costs are in the
figures). The job: ``KafkaSource`` (2 partitions) -> parse -> ``key_by`` -> a per-key
count in ValueState -> ``KafkaSink`` (2 partitions), for each delivery guarantee:

(a) Throughput: ``--events`` events over ``--keys`` keys already in the topic; a bounded
    source (``latest()``); events/s = events / wall time of ``execute()`` (job start and
    the final checkpoint included), median of ``--runs``.
(b) Latency: an unbounded source while a producer writes ``--rate`` events/s for
    ``--seconds``, each carrying its send time; latency = when a ``read_committed``
    consumer received the output record - the send time, p50 and p99 over the events
    after the first 3 s. An epoch reads what its partitions held when it was planned, so
    latency is about one epoch (``lockgate.epoch.target-duration``) plus its planning;
    with EXACTLY_ONCE, records become visible when the checkpoint that covers them is
    committed (a checkpoint every second here).

PyFlink's Kafka connector cannot run here (its jars come from Maven Central, which these
machines cannot reach): the peer line says so.

The last printed line is the figures line:

    kafka exactly_once_events_per_s=... at_least_once_events_per_s=...
    none_events_per_s=... exactly_once_p50_ms=... (and p99, for each guarantee)

Run: ``python bench/kafka.py [--events N] [--keys K] [--runs R] [--rate R] [--seconds S]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "unit"))
from kafka_broker import KafkaBroker
from kafka_events import events_source, feed, fill_topic

from lockgate.common import Configuration, WatermarkStrategy
from lockgate.common.serialization import SimpleStringSchema
from lockgate.datastream import (
    CheckpointingMode,
    KeyedProcessFunction,
    StreamExecutionEnvironment,
)
from lockgate.datastream.connectors import DeliveryGuarantee
from lockgate.datastream.connectors.kafka import (
    KafkaRecordSerializationSchema,
    KafkaSink,
)
from lockgate.datastream.state import ValueStateDescriptor

GUARANTEES = {
    "exactly_once": DeliveryGuarantee.EXACTLY_ONCE,
    "at_least_once": DeliveryGuarantee.AT_LEAST_ONCE,
    "none": DeliveryGuarantee.NONE,
}


class Count(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value, ctx):
        key, sent = value
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield f"{key},{count},{sent}"


def parse(line: str) -> tuple[int, int]:
    key, sent = line.split(",")
    return int(key), int(sent)


def environment(spark, work_dir: str):
    config = Configuration()
    config.set_string("lockgate.work-dir", work_dir)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.configure(config)
    env.set_parallelism(2)
    env.enable_checkpointing(1000, CheckpointingMode.EXACTLY_ONCE)
    return env


def build(env, broker, source_topic, out_topic, guarantee, bounded: bool) -> None:
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(broker.bootstrap_servers)
        .set_delivery_guarantee(guarantee)
        .set_transactional_id_prefix(f"bench-{out_topic}")
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(out_topic)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .build()
    )
    (
        env.from_source(
            events_source(broker, source_topic, bounded),
            WatermarkStrategy.no_watermarks(),
            "events",
        )
        .map(parse)
        .key_by(lambda e: e[0])
        .process(Count())
        .sink_to(sink)
    )


def throughput(spark, broker, work_dir, args, guarantee) -> float:
    source_topic = fill_topic(broker, args.events, args.keys)
    rates = []
    for _ in range(args.runs):
        env = environment(spark, work_dir)
        build(env, broker, source_topic, broker.create_topic(2), guarantee, bounded=True)
        started = time.perf_counter()
        env.execute("kafka throughput")
        rates.append(args.events / (time.perf_counter() - started))
    return statistics.median(rates)


def latency(spark, broker, work_dir, args, guarantee) -> tuple[float, float, int]:
    source_topic, out_topic = broker.create_topic(2), broker.create_topic(2)
    env = environment(spark, work_dir)
    build(env, broker, source_topic, out_topic, guarantee, bounded=False)
    client = env.execute_async("kafka latency")
    total = args.rate * args.seconds

    feeder = threading.Thread(
        target=feed,
        args=(broker, source_topic, args.rate, total, args.keys, lambda i, ms: None),
    )
    feeder.start()
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "bench",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([TopicPartition(out_topic, p, 0) for p in range(2)])
    latencies: list[tuple[int, int]] = []
    deadline = time.monotonic() + args.seconds + 60
    first_sent = None
    while len(latencies) < total and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is None or message.error():
            continue
        sent = int(message.value().decode().rsplit(",", 1)[1])
        first_sent = sent if first_sent is None else min(first_sent, sent)
        latencies.append((sent, int(time.time() * 1000) - sent))
    feeder.join()
    client.cancel().result()
    consumer.close()
    steady = sorted(lat for sent, lat in latencies if sent >= (first_sent or 0) + 3000)
    if not steady:
        return float("nan"), float("nan"), len(latencies)
    p50 = steady[len(steady) // 2]
    p99 = steady[min(len(steady) - 1, int(len(steady) * 0.99))]
    return float(p50), float(p99), len(latencies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rate", type=int, default=5_000, help="events/s in (b)")
    parser.add_argument("--seconds", type=int, default=15, help="length of (b)")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    bench_dir = Path(__file__).resolve().parent
    sys.path.insert(0, str(bench_dir))
    from keyed_count import start_session

    spark = start_session(args.master)
    broker = KafkaBroker().start()
    figures: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="lockgate-bench-") as work_dir:
            warm = argparse.Namespace(**{**vars(args), "events": 2_000, "runs": 1})
            throughput(spark, broker, work_dir, warm, DeliveryGuarantee.NONE)
            for name, guarantee in GUARANTEES.items():
                rate = throughput(spark, broker, work_dir, args, guarantee)
                p50, p99, seen = latency(spark, broker, work_dir, args, guarantee)
                print(
                    f"kafka guarantee={name} events_per_s={rate:.0f} latency_p50_ms={p50:.0f} "
                    f"latency_p99_ms={p99:.0f} latency_events={seen}/{args.rate * args.seconds}"
                )
                figures[f"{name}_events_per_s"] = rate
                figures[f"{name}_p50_ms"] = p50
                figures[f"{name}_p99_ms"] = p99
    finally:
        broker.close()
    print(
        "kafka peer=pyflink skipped: PyFlink's Kafka connector needs jars from Maven Central, "
        "which this machine cannot reach"
    )
    print("kafka " + " ".join(f"{k}={v:.0f}" for k, v in figures.items()))
    spark.stop()


if __name__ == "__main__":
    main()
