"""connect(): co-map, co-flat-map, co-process and keyed co-process with shared state and
timers (whose watermark is the minimum of both inputs); side outputs; and the errors of
event-time misuse (timers without a key, windows without a key, bad timestamps)."""

from __future__ import annotations

from collections import Counter

import pytest
from lockgate_it_support import BACKENDS

from lockgate.common import Duration, Time, WatermarkStrategy
from lockgate.common.watermark_strategy import TimestampAssigner
from lockgate.datastream import (
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
)
from lockgate.datastream.state import ValueStateDescriptor
from lockgate.datastream.window import TumblingEventTimeWindows
from lockgate.runtime.errors import JobExecutionError

LONG_MAX = (1 << 63) - 1


class SecondField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def monotonous() -> WatermarkStrategy:
    return WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(SecondField())


class Tag(CoMapFunction):
    def map1(self, value):
        return ("left", value) if value % 3 else None  # None is dropped, as in PyFlink

    def map2(self, value):
        return ("right", value)


class Explode(CoFlatMapFunction):
    def flat_map1(self, value):
        yield from [value] * 2

    def flat_map2(self, value):
        return None  # nothing


def test_co_map_and_co_flat_map(make_env):
    env = make_env(parallelism=2, max_records_per_split=4)
    left = env.from_collection(list(range(10)))
    right = env.from_collection(list("abc"))
    mapped = list(left.connect(right).map(Tag()).execute_and_collect())
    assert Counter(mapped) == Counter(
        [("left", v) for v in range(10) if v % 3] + [("right", c) for c in "abc"]
    )
    env = make_env(parallelism=2, max_records_per_split=4)
    flat = env.from_collection([1, 2]).connect(env.from_collection([9])).flat_map(Explode())
    assert sorted(flat.execute_and_collect()) == [1, 1, 2, 2]
    with pytest.raises(TypeError, match="must be a CoMapFunction"):
        left.connect(right).map(lambda v: v)


class Match(KeyedCoProcessFunction):
    """Orders (1st input) and payments (2nd) by order id: emits a match when both came,
    or 'unpaid' when the order's time + 50 passes without a payment."""

    def open(self, runtime_context):
        self.order = runtime_context.get_state(ValueStateDescriptor("order"))
        self.paid = runtime_context.get_state(ValueStateDescriptor("paid"))

    def process_element1(self, value, ctx):
        self.order.update(value)
        ctx.timer_service().register_event_time_timer(value[1] + 50)
        if self.paid.value():
            yield "matched", ctx.get_current_key()

    def process_element2(self, value, ctx):
        self.paid.update(True)
        if self.order.value() is not None:
            yield "matched", ctx.get_current_key()

    def on_timer(self, timestamp, ctx):
        watermark = ctx.timer_service().current_watermark()
        if not self.paid.value():
            yield "unpaid", ctx.get_current_key(), watermark == LONG_MAX


@BACKENDS
def test_keyed_co_process_shares_state_and_timers_across_its_inputs(make_env):
    orders = [(f"o{i}", i * 10) for i in range(40)]
    # payments for even orders, far behind in event time (their timestamps are low): the
    # operator's watermark is held back by them until their input ends (before the orders')
    payments = [(f"o{i}", i) for i in range(0, 40, 2)]
    env = make_env(parallelism=2, max_records_per_split=7)
    out = list(
        env.from_collection(orders)
        .assign_timestamps_and_watermarks(monotonous())
        .connect(env.from_collection(payments).assign_timestamps_and_watermarks(monotonous()))
        .key_by(lambda o: o[0], lambda p: p[0])
        .process(Match())
        .execute_and_collect()
    )
    matched = [r for r in out if r[0] == "matched"]
    unpaid = {r[1]: r[2] for r in out if r[0] == "unpaid"}
    assert Counter(matched) == Counter([("matched", f"o{i}") for i in range(0, 40, 2)])
    assert len(out) == len(matched) + len(unpaid)
    assert set(unpaid) == {f"o{i}" for i in range(1, 40, 2)}
    # past the orders' last watermark (389) only the end of event time fires a timer; the
    # payments' input ends first, and from then on the orders' watermark fires the others
    assert all(unpaid[f"o{i}"] for i in range(1, 40, 2) if i * 10 + 50 > 389)
    assert not all(unpaid.values())


class NoKeyTimer(CoProcessFunction):
    def process_element1(self, value, ctx):
        ctx.timer_service().register_event_time_timer(1)

    def process_element2(self, value, ctx):
        yield value


def test_timers_on_unkeyed_streams_fail_saying_what_to_use(make_env):
    env = make_env(parallelism=1)
    job = env.from_collection([1]).connect(env.from_collection([2])).process(NoKeyTimer())
    with pytest.raises(JobExecutionError, match=r"key_by\(k1, k2\)\) and use a KeyedCoProcess"):
        list(job.execute_and_collect())


class Route(ProcessFunction):
    def __init__(self):
        self.odd = OutputTag("odd")
        self.loud = OutputTag("loud")

    def process_element(self, value, ctx):
        if value % 2:
            yield self.odd, value
        elif value % 5 == 0:
            yield self.loud, value
        else:
            yield value


def test_side_outputs_chained_and_shuffled(make_env):
    env = make_env(parallelism=2, max_records_per_split=6)
    route = Route()
    main = env.from_collection(list(range(20))).process(route)
    odd = main.get_side_output(OutputTag("odd")).map(lambda v: ("odd", v))  # chained
    loud = main.get_side_output(OutputTag("loud")).rebalance().map(lambda v: ("loud", v))
    out = list(main.map(lambda v: ("main", v)).union(odd, loud).execute_and_collect())
    assert Counter(out) == Counter(
        [("odd", v) for v in range(1, 20, 2)]
        + [("loud", v) for v in (0, 10)]
        + [("main", v) for v in range(20) if v % 2 == 0 and v % 5]
    )


def test_a_side_output_nobody_reads_goes_to_the_main_output_as_in_pyflink(make_env):
    env = make_env(parallelism=1)
    route = Route()
    main = env.from_collection(list(range(6))).process(route)
    odd = main.get_side_output(OutputTag("odd"))
    out = list(
        main.map(lambda v: ("main", v)).union(odd.map(lambda v: ("odd", v))).execute_and_collect()
    )
    assert Counter(out) == Counter(
        [("odd", 1), ("odd", 3), ("odd", 5), ("main", (OutputTag("loud"), 0))]
        + [("main", v) for v in (2, 4)]
    )


class TimerSideOutput(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value[1] + 5)
        yield value[0]

    def on_timer(self, timestamp, ctx):
        yield OutputTag("timers"), (ctx.get_current_key(), timestamp)


def test_on_timer_can_yield_to_a_side_output(make_env):
    env = make_env(parallelism=2, max_records_per_split=3)
    records = [("a", 1), ("b", 2), ("a", 20)]
    main = (
        env.from_collection(records)
        .assign_timestamps_and_watermarks(monotonous())
        .key_by(lambda r: r[0])
        .process(TimerSideOutput())
    )
    fired = main.get_side_output(OutputTag("timers")).map(lambda t: ("timer", t))
    out = list(main.map(lambda k: ("main", k)).union(fired).execute_and_collect())
    main_out = [("main", "a"), ("main", "b"), ("main", "a")]
    timers_out = [("timer", ("a", 6)), ("timer", ("b", 7)), ("timer", ("a", 25))]
    assert Counter(out) == Counter(main_out + timers_out)


class BadAssigner(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return str(value)


def test_a_timestamp_assigner_returning_a_non_int_fails_naming_where(make_env):
    env = make_env(parallelism=1)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(BadAssigner())
    job = env.from_collection([("x", 1)]).assign_timestamps_and_watermarks(strategy)
    job.uid("stamps")
    with pytest.raises(JobExecutionError) as info:
        list(job.execute_and_collect())
    message = str(info.value)
    for part in ("Timestamps/Watermarks", "uid 'stamps'", "subtask 0/1", "epoch 1", "('x', 1)"):
        assert part in message
    assert "not an int" in message


def test_bad_window_and_strategy_arguments_fail_when_the_job_is_built(make_env):
    env = make_env(parallelism=1)
    stream = env.from_collection([1])
    with pytest.raises(TypeError, match="key_by"):
        stream.window(TumblingEventTimeWindows.of(Time.milliseconds(5)))
    with pytest.raises(ValueError, match="must be positive"):
        TumblingEventTimeWindows.of(Time.milliseconds(-5))
    with pytest.raises(ValueError, match="must not be negative"):
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(-1))
    with pytest.raises(ValueError, match="allowed_lateness"):
        stream.key_by(lambda v: v).window(
            TumblingEventTimeWindows.of(Time.milliseconds(5))
        ).allowed_lateness(-1)
    with pytest.raises(TypeError, match="KeyedStream"):
        stream.process(TimerSideOutput())
