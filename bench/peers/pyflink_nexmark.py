"""Peer of bench/nexmark.py on PyFlink (``apache-flink``): the same Nexmark queries over the
same events.

The queries are lockgate's own, ``examples/nexmark/queries.py``, loaded with their imports
swapped from ``lockgate`` to ``pyflink`` (lockgate's promise: that swap is the whole
migration). The one import PyFlink has no module for is Nexmark's records
(``lockgate.datastream.connectors.nexmark``, a lockgate connector): that name is given the
records of lockgate's pure-Python model (``lockgate/connectors/nexmark/model.py``), whose
generator (``generator.py``) makes the events. Both are imported from lockgate's ``src``,
put on the path of this interpreter and of the Python functions in the JVM; neither imports
anything of lockgate beyond its package ``__init__`` files (docstrings) and each other, so
neither Spark nor lockgate's runtime is loaded. The queries module is pickled by value
(``cloudpickle.register_pickle_by_value``), as bench/nexmark.py ships it to Spark's workers.

Each query's job: ``from_source(NumberSequenceSource(0, batches - 1))`` (batches of
``BATCH`` events, split contiguously over the subtasks, as ``NexmarkSource`` splits its
index ranges) ``-> flat_map(batch -> NexmarkGenerator(config).events(first, stop))`` (the
same events, generated in the same batches as lockgate's source, with its settings:
``nexmark_job.source_settings``) ``-> assign_timestamps_and_watermarks``
(bounded out-of-orderness of ``OUT_OF_ORDER_MAX_DELAY_MS``, the event's ``date_time``, as
``NexmarkSource.watermark_strategy``) ``->`` the query ``-> map(CountedOutputs) ->
DiscardingSink`` (Java's). Parallelism 2, Python functions in thread mode (else ``--mode
process``), the hashmap state backend, a checkpoint each second (none for q11:
``UNCHECKPOINTED`` says why), ``python.state.cache-size`` 100,000, bundles of 10,000
records, no restarts (``pyflink_setup.tuned_environment``, as pyflink_keyed_count.py). Every
query first runs once on 2,000 events (JIT and Python workers warmed up, as lockgate's
session is), then timed, each on a fresh environment (its own
mini-cluster) in this process. It prints per query ``nexmark_job.figures_line``:

    nexmark query=<q> system=pyflink events=... seconds=... events_per_s=...
        events_per_s_per_core=... outputs=... execute_s=...

on one line (``nan`` and ``outputs=-1`` when the query failed, with a ``pyflink query=<q>``
line before it saying why), timed over ``nexmark_job``'s record window; cores are the
parallelism (the mini-cluster's task slots).
"""

from __future__ import annotations

import argparse
import importlib
import math
import re
import sys
import tempfile
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from keyed_events import read_window
from nexmark_job import (
    OUT_OF_ORDER_MAX_DELAY_MS,
    WARM_UP_EVENTS,
    CountedOutputs,
    TimedEventTime,
    figures_line,
    source_settings,
)
from pyflink_setup import BENCH_DIR, discarding_sink, set_pythonpath, tuned_environment

ROOT = Path(__file__).resolve().parents[2]
QUERIES_PY = ROOT / "examples" / "nexmark" / "queries.py"
LOCKGATE_SRC = str(ROOT / "src")
STATE_CACHE_SIZE = 100_000
# Queries PyFlink cannot checkpoint: they run without checkpoints, which spares it that work.
UNCHECKPOINTED = {
    "q11": "PyFlink 2.3.0 in thread mode fails every checkpoint of the session window "
    "(ClassCastException in the operator's asynchronous snapshot) and the job fails",
}
_LOCKGATE_IMPORT = re.compile(r"^(from|import) lockgate\b", re.MULTILINE)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument("--rate", type=int, required=True, help="events per s of event time")
    parser.add_argument("--queries", required=True, help="comma-separated, e.g. q0,q5")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--mode", choices=("thread", "process"), default="thread")
    parser.add_argument("--checkpoint-interval-ms", type=int, default=1000)
    return parser.parse_args(argv)


def load_queries() -> types.ModuleType:
    """examples/nexmark/queries.py with ``lockgate`` imports made ``pyflink`` ones, Nexmark's
    records taken from lockgate's model."""
    model = importlib.import_module("lockgate.connectors.nexmark.model")
    sys.modules["pyflink.datastream.connectors.nexmark"] = model
    source = _LOCKGATE_IMPORT.sub(r"\1 pyflink", QUERIES_PY.read_text())
    module = types.ModuleType("nexmark_queries")
    module.__file__ = str(QUERIES_PY)
    sys.modules[module.__name__] = module
    exec(compile(source, str(QUERIES_PY), "exec"), module.__dict__)
    return module


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    set_pythonpath(args.mode, BENCH_DIR, LOCKGATE_SRC)
    sys.path.insert(0, LOCKGATE_SRC)

    import cloudpickle
    from pyflink.common import Duration, Types, WatermarkStrategy
    from pyflink.common.watermark_strategy import TimestampAssigner
    from pyflink.datastream import FlatMapFunction, MapFunction
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    from lockgate.connectors.nexmark.generator import BATCH, NexmarkConfig, NexmarkGenerator

    queries = load_queries()
    cloudpickle.register_pickle_by_value(queries)

    class Generate(FlatMapFunction):
        """The events of batch ``number`` of the configuration: ``BATCH`` events from
        ``number * BATCH``, generated together as lockgate's source generates them."""

        def __init__(self, config: NexmarkConfig):
            self.config = config

        def open(self, runtime_context):
            self.events = NexmarkGenerator(self.config).events

        def flat_map(self, value):
            first = value * BATCH
            return self.events(first, min(first + BATCH, self.config.events))

    class EventTime(TimedEventTime, TimestampAssigner):
        pass

    class Counted(CountedOutputs, MapFunction):
        pass

    def run(query: str, events: int, marks_dir: str | None) -> float:
        """Seconds of ``execute()``."""
        interval = 0 if query in UNCHECKPOINTED else args.checkpoint_interval_ms
        env = tuned_environment(args.mode, args.parallelism, STATE_CACHE_SIZE, interval)
        config = NexmarkConfig(events=events, **source_settings(args.rate))
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_millis(OUT_OF_ORDER_MAX_DELAY_MS)
        ).with_timestamp_assigner(EventTime(marks_dir))
        stream = (
            env.from_source(
                NumberSequenceSource(0, (events - 1) // BATCH),
                WatermarkStrategy.no_watermarks(),
                "batch",
            )
            .flat_map(Generate(config), output_type=Types.PICKLED_BYTE_ARRAY())
            .name("nexmark")
            .assign_timestamps_and_watermarks(strategy)
        )
        queries.QUERIES[query](env, stream).map(Counted(marks_dir)).sink_to(discarding_sink())
        started = time.perf_counter()
        env.execute(f"nexmark {query}")
        return time.perf_counter() - started

    for query in args.queries.split(","):
        if query in UNCHECKPOINTED and args.checkpoint_interval_ms > 0:
            print(f"pyflink query={query} checkpoints=off: {UNCHECKPOINTED[query]}")
        try:
            run(query, WARM_UP_EVENTS, None)
            with tempfile.TemporaryDirectory(prefix="pyflink-nexmark-") as marks_dir:
                execute_s = run(query, args.events, marks_dir)
                window = read_window(marks_dir)
        except Exception as error:  # one failed query is reported, the others still run
            lines = str(error).strip().splitlines()
            print(
                f"pyflink query={query} mode={args.mode} failed: {lines[0] if lines else error!r}"
            )
            print(
                figures_line(
                    query, "pyflink", args.events, math.nan, args.parallelism, -1, math.nan
                ),
                flush=True,
            )
            continue
        print(
            figures_line(
                query,
                "pyflink",
                args.events,
                window.seconds,
                args.parallelism,
                window.count,
                execute_s,
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
