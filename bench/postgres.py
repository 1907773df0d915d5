"""Kafka -> keyed count -> PostgreSQL on lockgate: events/s and end-to-end latency per sink.

Against the tests' servers, started on 127.0.0.1: a Kafka-protocol broker (noida-db,
``tests/unit/kafka_broker.py``) and PostgreSQL (Debian's package,
``tests/unit/postgres_server.py``, ``fsync=off``); both on this machine, so their own costs
are in the figures. The job: ``KafkaSource`` (2 partitions; an event goes to partition
key % 2, so each key's events stay in order) -> parse -> ``key_by`` -> a per-key count in
ValueState -> a JDBC sink into ``counts (k primary key, n, sent)``, ``sent`` being the send
time of the event that made the count ``n``, for each sink:

- ``at_least_once``: ``JdbcSink.sink`` with the upsert ``INSERT INTO counts (k, n, sent)
  VALUES (?, ?, ?) ON CONFLICT (k) DO UPDATE SET n = excluded.n, sent = excluded.sent``;
  batches of ``--batch-size`` rows, one transaction each, and every epoch ends its batch.
- ``exactly_once``: ``JdbcSink.exactly_once_sink`` with the same upsert, checkpointing in
  ``EXACTLY_ONCE`` mode: each subtask's rows since the last checkpoint are one transaction,
  prepared at the checkpoint and committed when it completes, so rows become visible only
  then.

Both run with a checkpoint every ``--checkpoint-ms`` (default 1000 ms, printed).

(a) Throughput: ``--events`` events over ``--keys`` keys already in the topic; a bounded
    source (``latest()``); events/s = events / wall time of ``execute()`` (job start and
    the final checkpoint and its commit included), median of ``--runs``, each run into a
    new table. After each run the table must hold every key with the right count (else a
    ``WARNING`` line).
(b) Latency: an unbounded source while a producer writes ``--rate`` events/s for
    ``--seconds``, noting each event's send time. Visibility is measured from outside, as a
    reader of the database would see it: a poller on its own connection (autocommit, so
    every SELECT reads what is committed when it starts) runs ``SELECT k, n, sent FROM counts
    WHERE sent >= <the send time of the oldest event not seen yet>`` (an index on ``sent``)
    every ``--poll-ms``. Event i is the (i // keys + 1)-th of key i % keys, so a row
    showing count n for key k makes that key's events up to the n-th visible (an upsert
    that overwrote a count before a poll read it still counts for the events it held); each
    event's latency = the start of the first SELECT that saw it - its send time (it was not
    yet committed when the SELECT before started: the error is at most one poll period,
    ``--poll-ms`` plus a query). p50 and p99 over the events sent after the first 3 s; a row
    whose ``sent`` is not its event's send time is counted as a ``WARNING``. For
    ``exactly_once``, latency is bound to the checkpoint interval: an event waits for the
    end of the first epoch that takes a checkpoint (the first to end ``--checkpoint-ms``
    or more after the last checkpoint) and for the commit once that checkpoint completes,
    so up to about the interval plus an epoch plus the commit; ``at_least_once`` waits for
    the end of its epoch (``lockgate.epoch.target-duration``, 1 s by default) or a full
    batch. With the defaults almost every epoch takes a checkpoint, so the two differ by
    about the checkpoint and its commit.

PyFlink's JDBC and Kafka connectors cannot run here (their jars come from Maven Central,
which these machines cannot reach): the peer line says so.

The last printed line is the figures line:

    postgres at_least_once_events_per_s=... exactly_once_events_per_s=...
    at_least_once_p50_ms=... at_least_once_p99_ms=... exactly_once_p50_ms=...
    exactly_once_p99_ms=...

Run: ``python bench/postgres.py [--events N] [--keys K] [--runs R] [--rate R] [--seconds S]
[--checkpoint-ms MS] [--batch-size B] [--poll-ms MS]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "unit"))
from kafka_broker import KafkaBroker
from kafka_events import events_source, feed, fill_topic
from postgres_server import PostgresServer

from lockgate.common import Configuration, WatermarkStrategy
from lockgate.datastream import (
    CheckpointingMode,
    KeyedProcessFunction,
    StreamExecutionEnvironment,
)
from lockgate.datastream.connectors.jdbc import (
    JdbcConnectionOptions,
    JdbcExactlyOnceOptions,
    JdbcExecutionOptions,
    JdbcSink,
)
from lockgate.datastream.state import ValueStateDescriptor

SINKS = ("at_least_once", "exactly_once")
UPSERT = (
    "INSERT INTO {table} (k, n, sent) VALUES (?, ?, ?) "
    "ON CONFLICT (k) DO UPDATE SET n = excluded.n, sent = excluded.sent"
)


class Count(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value, ctx):
        key, sent = value
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield key, count, sent


def parse(line: str) -> tuple[int, int]:
    key, sent = line.split(",")
    return int(key), int(sent)


def new_table(server) -> str:
    table = f"counts_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server.conninfo, autocommit=True) as connection:
        connection.execute(f"CREATE TABLE {table} (k int PRIMARY KEY, n int NOT NULL, sent bigint)")
        connection.execute(f"CREATE INDEX ON {table} (sent)")
    return table


def environment(spark, work_dir: str, sink: str, args):
    config = Configuration()
    config.set_string("lockgate.work-dir", work_dir)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.configure(config)
    env.set_parallelism(2)
    if sink == "exactly_once":
        env.enable_checkpointing(args.checkpoint_ms, CheckpointingMode.EXACTLY_ONCE)
    else:
        env.enable_checkpointing(args.checkpoint_ms)
    return env


def jdbc_sink(server, table: str, sink: str, args) -> JdbcSink:
    connection = (
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder()
        .with_url(server.url)
        .with_user_name("test")
        .build()
    )
    execution = JdbcExecutionOptions.builder().with_batch_size(args.batch_size).build()
    sql = UPSERT.format(table=table)
    if sink == "exactly_once":
        return JdbcSink.exactly_once_sink(
            sql, None, connection, execution, JdbcExactlyOnceOptions.defaults()
        )
    return JdbcSink.sink(sql, None, connection, execution)


def build(env, broker, server, source_topic, table, sink, args, bounded: bool) -> None:
    (
        env.from_source(
            events_source(broker, source_topic, bounded),
            WatermarkStrategy.no_watermarks(),
            "events",
        )
        .map(parse)
        .key_by(lambda e: e[0])
        .process(Count())
        .add_sink(jdbc_sink(server, table, sink, args))
        .uid("counts")
    )


def check_table(server, table: str, keys: int, events: int) -> str | None:
    """What is wrong with the table after a bounded run (None: every key's count is right)."""
    expected = {k: events // keys + (1 if k < events % keys else 0) for k in range(keys)}
    expected = {k: n for k, n in expected.items() if n}
    with psycopg.connect(server.conninfo) as connection:
        rows = dict(connection.execute(f"SELECT k, n FROM {table}").fetchall())
    wrong = sum(1 for k in expected.keys() | rows.keys() if rows.get(k) != expected.get(k))
    return f"{wrong} of {len(expected)} keys have a wrong or missing count" if wrong else None


def prepared_transactions(server) -> int:
    with psycopg.connect(server.conninfo) as connection:
        row = connection.execute("SELECT count(*) FROM pg_prepared_xacts").fetchone()
    return int(row[0]) if row else 0


def throughput(spark, broker, server, work_dir, args, sink) -> float:
    source_topic = fill_topic(broker, args.events, args.keys)
    rates = []
    for _ in range(args.runs):
        table = new_table(server)
        env = environment(spark, work_dir, sink, args)
        build(env, broker, server, source_topic, table, sink, args, bounded=True)
        started = time.perf_counter()
        env.execute(f"postgres {sink} throughput")
        rates.append(args.events / (time.perf_counter() - started))
        problem = check_table(server, table, args.keys, args.events)
        if problem:
            print(f"postgres sink={sink} WARNING after a bounded run: {problem}")
    return statistics.median(rates)


def latency(spark, broker, server, work_dir, args, sink) -> tuple[float, float, int]:
    source_topic, table = broker.create_topic(2), new_table(server)
    env = environment(spark, work_dir, sink, args)
    build(env, broker, server, source_topic, table, sink, args, bounded=False)
    client = env.execute_async(f"postgres {sink} latency")
    total = args.rate * args.seconds
    sent_at: list[int | None] = [None] * total  # send time (ms) of event i
    seen_at: list[float | None] = [None] * total  # start of the first SELECT that saw it

    def note_sent(i: int, ms: int) -> None:
        sent_at[i] = ms

    feeder = threading.Thread(
        target=feed, args=(broker, source_topic, args.rate, total, args.keys, note_sent)
    )
    feeder.start()
    seen_n = [0] * args.keys  # per key, the highest count a SELECT saw
    oldest = 0  # the first event no SELECT saw yet
    seen = mismatched = 0
    deadline = time.monotonic() + args.seconds + 60
    with psycopg.connect(server.conninfo, autocommit=True) as connection:
        query = f"SELECT k, n, sent FROM {table} WHERE sent >= %s"
        while oldest < total and time.monotonic() < deadline:
            # every unseen event was sent at or after the oldest unseen one (or the last seen)
            bound = sent_at[oldest] if sent_at[oldest] is not None else None
            if bound is None and oldest > 0:
                bound = sent_at[oldest - 1]
            asked = time.time()
            rows = connection.execute(query, ((bound or 0) - 1000,)).fetchall()
            for key, n, sent in rows:
                if n <= seen_n[key]:
                    continue
                for m in range(seen_n[key] + 1, n + 1):
                    i = key + (m - 1) * args.keys
                    if i < total and seen_at[i] is None:
                        seen_at[i] = asked
                        seen += 1
                last = key + (n - 1) * args.keys
                if last >= total or sent_at[last] != sent:
                    mismatched += 1
                seen_n[key] = n
            while oldest < total and seen_at[oldest] is not None:
                oldest += 1
            time.sleep(args.poll_ms / 1000)
    feeder.join()
    client.cancel().result()
    if mismatched:
        print(f"postgres sink={sink} WARNING: {mismatched} rows' sent is not their event's")
    left = prepared_transactions(server)
    if left:
        print(f"postgres sink={sink} WARNING: {left} prepared transactions left after cancel")
    sent_times = [s for s in sent_at if s is not None]
    first_sent = min(sent_times) if sent_times else 0
    steady = sorted(
        seen_at[i] * 1000 - sent
        for i, sent in enumerate(sent_at)
        if sent is not None and sent >= first_sent + 3000 and seen_at[i] is not None
    )
    if not steady:
        return float("nan"), float("nan"), seen
    p50 = steady[len(steady) // 2]
    p99 = steady[min(len(steady) - 1, int(len(steady) * 0.99))]
    return float(p50), float(p99), seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rate", type=int, default=2_000, help="events/s in (b)")
    parser.add_argument("--seconds", type=int, default=15, help="length of (b)")
    parser.add_argument("--checkpoint-ms", type=int, default=1000, help="checkpoint interval")
    parser.add_argument("--batch-size", type=int, default=5000, help="JDBC batch size")
    parser.add_argument("--poll-ms", type=int, default=10, help="poller pause in (b)")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    bench_dir = Path(__file__).resolve().parent
    sys.path.insert(0, str(bench_dir))
    from keyed_count import start_session

    spark = start_session(args.master)
    print(
        f"postgres checkpoint_interval_ms={args.checkpoint_ms} batch_size={args.batch_size} "
        f"poll_ms={args.poll_ms}"
    )
    figures: dict[str, float] = {}
    broker = KafkaBroker().start()
    try:
        server = PostgresServer().start()
        try:
            with tempfile.TemporaryDirectory(prefix="lockgate-bench-") as work_dir:
                warm = argparse.Namespace(**{**vars(args), "events": 2_000, "runs": 1})
                throughput(spark, broker, server, work_dir, warm, "at_least_once")
                for sink in SINKS:
                    rate = throughput(spark, broker, server, work_dir, args, sink)
                    p50, p99, seen = latency(spark, broker, server, work_dir, args, sink)
                    print(
                        f"postgres sink={sink} events_per_s={rate:.0f} latency_p50_ms={p50:.0f} "
                        f"latency_p99_ms={p99:.0f} "
                        f"latency_events={seen}/{args.rate * args.seconds}"
                    )
                    figures[f"{sink}_events_per_s"] = rate
                    figures[f"{sink}_p50_ms"] = p50
                    figures[f"{sink}_p99_ms"] = p99
        finally:
            server.close()
    finally:
        broker.close()
    print(
        "postgres peer=pyflink skipped: PyFlink's JDBC and Kafka connectors need jars from "
        "Maven Central, which this machine cannot reach"
    )
    order = [f"{s}_events_per_s" for s in SINKS] + [
        f"{s}_{p}_ms" for s in SINKS for p in ("p50", "p99")
    ]
    print("postgres " + " ".join(f"{k}={figures[k]:.0f}" for k in order))
    spark.stop()


if __name__ == "__main__":
    main()
