"""Broadcast state: ``broadcast(descriptor)``, ``connect`` and (Keyed)BroadcastProcessFunction,
with keyed state, timers and ``apply_to_keyed_state``; restored from a savepoint at another
parallelism into the other backend."""

from __future__ import annotations

from collections import Counter

import pytest
from exactly_once_job import (
    checkpointed_env,
    committed_lines,
    file_sink,
    recovery_settings,
    stop_with_savepoint_at_first_epoch,
)

from lockgate.common import Types, WatermarkStrategy
from lockgate.common.watermark_strategy import TimestampAssigner
from lockgate.datastream import (
    BroadcastProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedProcessFunction,
)
from lockgate.datastream.state import MapStateDescriptor, ValueStateDescriptor
from lockgate.runtime.errors import JobExecutionError

RULES = MapStateDescriptor("rules", Types.STRING(), Types.INT())
COUNT = ValueStateDescriptor("count")
KEYS = 5
EVENTS = [(f"k{t % KEYS}", t) for t in range(100)]  # two splits: t < 50, t >= 50
TIMER = 1000  # after every event: it fires at the end of the input


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class ScaledCounts(KeyedBroadcastProcessFunction):
    """Counts per key, scaled by the broadcast rule "mult"; a "reset" rule emits and clears
    every key's count; a timer reports each key's count at the end of event time."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(COUNT)

    def process_broadcast_element(self, value, ctx):
        name, argument = value
        if name != "reset":
            ctx.get_broadcast_state(RULES).put(name, argument)
            return
        found = []

        def reset(key, state):
            found.append((key, state.value()))
            state.clear()

        ctx.apply_to_keyed_state(COUNT, reset)
        for key, count in found:
            yield f"reset,{key},{count}"

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        ctx.timer_service().register_event_time_timer(TIMER)
        yield f"{ctx.get_current_key()},{count * ctx.get_broadcast_state(RULES).get('mult')}"

    def on_timer(self, timestamp, ctx):
        yield f"timer,{ctx.get_current_key()},{self.count.value()}"


def build(env, rules, out, parallelism):
    events = (
        env.from_collection(EVENTS)
        .set_parallelism(2)
        .uid("events")
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime())
        )
        .uid("timestamps")
    )
    broadcast = env.from_collection(rules).uid("rules").broadcast(RULES)
    (
        events.key_by(lambda e: e[0])
        .connect(broadcast)
        .process(ScaledCounts())
        .uid("scaled-counts")
        .set_parallelism(parallelism)
        .sink_to(file_sink(out))
        .uid("file-sink")
    )


def test_keyed_broadcast_state_timers_and_apply_to_keyed_state_across_a_savepoint(
    make_env, tmp_path
):
    out = tmp_path / "out"
    # run 1, parallelism 2, heap: the rule, then 30 events of each split; stopped
    env = checkpointed_env(make_env, tmp_path / "checkpoints-1", 2)
    config = env.get_configuration()  # the first epoch reads 30 records per split
    config.set_string("lockgate.epoch.max-records-per-split", "30")
    env.configure(config)
    build(env, [("mult", 10)], out, 2)
    savepoint = stop_with_savepoint_at_first_epoch(env, tmp_path / "savepoints")
    first = Counter(
        f"k{k},{10 * n}" for k in range(KEYS) for n in range(1, 13)
    )  # t 0..29 and 50..79: 12 per key
    assert committed_lines(out) == first

    # run 2, parallelism 3, RocksDB: the rules source goes on with a reset (processed before
    # any event of the epoch), the events with the rest
    env = checkpointed_env(
        make_env,
        tmp_path / "checkpoints-2",
        3,
        settings={**recovery_settings(savepoint), "state.backend.type": "rocksdb"},
    )
    build(env, [("mult", 10), ("reset", 0)], out, 3)
    env.execute("second run")
    second = Counter(
        [f"reset,k{k},12" for k in range(KEYS)]
        + [f"k{k},{10 * n}" for k in range(KEYS) for n in range(1, 9)]  # mult was restored
        + [f"timer,k{k},8" for k in range(KEYS)]  # timers of run 1, restored
    )
    assert committed_lines(out) == first + second


class Multiply(BroadcastProcessFunction):
    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(RULES).put("factor", value)

    def process_element(self, value, ctx):
        rules = ctx.get_broadcast_state(RULES)
        assert not hasattr(rules, "put")
        yield value * rules.get("factor")


def test_a_stream_that_is_not_keyed_sees_the_broadcast_state_on_every_subtask(make_env):
    env = make_env(3)
    factors = env.from_collection([7]).broadcast(RULES)
    numbers = env.from_collection(list(range(30))).set_parallelism(3).rebalance()
    results = numbers.connect(factors).process(Multiply()).execute_and_collect(limit=100)
    assert sorted(results) == [7 * n for n in range(30)]


class Undeclared(BroadcastProcessFunction):
    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(MapStateDescriptor("other"))

    def process_element(self, value, ctx):
        yield value


def test_broadcast_state_must_be_declared_and_functions_must_fit_the_stream(make_env):
    env = make_env(1)
    stream = env.from_collection([1]).connect(env.from_collection([2]).broadcast(RULES))
    with pytest.raises(TypeError, match="BroadcastProcessFunction should be applied to non-keyed"):
        stream.process(ScaledCounts())
    keyed = (
        env.from_collection([1])
        .key_by(lambda x: x)
        .connect(env.from_collection([2]).broadcast(RULES))
    )
    with pytest.raises(TypeError, match="KeyedBroadcastProcessFunction should be applied"):
        keyed.process(Multiply())
    with pytest.raises(TypeError, match="must be MapStateDescriptors"):
        env.from_collection([2]).broadcast(COUNT)

    env = make_env(1)
    rules = env.from_collection([2]).broadcast(RULES)
    env.from_collection([1]).connect(rules).process(Undeclared()).print()
    with pytest.raises(JobExecutionError, match=r"broadcast state 'other' was not declared"):
        env.execute("undeclared state")


class KeyedStateOnTheBroadcastSide(ScaledCounts):
    def process_broadcast_element(self, value, ctx):
        self.count.update(1)  # no key is current here
        yield value


def test_keyed_state_on_the_broadcast_side_fails_saying_no_key_is_current(make_env):
    env = make_env(1)
    rules = env.from_collection([("mult", 2)]).broadcast(RULES)
    keyed = env.from_collection([("k", 1)]).key_by(lambda e: e[0])
    keyed.connect(rules).process(KeyedStateOnTheBroadcastSide()).uid("counts").print()
    with pytest.raises(JobExecutionError, match=r"uid 'counts'.*no key is current"):
        env.execute("keyed state without a key")


def test_keyed_process_functions_are_not_broadcast_functions(make_env):
    env = make_env(1)
    keyed = env.from_collection([1]).key_by(lambda x: x)

    class Plain(KeyedProcessFunction):
        def process_element(self, value, ctx):
            yield value

    with pytest.raises(TypeError, match="KeyedBroadcastProcessFunction"):
        keyed.connect(env.from_collection([2]).broadcast(RULES)).process(Plain())
