"""Issue 10's new-user job, with lockgate's defaults: how fast a job runs untuned.

A keyed count over ``--events`` events (default 1M) from ``from_collection`` (one split, as
in Flink), string keys (10k users), checkpoints every second (EXACTLY_ONCE), and a filter
after the keyed function whose few outputs go to a DiscardingSink. No lockgate setting is
changed: epochs are sized by ``lockgate.epoch.target-duration`` and pipelined when they can be.

The job runs ``--runs`` times in one Spark session (the first run also warms the JVM) and
prints a line per run, then the figures of the run with the median wall time:

    new_user_job events_per_s=... after_first_epoch_events_per_s=... epochs=...
    sources_ahead=... median_epoch_ms=... cores=...

- ``events_per_s``: events over the wall time of ``env.execute()`` (job planning, the
  first epoch's subtask builds and the final checkpoint included).
- ``after_first_epoch_events_per_s``: the records of every epoch but the first over their
  durations: the steady rate, once the subtasks are built.
- ``sources_ahead``: epochs whose source stage ran while the epoch before them did
  (pipelined epochs).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from pyspark.sql import SparkSession

from lockgate.common import Configuration
from lockgate.datastream import CheckpointingMode, KeyedProcessFunction, StreamExecutionEnvironment
from lockgate.datastream.connectors import DiscardingSink
from lockgate.datastream.state import ValueStateDescriptor


class CountPerUser(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield value[0], count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(7)
    events = [(f"user-{rng.randrange(10_000)}", i) for i in range(args.events)]
    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.enable_checkpointing(1000, CheckpointingMode.EXACTLY_ONCE)
    runs = []
    for run in range(1, args.runs + 1):
        counts = env.from_collection(events).key_by(lambda e: e[0]).process(CountPerUser())
        counts.filter(lambda r: r[1] % 1000 == 0).sink_to(DiscardingSink())
        started = time.perf_counter()
        result = env.execute("new user job")
        wall = time.perf_counter() - started
        epochs = list(result.epochs)
        later = epochs[1:] or epochs
        steady = sum(e.records for e in later) / (sum(e.duration_ms for e in later) / 1000)
        figures = {
            "events_per_s": round(args.events / wall),
            "after_first_epoch_events_per_s": round(steady),
            "epochs": len(epochs),
            "sources_ahead": sum(e.sources_ahead for e in epochs),
            "median_epoch_ms": round(statistics.median(e.duration_ms for e in epochs), 1),
        }
        print(f"run {run}: wall_s={wall:.2f} " + " ".join(f"{k}={v}" for k, v in figures.items()))
        print(f"  epochs (records, ms): {[(e.records, round(e.duration_ms)) for e in epochs]}")
        runs.append((wall, figures))
    _, median = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
    session = SparkSession.getActiveSession()
    cores = session.sparkContext.defaultParallelism if session else "unknown"
    print("new_user_job " + " ".join(f"{k}={v}" for k, v in median.items()) + f" cores={cores}")


if __name__ == "__main__":
    main()
