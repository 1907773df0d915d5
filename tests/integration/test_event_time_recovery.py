"""Timers and windows under failures: restored from checkpoints with their watermarks, every
timer fires and every window is emitted exactly once in the committed output of an
exactly-once FileSink, on both backends.

The job: out-of-order events (never late: disorder below the strategy's bound), keyed
event-time timers that report how many of the key's events are at or before them, and
tumbling windows that sum their events, both into one exactly-once FileSink. The
reference is plain Python.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from exactly_once_job import Trap, checkpointed_env, committed_lines, file_sink
from lockgate_it_support import BACKENDS, FULL

from lockgate.common import Duration, Time, WatermarkStrategy
from lockgate.common.watermark_strategy import TimestampAssigner
from lockgate.datastream import KeyedProcessFunction
from lockgate.datastream.state import ListStateDescriptor
from lockgate.datastream.window import TumblingEventTimeWindows

BOUND = 25
EVENTS = 240  # 6 epochs of 40 per split (exactly_once_job.MAX_RECORDS)


def events() -> list[tuple[str, int, int]]:
    rng = random.Random(5)
    return [("abcdef"[i % 6], i * 5 + 100 - rng.randrange(BOUND), i) for i in range(EVENTS)]


class Timestamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class CountAtTimer(KeyedProcessFunction):
    def __init__(self, trap: Trap | None = None):
        self.trap = trap

    def open(self, runtime_context):
        self.seen = runtime_context.get_list_state(ListStateDescriptor("seen"))

    def process_element(self, value, ctx):
        self.seen.add(value[1])
        ctx.timer_service().register_event_time_timer(value[1] + 30)

    def on_timer(self, timestamp, ctx):
        if self.trap is not None:
            self.trap((ctx.get_current_key(), timestamp))
        count = sum(1 for ts in self.seen.get() if ts <= timestamp)
        yield f"timer,{ctx.get_current_key()},{timestamp},{count}"


def reference() -> Counter:
    records = events()
    lines: Counter = Counter()
    for key, timer in {(key, ts + 30) for key, ts, _ in records}:
        count = sum(1 for k, ts, _ in records if k == key and ts <= timer)
        lines[f"timer,{key},{timer},{count}"] += 1
    sums: Counter = Counter()
    for key, ts, value in records:
        sums[(key, ts - ts % 100)] += value
    for (key, start), total in sums.items():
        lines[f"window,{key},{start},{total}"] += 1
    return lines


def build(env, out: Path, trap: Trap | None = None) -> None:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(BOUND)
    ).with_timestamp_assigner(Timestamp())
    stamped = env.from_collection(events()).uid("events").assign_timestamps_and_watermarks(strategy)
    stamped = stamped.uid("stamps")
    timers = stamped.key_by(lambda r: r[0]).process(CountAtTimer(trap)).uid("timers")
    windows = (
        stamped.key_by(lambda r: r[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(100)))
        .reduce(lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2]))
        .uid("windows")
        .map(lambda r: f"window,{r[0]},{r[1] - r[1] % 100},{r[2]}")
    )
    timers.union(windows).sink_to(file_sink(out)).uid("sink")


# each failure pattern on one backend, not every pair; `make test` runs the one that fails
# twice (the injection points themselves are test_checkpoint_recovery's)
@pytest.mark.parametrize("parallelism", [3])
@pytest.mark.parametrize(
    ("inject", "backend"),
    [
        ("mid-commit@4,during-restore@1", "rocksdb"),
        pytest.param("after-snapshot-before-ack@3", "hashmap", marks=FULL),
    ],
)
def test_timers_and_windows_fire_exactly_once_across_failures(
    make_env, tmp_path, parallelism, inject
):
    env = checkpointed_env(
        make_env,
        tmp_path / "checkpoints",
        parallelism,
        settings={"lockgate.testing.inject-failure": inject},
    )
    build(env, tmp_path / "out")
    result = env.execute("event time under failures")
    assert result.restarts >= 1
    assert committed_lines(tmp_path / "out") == reference()


@BACKENDS
def test_a_failing_timer_fires_again_after_the_restore_and_once_in_the_output(make_env, tmp_path):
    # fires at the end of epoch 2, on both attempts Spark gives the task: a failover
    trap = Trap(("c", 427), tmp_path / "trap", times=2)
    assert ("c", 427 - 30) in {(k, ts) for k, ts, _ in events()}
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 2)
    build(env, tmp_path / "out", trap)
    result = env.execute("failing timer")
    assert result.restarts == 1 and trap.fired() == 2
    assert committed_lines(tmp_path / "out") == reference()
