"""Nexmark on lockgate, and with ``--peers`` on PyFlink: events/s of each query
(``examples/nexmark/queries.py``) on each keyed state backend (issue 13, point 4).

Each query runs over ``--events`` events of a ``NexmarkSource`` (generated in the Spark
tasks, ``--rate`` events per second of event time, 10% of them up to 1 s out of order, the
watermarks 1 s behind: ``nexmark_job.source_settings``) into a final map that counts the
outputs (``nexmark_job.CountedOutputs``) and a ``DiscardingSink``. The Spark session is
warmed up first with every query on 2,000 events.

How the rate is measured, on every system alike: over the *record window*, from the first
event the timestamp assigner saw to the last output record the final map saw
(``nexmark_job``); ``events_per_s`` = events / window. So the start of each system is left
out (Spark's job planning and first scheduling, or Flink's mini-cluster and job submission)
and so is its end after the last output (the final checkpoint, closing the job); the wall
time of ``env.execute()`` is printed too (``execute_s``). ``events_per_s_per_core`` divides
by the cores the run has: lockgate's are N of ``--master local[N]`` (Spark's task slots;
``cpu_tree.session_cores``), PyFlink's its ``--parallelism`` (the mini-cluster's task slots);
2 and 2 by default, on a 2-core machine. A line per query and system:

    nexmark query=<q> system=<lockgate-hashmap|lockgate-rocksdb|pyflink> events=<n>
        seconds=<s> events_per_s=<x> events_per_s_per_core=<y> outputs=<n> execute_s=<s>

(one line each). ``--peers`` runs the same queries on PyFlink, after lockgate's session has
stopped: bench/peers/pyflink_nexmark.py, in the interpreter of ``--pyflink-python`` or
``$LOCKGATE_PYFLINK_PYTHON``, with lockgate's query functions (``queries.py`` with its
imports swapped to ``pyflink``), the same events from lockgate's pure-Python generator, the
same watermarks, the same final map, parallelism 2, thread mode, tuned as bench/
keyed_count.py's PyFlink peer (see that script; it checkpoints every second as lockgate
does at every epoch, except q11, which PyFlink fails to checkpoint: it runs without, which
spares PyFlink work). Then the last line is

    nexmark ratio_vs_pyflink_min=<float> ratio_vs_pyflink_median=<float>

over every (query, lockgate backend) pair of lockgate's events/s over PyFlink's for the
query (``nan`` when PyFlink has no figure for some query: not installed or failed; the
reason is printed). Without ``--peers`` there is no ratio line.

The outputs are checked, which is why every system runs the same ``--events``: each must
give the same number of output records for a query, or the run fails (after printing its
lines); ``nexmark outputs_agree=true systems=...`` says they did. Every query's count is
fixed by the events alone: no event is late (the watermarks lag by the longest out-of-order
delay), so each window, join, timer and session sees the same records on every system; q4's
and q6's updating results are one update per closed auction that had a bid, in whatever
order, so their counts are fixed too where the values in between are not.

Measured on this 2-core machine, quiet (load below 2), PyFlink 2.3.0 in ``.venv/pyflink``,
Java 17, the default command with ``--peers`` (about 4 minutes), events generated in
batches (``NexmarkGenerator.events``, about 2 us per event, the same in both systems):
lockgate ran the queries at 85-543k events/s (43-272k per core), PyFlink at 7-58k; the
ratios were min 7.4 (q2, RocksDB) and median 10.0; q5 and q7 reached 55-90k events/s per
core. A stateless query's record window on lockgate is under a second at 300,000 events,
so its figures vary by about 20% from run to run (q2 on the two backends does the same
work); a larger ``--events`` steadies them at the cost of PyFlink's time (minutes per
query).

Usage: ``PYTHONPATH=src python bench/nexmark.py [--events N] [--queries q0,q5]
[--backend hashmap|rocksdb|both] [--parallelism P] [--max-records-per-split M]
[--peers --pyflink-python /path/to/venv/bin/python]``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

# This file's name would hide examples/nexmark: put the examples first.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import keyed_events
import nexmark_job
from cpu_tree import session_cores
from keyed_count import BACKENDS, add_spark_arguments, start_session
from keyed_events import read_window
from nexmark import queries
from nexmark_job import (
    FIGURES_LINE,
    OUT_OF_ORDER_MAX_DELAY_MS,
    WARM_UP_EVENTS,
    CountedOutputs,
    TimedEventTime,
    figures_line,
    source_settings,
)
from peer_runs import PYFLINK_NOT_INSTALLED, add_peer_arguments, ratio, run_pyflink_script
from pyspark import cloudpickle

from lockgate.common import Configuration, Duration, WatermarkStrategy
from lockgate.common.watermark_strategy import TimestampAssigner
from lockgate.datastream import MapFunction, StreamExecutionEnvironment
from lockgate.datastream.connectors import DiscardingSink
from lockgate.datastream.connectors.nexmark import NexmarkSource

# Spark's Python workers import neither the queries nor the bench modules: ship them by value.
cloudpickle.register_pickle_by_value(queries)
cloudpickle.register_pickle_by_value(nexmark_job)
cloudpickle.register_pickle_by_value(keyed_events)

DEFAULT_EVENTS = 300_000


class EventTime(TimedEventTime, TimestampAssigner):
    """The events' ``date_time``, noting the first event."""


class Counted(CountedOutputs, MapFunction):
    """The final map, counting the outputs and noting the first and last."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--events", type=int, default=DEFAULT_EVENTS, help="events, for every system"
    )
    parser.add_argument("--rate", type=int, default=10_000, help="events per s of event time")
    parser.add_argument("--queries", default=",".join(queries.QUERIES))
    parser.add_argument("--backend", choices=[*BACKENDS, "both"], default="both")
    add_spark_arguments(parser)
    parser.add_argument("--max-records-per-split", type=int, default=50_000)
    add_peer_arguments(parser, "also run the queries on PyFlink and compare")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.queries.split(",")) - set(queries.QUERIES))
    if unknown:
        parser.error(f"--queries: unknown {unknown}; there are {sorted(queries.QUERIES)}")
    if args.events < 1:
        parser.error(f"--events must be >= 1, got {args.events}")
    return args


def run(
    spark,
    args: argparse.Namespace,
    query: str,
    backend: str,
    events: int,
    work: str,
    marks_dir: str | None = None,
) -> float:
    """Seconds of ``env.execute()`` of ``query`` over ``events`` events on ``backend``;
    with ``marks_dir``, its timestamp assigner and final map write their record marks."""
    config = Configuration()
    config.set_string("lockgate.work-dir", f"{work}/{query}-{backend}-{events}")
    config.set_string("state.backend.type", backend)
    config.set_integer("lockgate.epoch.max-records-per-split", args.max_records_per_split)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.configure(config)
    env.set_parallelism(args.parallelism)
    source = NexmarkSource(events, **source_settings(args.rate))
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(OUT_OF_ORDER_MAX_DELAY_MS)
    ).with_timestamp_assigner(EventTime(marks_dir))
    stream = env.from_source(source, strategy, "nexmark")
    queries.QUERIES[query](env, stream).map(Counted(marks_dir)).sink_to(DiscardingSink())
    started = time.perf_counter()
    env.execute(f"nexmark {query}")
    return time.perf_counter() - started


def pyflink_figures(args: argparse.Namespace, selected: list[str]) -> dict[str, tuple[float, int]]:
    """``{query: (events/s, outputs)}`` on PyFlink, a line printed per query (``nan`` and
    -1 for a query without a figure, after a line saying why)."""
    figures: dict[str, tuple[float, int]] = {}
    reason = PYFLINK_NOT_INSTALLED
    if args.pyflink_python:
        arguments = [
            f"--events={args.events}",
            f"--rate={args.rate}",
            f"--queries={','.join(selected)}",
            f"--parallelism={args.parallelism}",
        ]
        lines, reason = run_pyflink_script(args.pyflink_python, "pyflink_nexmark.py", arguments)
        for line in lines:
            match = FIGURES_LINE.match(line)
            if match is not None and match["system"] == "pyflink":
                print(line, flush=True)
                figures[match["query"]] = (float(match["rate"]), int(match["outputs"]))
    for query in selected:
        if query not in figures:
            print(f"pyflink query={query}: {reason or 'no figures line'}")
            print(
                figures_line(
                    query, "pyflink", args.events, math.nan, args.parallelism, -1, math.nan
                )
            )
            figures[query] = (math.nan, -1)
    return figures


def check_outputs(outputs: dict[str, dict[str, int]]) -> None:
    """Fail unless every system with a figure gave each query as many outputs
    (``{query: {system: outputs}}``, -1: no figure)."""
    differ = {
        query: counts
        for query, counts in outputs.items()
        if len({count for count in counts.values() if count >= 0}) > 1
    }
    if differ:
        raise SystemExit(f"nexmark: the systems' output counts differ on the same events: {differ}")
    systems = sorted(
        {system for counts in outputs.values() for system, n in counts.items() if n >= 0}
    )
    print(f"nexmark outputs_agree=true systems={','.join(systems)}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    spark = start_session(args.master)
    cores = session_cores(args.master, spark.sparkContext.defaultParallelism)
    backends = list(BACKENDS) if args.backend == "both" else [args.backend]
    selected = args.queries.split(",")
    print(
        f"config events={args.events} rate={args.rate} parallelism={args.parallelism} "
        f"max_records_per_split={args.max_records_per_split} session_cores={cores}",
        flush=True,
    )
    rates: dict[str, dict[str, float]] = {query: {} for query in selected}
    outputs: dict[str, dict[str, int]] = {query: {} for query in selected}
    with tempfile.TemporaryDirectory(prefix="lockgate-nexmark-") as work:
        for backend in backends:
            for query in selected:
                run(spark, args, query, backend, WARM_UP_EVENTS, work)
        for backend in backends:
            system = f"lockgate-{backend}"
            for query in selected:
                with tempfile.TemporaryDirectory(prefix="lockgate-marks-") as marks_dir:
                    execute_s = run(spark, args, query, backend, args.events, work, marks_dir)
                    window = read_window(marks_dir)
                rates[query][system] = args.events / window.seconds
                outputs[query][system] = window.count
                line = figures_line(
                    query, system, args.events, window.seconds, cores, window.count, execute_s
                )
                print(line, flush=True)
    spark.stop()
    if args.peers:
        for query, (rate, count) in pyflink_figures(args, selected).items():
            rates[query]["pyflink"] = rate
            outputs[query]["pyflink"] = count
    check_outputs(outputs)
    if not args.peers:
        return
    ratios = [
        ratio(rates[query][f"lockgate-{backend}"], rates[query]["pyflink"])
        for query in selected
        for backend in backends
    ]
    low, middle = (
        (math.nan, math.nan)
        if any(math.isnan(r) for r in ratios)
        else (min(ratios), statistics.median(ratios))
    )
    print(f"nexmark ratio_vs_pyflink_min={low:.2f} ratio_vs_pyflink_median={middle:.2f}")


if __name__ == "__main__":
    main()
