"""The jobs of the state processor's integration test (not a test module).

``StateKinds`` keeps one keyed state of every kind (value, list, map, reducing,
aggregating, a value with TTL) and an event-time timer per key; a tumbling event-time window
keeps namespaced state and timers; ``Greeter`` reads a state that only a bootstrap gives it.
``expected_*`` compute in plain Python what the jobs hold and emit. Classes defined here are
pickled by reference (Spark's workers import this module from the test directory).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lockgate.common import Duration, Time, WatermarkStrategy
from lockgate.common.watermark_strategy import TimestampAssigner
from lockgate.datastream import KeyedProcessFunction
from lockgate.datastream.connectors import DiscardingSink
from lockgate.datastream.functions import AggregateFunction
from lockgate.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from lockgate.datastream.window import TumblingEventTimeWindows

USERS = 5
RECORDS = [(f"u{i % USERS}", i, i * 1000) for i in range(60)]  # (user, amount, timestamp)
FIRST_EPOCH = 30  # records the first epoch reads (lockgate.epoch.max-records-per-split)
TIMER_AT = 10**9  # every key's event-time timer: fires only at the end of the input
WINDOW_MS = 10_000


def add(a: int, b: int) -> int:
    return a + b


class SumAndCount(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return (accumulator[0] + value, accumulator[1] + 1)

    def get_result(self, accumulator):
        return accumulator

    def merge(self, acc_a, acc_b):
        return (acc_a[0] + acc_b[0], acc_a[1] + acc_b[1])


def descriptors() -> list[Any]:
    """The states of ``StateKinds``, as a job and the state processor declare them."""
    last_seen = ValueStateDescriptor("last_seen")
    last_seen.enable_time_to_live(StateTtlConfig.new_builder(Time.hours(1)).build())
    return [
        ValueStateDescriptor("count"),
        ListStateDescriptor("amounts"),
        MapStateDescriptor("by_parity"),
        ReducingStateDescriptor("total", add),
        AggregatingStateDescriptor("sum_count", SumAndCount()),
        last_seen,
    ]


class StateKinds(KeyedProcessFunction):
    """Emits, per record, the key's states after it (and the previous ``last_seen``);
    ``poison``: a file whose presence makes record ``fail_at`` raise."""

    def __init__(self, poison: str | None = None, fail_at: int = -1):
        self.poison = poison
        self.fail_at = fail_at

    def open(self, runtime_context):
        count, amounts, by_parity, total, sum_count, last_seen = descriptors()
        self.count = runtime_context.get_state(count)
        self.amounts = runtime_context.get_list_state(amounts)
        self.by_parity = runtime_context.get_map_state(by_parity)
        self.total = runtime_context.get_reducing_state(total)
        self.sum_count = runtime_context.get_aggregating_state(sum_count)
        self.last_seen = runtime_context.get_state(last_seen)

    def process_element(self, value, ctx):
        user, amount, timestamp = value
        if amount == self.fail_at and self.poison and Path(self.poison).exists():
            raise RuntimeError(f"poisoned record {value!r}")
        self.count.update((self.count.value() or 0) + 1)
        self.amounts.add(amount)
        parity = "even" if amount % 2 == 0 else "odd"
        self.by_parity.put(parity, (self.by_parity.get(parity) or 0) + amount)
        self.total.add(amount)
        self.sum_count.add(amount)
        previous = self.last_seen.value()
        self.last_seen.update(timestamp)
        ctx.timer_service().register_event_time_timer(TIMER_AT)
        yield (
            "state",
            user,
            self.count.value(),
            tuple(self.amounts.get()),
            tuple(sorted(self.by_parity.items())),
            self.total.get(),
            self.sum_count.get(),
            previous,
        )

    def on_timer(self, timestamp, ctx):
        yield ("timer", ctx.get_current_key(), timestamp)


class Greeter(KeyedProcessFunction):
    def open(self, runtime_context):
        self.greeting = runtime_context.get_state(ValueStateDescriptor("greeting"))

    def process_element(self, value, ctx):
        yield ("greeting", value[0], self.greeting.value())


class ByTimestamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


def sum_window(a, b):
    return (a[0], a[1] + b[1], max(a[2], b[2]))


def timestamped_events(env, records):
    """``records`` (user, amount, timestamp) with their timestamps, from one subtask: one
    channel into each keyed subtask, so each key sees its records in order."""
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(0)
    ).with_timestamp_assigner(ByTimestamp())
    return (
        env.from_collection(records)
        .set_parallelism(1)
        .uid("events")
        .assign_timestamps_and_watermarks(strategy)
        .set_parallelism(1)
        .uid("timestamps")
    )


def build(env, *, renamed: bool, poison: str | None = None, fail_at: int = -1):
    """Job A (``renamed`` False: uids ``state-kinds``, ``obsolete``) or job B (``renamed``:
    ``state-kinds-v2`` and a ``greeter``); both have the window ``window-sums``. Returns the
    stream of outputs (B) or None (A, whose outputs are discarded)."""
    events = timestamped_events(env, RECORDS)
    kinds = (
        events.key_by(lambda r: r[0])
        .process(StateKinds(poison, fail_at))
        .uid("state-kinds-v2" if renamed else "state-kinds")
    )
    windows = (
        events.key_by(lambda r: r[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
        .reduce(sum_window)
        .uid("window-sums")
        .map(lambda r: ("window", *r))
        .uid("window-labels")
    )
    if not renamed:
        events.map(lambda r: r).uid("obsolete").sink_to(DiscardingSink()).uid("obsolete-sink")
        kinds.union(windows).sink_to(DiscardingSink()).uid("discard")
        return None
    greetings = events.key_by(lambda r: r[0]).process(Greeter()).uid("greeter")
    return kinds.union(windows, greetings)


# What the jobs hold and emit -------------------------------------------------------------------


def replay(initial: dict[str, dict[str, Any]], records) -> tuple[dict[str, Any], list[Any]]:
    """Each key's states after ``records`` from the states ``initial``, and what
    ``StateKinds`` emits for them."""
    states = {
        user: {**s, "amounts": list(s["amounts"]), "by_parity": dict(s["by_parity"])}
        for user, s in initial.items()
    }
    out = []
    for user, amount, timestamp in records:
        s = states.setdefault(
            user,
            {"count": 0, "amounts": [], "by_parity": {}, "total": 0, "sum_count": (0, 0)},
        )
        s["count"] += 1
        s["amounts"].append(amount)
        parity = "even" if amount % 2 == 0 else "odd"
        s["by_parity"][parity] = s["by_parity"].get(parity, 0) + amount
        s["total"] += amount
        s["sum_count"] = (s["sum_count"][0] + amount, s["sum_count"][1] + 1)
        previous = s.get("last_seen")
        s["last_seen"] = timestamp
        out.append(
            (
                "state",
                user,
                s["count"],
                tuple(s["amounts"]),
                tuple(sorted(s["by_parity"].items())),
                s["total"],
                s["sum_count"],
                previous,
            )
        )
    return states, out


def window_sums(records) -> dict[tuple[str, int], tuple[str, int, int]]:
    """(user, window start) -> the window's reduced record."""
    sums: dict[tuple[str, int], tuple[str, int, int]] = {}
    for record in records:
        start = record[2] - record[2] % WINDOW_MS
        current = sums.get((record[0], start))
        sums[(record[0], start)] = record if current is None else sum_window(current, record)
    return sums
