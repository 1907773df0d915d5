"""Keyed (count, sum) per key: 1M events over 10k keys through lockgate's keyed state.

The job is ``from_collection(events) -> key_by -> KeyedProcessFunction -> DiscardingSink``:
per key a ValueState holds (count, sum) and every update is emitted. Events are generated on
the driver; the Spark session is warmed up first so that its start is not counted, and the
cost of an empty Spark job in the same session is measured as the floor of an epoch.

The last printed line is the figures line:

    keyed_count system=lockgate events_per_s=... epochs=... median_epoch_ms=...
    job_overhead_ms=...

The job runs ``--runs`` times in the session (default 3) and the figures are those of the
run with the median wall time: the first run after the session starts is often slower
(the JVM is still compiling its hot paths). Each run is also printed on its own line.

Run: ``python bench/keyed_count.py [--events N] [--keys K] [--source-parallelism P]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time

from lockgate.common import Configuration
from lockgate.common import config_options as options
from lockgate.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from lockgate.datastream.connectors import DiscardingSink
from lockgate.datastream.state import ValueStateDescriptor
from lockgate.runtime.spark_session import get_or_create_session

# Measured on a 2-core machine (local[2], 1M events, 10k keys): the source at parallelism 2
# ran 1.3-1.5x faster than at 1, since the source's work is split over both cores and
# there are half as many epochs (each epoch costs 150-250 ms of Spark scheduling).
DEFAULT_SOURCE_PARALLELISM = 2
OVERHEAD_RUNS = 7


class CountAndSum(KeyedProcessFunction):
    """Keeps (count, sum) of the values of each key; emits every update."""

    def open(self, runtime_context):
        self.state = runtime_context.get_state(ValueStateDescriptor("count_sum"))

    def process_element(self, value, ctx):
        count, total = self.state.value() or (0, 0)
        count, total = count + 1, total + value[1]
        self.state.update((count, total))
        yield value[0], count, total


def make_events(events: int, keys: int, seed: int = 42) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [(rng.randrange(keys), rng.randrange(1000)) for _ in range(events)]


def _key(event):
    return event[0]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument(
        "--source-parallelism",
        type=int,
        default=DEFAULT_SOURCE_PARALLELISM,
        help="parallelism of the collection source (Flink's default would be 1)",
    )
    parser.add_argument(
        "--max-records-per-split",
        type=int,
        default=options.EPOCH_MAX_RECORDS_PER_SPLIT.default,
        help="lockgate.epoch.max-records-per-split (records per source split per epoch)",
    )
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--runs", type=int, default=3, help="timed runs of the job; the median one is reported"
    )
    return parser.parse_args(argv)


def job_overhead_ms(sc, runs: int = OVERHEAD_RUNS) -> float:
    """Median wall time of an empty two-partition Spark job with a Python stage."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        sc.parallelize(range(2), 2).map(lambda x: x).collect()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _nothing(index, items):
    # Read the whole input: a Python task that leaves shuffled input unread makes PySpark
    # drop its worker, and the next task then pays for a new one (+100-200 ms per job).
    for _ in items:
        pass
    return iter(())


def epoch_floor_ms(sc, runs: int = OVERHEAD_RUNS) -> float:
    """Median wall time of an empty two-stage job (parallelize, shuffle, collect): the Spark
    floor of an epoch whose job has one shuffle, as keyed_count's has."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        rdd = sc.parallelize(range(2), 2).mapPartitionsWithIndex(_nothing)
        rdd.partitionBy(2).mapPartitionsWithIndex(_nothing).collect()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def run_job(spark, args: argparse.Namespace, events: list, work_dir: str):
    config = Configuration()
    config.set_string(options.WORK_DIR.key, work_dir)
    config.set_integer(options.EPOCH_MAX_RECORDS_PER_SPLIT.key, args.max_records_per_split)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.configure(config)
    env.set_parallelism(args.parallelism)
    source = env.from_collection(events)
    if args.source_parallelism != 1:
        source = source.set_parallelism(args.source_parallelism)
    source.key_by(_key).process(CountAndSum()).sink_to(DiscardingSink())
    started = time.perf_counter()
    result = env.execute("keyed_count")
    return time.perf_counter() - started, result


def start_session(master: str):
    """The benchmarks' Spark session, after a line naming the machine."""
    print(f"cores={os.cpu_count()} python={sys.version.split()[0]} master={master}")
    return get_or_create_session(
        {
            "spark.master": master,
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.memory": "2g",
        }
    )


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    spark = start_session(args.master)
    sc = spark.sparkContext
    events = make_events(args.events, args.keys)
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-") as work_dir:
        # Warm up: start the Python workers and import lockgate in them.
        warm_args = argparse.Namespace(**{**vars(args), "max_records_per_split": 1000})
        run_job(spark, warm_args, events[:2000], work_dir)
        overhead = job_overhead_ms(sc)
        floor = epoch_floor_ms(sc)
        runs = []
        for run in range(max(1, args.runs)):
            seconds, result = run_job(spark, args, events, work_dir)
            runs.append((seconds, result))
            epoch_ms = [round(stats.duration_ms, 1) for stats in result.epochs]
            print(
                f"run {run + 1}: wall_s={seconds:.2f} events_per_s={args.events / seconds:.0f} "
                f"epoch_ms={epoch_ms}"
            )
    seconds, result = sorted(runs, key=lambda run: run[0])[(len(runs) - 1) // 2]
    epoch_ms = [stats.duration_ms for stats in result.epochs]
    median_epoch = statistics.median(epoch_ms) if epoch_ms else 0.0
    print(
        f"config events={args.events} keys={args.keys} parallelism={args.parallelism} "
        f"source_parallelism={args.source_parallelism} "
        f"max_records_per_split={args.max_records_per_split} runs={len(runs)} "
        f"empty_two_stage_job_ms={floor:.2f}"
    )
    print(
        f"keyed_count system=lockgate events_per_s={args.events / seconds:.2f} "
        f"epochs={len(result.epochs)} median_epoch_ms={median_epoch:.2f} "
        f"job_overhead_ms={overhead:.2f}"
    )
    spark.stop()


if __name__ == "__main__":
    main()
