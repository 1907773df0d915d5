"""Nexmark on lockgate: events/s of each query (``examples/nexmark/queries.py``) on each
keyed state backend (issue 13, point 4).

Each query runs over ``--events`` events of a ``NexmarkSource`` (generated in the Spark
tasks, ``--rate`` events per second of event time, 10% of them up to 1 s out of order, the
watermarks 1 s behind) into a ``DiscardingSink``. The rate is ``events / wall time`` of
``env.execute()``: unlike ``keyed_count``'s record window it includes the job's start and
end (the final checkpoint), which a large ``--events`` makes small. The Spark session is
warmed up first with every query on 2,000 events. Output, per query and backend:

    nexmark query=<q> backend=<hashmap|rocksdb> events=... seconds=... events_per_s=...

``--peers`` (the same queries on Flink's and Spark's own engines, as ``keyed_count`` and
``windows`` do) is left for later: it is accepted and says so.

Usage: ``PYTHONPATH=src python bench/nexmark.py [--events N] [--queries q0,q5]
[--backend hashmap|rocksdb|both] [--parallelism P] [--max-records-per-split M]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

# This file's name would hide examples/nexmark: put the examples first.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from nexmark.queries import QUERIES

from lockgate.common import Configuration
from lockgate.datastream import StreamExecutionEnvironment
from lockgate.datastream.connectors import DiscardingSink
from lockgate.datastream.connectors.nexmark import NexmarkSource
from lockgate.runtime.jobmaster.spark_session import get_or_create_session

BACKENDS = ("hashmap", "rocksdb")
WARM_UP_EVENTS = 2000


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--rate", type=int, default=10_000, help="events per s of event time")
    parser.add_argument("--queries", default=",".join(QUERIES))
    parser.add_argument("--backend", choices=[*BACKENDS, "both"], default="both")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--max-records-per-split", type=int, default=50_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--peers", action="store_true", help="not yet: see the docstring")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.queries.split(",")) - set(QUERIES))
    if unknown:
        parser.error(f"--queries: unknown {unknown}; there are {sorted(QUERIES)}")
    if args.events < 1:
        parser.error(f"--events must be >= 1, got {args.events}")
    return args


def run(spark, args: argparse.Namespace, query: str, backend: str, events: int, work: str) -> float:
    """Seconds that ``query`` takes over ``events`` events on ``backend``."""
    config = Configuration()
    config.set_string("lockgate.work-dir", f"{work}/{query}-{backend}-{events}")
    config.set_string("state.backend.type", backend)
    config.set_integer("lockgate.epoch.max-records-per-split", args.max_records_per_split)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.configure(config)
    env.set_parallelism(args.parallelism)
    source = NexmarkSource(
        events,
        events_per_second=args.rate,
        out_of_order_share=0.1,
        out_of_order_max_delay=1000,
    )
    stream = env.from_source(source, source.watermark_strategy(), "nexmark")
    QUERIES[query](env, stream).sink_to(DiscardingSink())
    started = time.perf_counter()
    env.execute(f"nexmark {query}")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.peers:
        print("nexmark: --peers is not implemented yet (lockgate only)", flush=True)
    spark = get_or_create_session(
        {
            "spark.master": args.master,
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.memory": "2g",
        }
    )
    backends = list(BACKENDS) if args.backend == "both" else [args.backend]
    queries = args.queries.split(",")
    with tempfile.TemporaryDirectory(prefix="lockgate-nexmark-") as work:
        for backend in backends:
            for query in queries:
                run(spark, args, query, backend, WARM_UP_EVENTS, work)
        for backend in backends:
            for query in queries:
                seconds = run(spark, args, query, backend, args.events, work)
                print(
                    f"nexmark query={query} backend={backend} events={args.events} "
                    f"seconds={seconds:.2f} events_per_s={args.events / seconds:.0f}",
                    flush=True,
                )
    spark.stop()


if __name__ == "__main__":
    main()
