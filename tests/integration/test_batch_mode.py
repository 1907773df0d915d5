"""BATCH execution (``execution.runtime-mode``), with Flink's semantics on a bounded job read
over several epochs: keyed ``sum`` emits only each key's final value, event time jumps to
its end at the end of input (so no record is late, out of order as they come), and
processing-time timers fire at the end of input."""

from __future__ import annotations

from collections import Counter

from lockgate.common import Duration, Time, WatermarkStrategy
from lockgate.common.watermark_strategy import TimestampAssigner
from lockgate.datastream import (
    KeyedProcessFunction,
    ProcessWindowFunction,
    RuntimeExecutionMode,
)
from lockgate.datastream.state import ValueStateDescriptor
from lockgate.datastream.window import TumblingEventTimeWindows

KEYS = ("a", "b", "c")
# 60 events, timestamps running backwards within each block of 20: out of order enough that
# a STREAMING run with no allowed out-of-orderness drops most of them as late
EVENTS = [(KEYS[i % 3], i, (i // 20) * 1000 + (19 - i % 20) * 10) for i in range(60)]
WINDOW_MS = 100


class ByTimestamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class WindowTotal(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield ("window", key, context.window().start, sum(v for _, v in elements))


class TimerInAnHour(KeyedProcessFunction):
    def open(self, runtime_context):
        self.registered = runtime_context.get_state(ValueStateDescriptor("registered"))

    def process_element(self, value, ctx):
        if not self.registered.value():
            self.registered.update(True)
            service = ctx.timer_service()
            service.register_processing_time_timer(service.current_processing_time() + 3_600_000)
        return iter(())

    def on_timer(self, timestamp, ctx):
        yield ("timer", ctx.get_current_key())


def expected() -> Counter:
    lines: Counter = Counter()
    for key in KEYS:
        lines[("sum", key, sum(v for k, v, _ in EVENTS if k == key))] += 1
        lines[("timer", key)] += 1
    windows: dict[tuple[str, int], int] = {}
    for key, value, timestamp in EVENTS:
        start = timestamp - timestamp % WINDOW_MS
        windows[(key, start)] = windows.get((key, start), 0) + value
    lines.update(("window", key, start, total) for (key, start), total in windows.items())
    return lines


def test_a_bounded_job_in_batch_mode_emits_flink_s_batch_results(make_env):
    env = make_env(2, max_records_per_split=20)  # three epochs
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(0)
    ).with_timestamp_assigner(ByTimestamp())
    events = (
        env.from_collection(EVENTS).set_parallelism(1).assign_timestamps_and_watermarks(strategy)
    )
    sums = (
        events.map(lambda e: (e[0], e[1]))
        .key_by(lambda r: r[0])
        .sum(1)
        .map(lambda r: ("sum", r[0], r[1]))
    )
    windows = (
        events.map(lambda e: (e[0], e[1]))
        .key_by(lambda r: r[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
        .process(WindowTotal())
    )
    timers = events.key_by(lambda e: e[0]).process(TimerInAnHour())
    output = Counter(tuple(r) for r in sums.union(windows, timers).execute_and_collect())
    assert output == expected()
