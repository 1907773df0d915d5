"""Windows against plain-Python references: every assigner, the window functions, triggers,
lateness, sessions merging across epochs, on both backends, at several parallelisms and
epoch sizes (the output must not depend on either)."""

from __future__ import annotations

import random
from collections import Counter, defaultdict

import pytest
from lockgate_it_support import BACKENDS, FULL

from lockgate.common import Duration, Time, WatermarkStrategy
from lockgate.common.watermark_strategy import TimestampAssigner
from lockgate.datastream import (
    AggregateFunction,
    OutputTag,
    ProcessWindowFunction,
    WindowFunction,
)
from lockgate.datastream.connectors.file_system import FileSource, StreamFormat
from lockgate.datastream.functions import AllWindowFunction
from lockgate.datastream.state import ValueStateDescriptor
from lockgate.datastream.window import (
    CountTrigger,
    EventTimeSessionWindows,
    GlobalWindows,
    ProcessingTimeSessionWindows,
    PurgingTrigger,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)

BOUND_MS = 30


class SecondField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def bounded(bound_ms: int = BOUND_MS) -> WatermarkStrategy:
    return WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(bound_ms)
    ).with_timestamp_assigner(SecondField())


def events(count: int, keys: str = "abcd", step: int = 4, seed: int = 7) -> list[tuple]:
    """(key, timestamp, value), out of order by less than BOUND_MS."""
    rng = random.Random(seed)
    return [
        (keys[rng.randrange(len(keys))], i * step + 50 - rng.randrange(BOUND_MS), i)
        for i in range(count)
    ]


def windowed(env, records, bound_ms: int = BOUND_MS):
    return (
        env.from_collection(records)
        .assign_timestamps_and_watermarks(bounded(bound_ms))
        .key_by(lambda r: r[0])
    )


def tumbling_reference(records, size):
    groups = defaultdict(list)
    for key, ts, value in records:
        start = ts - ts % size
        groups[(key, start)].append(value)
    return groups


def sliding_reference(records, size, slide):
    groups = defaultdict(list)
    for key, ts, value in records:
        last = ts - ts % slide
        for start in range(last, ts - size, -slide):
            groups[(key, start)].append(value)
    return groups


def session_reference(records, gap):
    """(key, start, end) -> values, sessions merged as Flink merges them (touching too)."""
    by_key = defaultdict(list)
    for key, ts, value in records:
        by_key[key].append((ts, value))
    sessions = {}
    for key, items in by_key.items():
        items.sort()
        start, end, values = None, None, []
        for ts, value in items:
            if start is not None and ts <= end:
                end = max(end, ts + gap)
                values.append(value)
                continue
            if start is not None:
                sessions[(key, start, end)] = values
            start, end, values = ts, ts + gap, [value]
        sessions[(key, start, end)] = values
    return sessions


class SumValues(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return accumulator[0] + 1, accumulator[1] + value[2]

    def get_result(self, accumulator):
        return accumulator

    def merge(self, acc_a, acc_b):
        return acc_a[0] + acc_b[0], acc_a[1] + acc_b[1]


class Describe(ProcessWindowFunction):
    """(key, start, end, sorted values, max timestamp, watermark past the end)."""

    def process(self, key, context, elements):
        window = context.window()
        assert context.current_watermark() >= window.max_timestamp()
        yield key, window.start, window.end, tuple(sorted(e[2] for e in elements))


class ApplyDescribe(WindowFunction):
    def apply(self, key, window, inputs):
        yield key, window.start, window.end, tuple(sorted(e[2] for e in inputs))


def add_values(a, b):
    return a[0], max(a[1], b[1]), a[2] + b[2]


# (backend, parallelism, max records per split): several epochs on several subtasks on
# each backend; one epoch on one subtask in `make integration-full`
CASES = pytest.mark.parametrize(
    ("backend", "parallelism", "max_records"),
    [("hashmap", 3, 113), ("rocksdb", 2, 61), pytest.param("hashmap", 1, 1000, marks=FULL)],
)


@CASES
def test_tumbling_windows_all_functions(make_env, parallelism, max_records):
    records = events(500)
    reference = tumbling_reference(records, 50)
    env = make_env(parallelism=parallelism, max_records_per_split=max_records)
    stream = windowed(env, records).window(TumblingEventTimeWindows.of(Time.milliseconds(50)))
    described = stream.process(Describe())
    applied = windowed(env, records).window(TumblingEventTimeWindows.of(Time.milliseconds(50)))
    applied = applied.apply(ApplyDescribe())
    reduced = windowed(env, records).window(TumblingEventTimeWindows.of(Time.milliseconds(50)))
    reduced = reduced.reduce(add_values).map(lambda r: (r[0], r[2]))
    aggregated = windowed(env, records).window(TumblingEventTimeWindows.of(Time.milliseconds(50)))
    aggregated = aggregated.aggregate(SumValues())
    out = list(
        described.map(lambda r: ("process", r))
        .union(
            applied.map(lambda r: ("apply", r)),
            reduced.map(lambda r: ("reduce", r)),
            aggregated.map(lambda r: ("aggregate", r)),
        )
        .execute_and_collect()
    )
    expected = Counter()
    for (key, start), values in reference.items():
        described_window = (key, start, start + 50, tuple(sorted(values)))
        expected[("process", described_window)] += 1
        expected[("apply", described_window)] += 1
        expected[("reduce", (key, sum(values)))] += 1
        expected[("aggregate", (len(values), sum(values)))] += 1
    assert Counter(out) == expected


@CASES
def test_sliding_windows(make_env, parallelism, max_records):
    records = events(400)
    reference = sliding_reference(records, 60, 20)
    env = make_env(parallelism=parallelism, max_records_per_split=max_records)
    out = list(
        windowed(env, records)
        .window(SlidingEventTimeWindows.of(Time.milliseconds(60), Time.milliseconds(20)))
        .process(Describe())
        .execute_and_collect()
    )
    assert Counter(out) == Counter(
        (key, start, start + 60, tuple(sorted(values)))
        for (key, start), values in reference.items()
    )


def session_events(count: int, seed: int = 11) -> list[tuple]:
    """Bursts per key with gaps, delivered out of order so that later records bridge
    sessions that looked separate (merging across epochs)."""
    rng = random.Random(seed)
    records = []
    ts = 0
    for i in range(count):
        ts += rng.choice([1, 2, 3, 25, 40])
        records.append(("abc"[i % 3], ts, i))
    # swap neighbours: out of order by less than BOUND_MS most of the time
    for i in range(0, len(records) - 1, 2):
        if abs(records[i][1] - records[i + 1][1]) < BOUND_MS:
            records[i], records[i + 1] = records[i + 1], records[i]
    return records


@CASES
def test_session_windows_merge_across_epochs(make_env, parallelism, max_records):
    records = session_events(400)
    reference = session_reference(records, 20)
    env = make_env(parallelism=parallelism, max_records_per_split=max_records)
    sessions = windowed(env, records).window(
        EventTimeSessionWindows.with_gap(Time.milliseconds(20))
    )
    out = list(
        sessions.process(Describe())
        .map(lambda r: ("process", r))
        .union(
            windowed(env, records)
            .window(EventTimeSessionWindows.with_gap(Time.milliseconds(20)))
            .aggregate(SumValues())
            .map(lambda r: ("aggregate", r)),
            windowed(env, records)
            .window(EventTimeSessionWindows.with_gap(Time.milliseconds(20)))
            .reduce(add_values)
            .map(lambda r: ("reduce", (r[0], r[2]))),
        )
        .execute_and_collect()
    )
    expected = Counter()
    for (key, start, end), values in reference.items():
        expected[("process", (key, start, end, tuple(sorted(values))))] += 1
        expected[("aggregate", (len(values), sum(values)))] += 1
        expected[("reduce", (key, sum(values)))] += 1
    assert Counter(out) == expected


class GapFromValue(SessionWindowTimeGapExtractor):
    def extract(self, element):
        return 5 + element[2] % 3 * 10


def test_dynamic_gap_sessions(make_env):
    records = session_events(200)
    env = make_env(parallelism=2, max_records_per_split=37)
    out = list(
        windowed(env, records)
        .window(EventTimeSessionWindows.with_dynamic_gap(GapFromValue()))
        .process(Describe())
        .execute_and_collect()
    )
    # reference: per key, windows [ts, ts + gap(element)) merged while they overlap or touch
    by_key = defaultdict(list)
    for key, ts, value in records:
        by_key[key].append((ts, ts + 5 + value % 3 * 10, value))
    expected = []
    for key, windows in by_key.items():
        merged: list[list] = []
        for start, end, value in sorted(windows):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
                merged[-1][2].append(value)
            else:
                merged.append([start, end, [value]])
        expected += [(key, s, e, tuple(sorted(v))) for s, e, v in merged]
    assert Counter(out) == Counter(expected)


class CountValues(WindowFunction):
    def apply(self, key, window, inputs):
        yield key, window.id, [e[2] for e in inputs]


@BACKENDS
def test_count_windows_as_pyflink_counts_them(make_env):
    records = [("k", i, i) for i in range(11)] + [("j", i, 100 + i) for i in range(5)]
    env = make_env(parallelism=2, max_records_per_split=3)
    stream = env.from_collection(records).key_by(lambda r: r[0])
    tumbling = stream.count_window(4).apply(CountValues())
    sliding = env.from_collection(records).key_by(lambda r: r[0]).count_window(3, 2)
    out = list(
        tumbling.map(lambda r: ("tumbling", r[0], r[1], tuple(r[2])))
        .union(sliding.apply(CountValues()).map(lambda r: ("sliding", r[0], r[1], tuple(r[2]))))
        .execute_and_collect()
    )
    assert sorted(out) == sorted(
        [
            ("tumbling", "k", 0, (0, 1, 2, 3)),
            ("tumbling", "k", 1, (4, 5, 6, 7)),  # k's last 3 and j's 5 never fire
            ("tumbling", "j", 0, (100, 101, 102, 103)),
            # PyFlink's sliding count windows: window w holds elements w*2 .. w*2+2, fired once full
            ("sliding", "k", 0, (0, 1, 2)),
            ("sliding", "k", 1, (2, 3, 4)),
            ("sliding", "k", 2, (4, 5, 6)),
            ("sliding", "k", 3, (6, 7, 8)),
            ("sliding", "k", 4, (8, 9, 10)),
            ("sliding", "j", 0, (100, 101, 102)),
            ("sliding", "j", 1, (102, 103, 104)),
        ]
    )


class AllCount(AllWindowFunction):
    def apply(self, window, inputs):
        yield window.start, len(list(inputs))


def test_window_all_and_global_windows_with_triggers(make_env):
    records = events(300)
    env = make_env(parallelism=2, max_records_per_split=41)
    totals = list(
        env.from_collection(records)
        .assign_timestamps_and_watermarks(bounded())
        .window_all(TumblingEventTimeWindows.of(Time.milliseconds(100)))
        .apply(AllCount())
        .execute_and_collect()
    )
    expected = Counter(ts - ts % 100 for _, ts, _ in records)
    assert sorted(totals) == sorted(expected.items())

    env = make_env(parallelism=2, max_records_per_split=41)
    fired = list(
        env.from_collection(records)
        .key_by(lambda r: r[0])
        .window(GlobalWindows.create())
        .trigger(PurgingTrigger.of(CountTrigger.of(10)))
        .reduce(lambda a, b: (a[0], 0, a[2] + b[2]))
        .execute_and_collect()
    )
    per_key = Counter(key for key, _, _ in records)
    assert Counter(key for key, _, _ in fired) == Counter(
        {key: count // 10 for key, count in per_key.items() if count >= 10}
    )


class Lateness(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield key, context.window().start, sorted(e[2] for e in elements)


def test_late_records_are_dropped_or_go_to_the_side_output(make_env):
    """Two records after the watermark reached 189 (epochs of 5 records): one far behind it,
    one late for its window [100, 150) but within an allowed lateness of 60 (it fires the
    window again with it)."""
    on_time = [("k", ts, ts) for ts in range(0, 200, 10)]
    records = [*on_time, ("k", 5, -1), ("k", 135, -2)]
    late_tag = OutputTag("late")

    def run(lateness: int, tag: OutputTag | None):
        env = make_env(parallelism=1, max_records_per_split=5)
        stream = (
            env.from_collection(records)
            .assign_timestamps_and_watermarks(bounded(0))
            .key_by(lambda r: r[0])
            .window(TumblingEventTimeWindows.of(Time.milliseconds(50)))
            .allowed_lateness(lateness)
        )
        if tag is not None:
            stream = stream.side_output_late_data(tag)
        result = stream.process(Lateness())
        if tag is None:
            return list(result.execute_and_collect()), []
        late = result.get_side_output(tag).map(lambda r: ("late", r))
        out = list(result.map(lambda r: ("main", r)).union(late).execute_and_collect())
        return [r for kind, r in out if kind == "main"], [r for kind, r in out if kind == "late"]

    windows = [("k", start, list(range(start, start + 50, 10))) for start in (0, 50, 100, 150)]
    main, late = run(0, None)
    assert sorted(main) == windows  # both late records dropped
    main, late = run(0, late_tag)
    assert sorted(main) == windows
    assert sorted(late) == [("k", 5, -1), ("k", 135, -2)]
    main, late = run(60, late_tag)
    refired = ("k", 100, sorted([-2, *range(100, 150, 10)]))
    assert sorted(main) == sorted([*windows, refired])
    assert late == [("k", 5, -1)]


class PerWindowState(ProcessWindowFunction):
    """Counts firings per window (window state) and per key (global state); clear() runs
    when a window's state goes."""

    def process(self, key, context, elements):
        fired = context.window_state().get_state(ValueStateDescriptor("fired"))
        fired.update((fired.value() or 0) + 1)
        total = context.global_state().get_state(ValueStateDescriptor("total"))
        total.update((total.value() or 0) + 1)
        yield "fire", key, context.window().start, fired.value(), total.value()

    def clear(self, context):
        fired = context.window_state().get_state(ValueStateDescriptor("fired"))
        fired.clear()


@BACKENDS
def test_window_and_global_state_of_a_process_window_function(make_env):
    records = [("k", ts, ts) for ts in range(0, 100, 10)] + [("k", 45, 99)]
    env = make_env(parallelism=1, max_records_per_split=4)
    out = list(
        env.from_collection(records)
        .assign_timestamps_and_watermarks(bounded(0))
        .key_by(lambda r: r[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(50)))
        .allowed_lateness(1000)
        .process(PerWindowState())
        .execute_and_collect()
    )
    # epochs of 4: window 0 fires when epoch 2 ends (watermark 69), again at once for the
    # late 45 in epoch 3 (within the allowed lateness); window 50 at the end of the input
    assert out == [("fire", "k", 0, 1, 1), ("fire", "k", 0, 2, 2), ("fire", "k", 50, 1, 3)]


def test_time_window_merging_follows_flink():
    class Collect:
        def __init__(self):
            self.merges = []

        def merge(self, to_be_merged, merge_result):
            self.merges.append((list(to_be_merged), merge_result))

    collect = Collect()
    windows = [TimeWindow(0, 5), TimeWindow(5, 10), TimeWindow(20, 25), TimeWindow(3, 4)]
    TimeWindow.merge_windows(windows, collect)
    assert collect.merges == [
        ([TimeWindow(0, 5), TimeWindow(3, 4), TimeWindow(5, 10)], TimeWindow(0, 10))
    ]


class CountPerWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield key, len(list(elements))


def test_processing_time_windows_fire_on_the_clock_without_more_input(make_env, tmp_path):
    """A continuous job whose input is all read: its processing-time windows still fire, in
    epochs the driver runs for their timers."""
    directory = tmp_path / "in"
    directory.mkdir()
    lines = [f"k{i % 3},{i}" for i in range(30)]
    (directory / "part-0").write_text("".join(f"{line}\n" for line in lines))
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(directory))
        .monitor_continuously(Duration.of_millis(100))
        .build()
    )
    env = make_env(parallelism=2)
    keyed = env.from_source(source, WatermarkStrategy.no_watermarks(), "lines").key_by(
        lambda line: line.split(",")[0]
    )
    sessions = keyed.window(ProcessingTimeSessionWindows.with_gap(Time.milliseconds(300)))
    tumbling = env.from_source(source, WatermarkStrategy.no_watermarks(), "more").key_by(
        lambda line: line.split(",")[0]
    )
    tumbling = tumbling.window(TumblingProcessingTimeWindows.of(Time.milliseconds(200)))
    results = (
        sessions.process(CountPerWindow())
        .map(lambda r: ("session", r))
        .union(tumbling.process(CountPerWindow()).map(lambda r: ("tumbling", r)))
        .execute_and_collect()
    )
    counted: Counter = Counter()
    with results:
        for kind, (key, count) in results:
            counted[(kind, key)] += count
            if sum(counted.values()) == 2 * len(lines):
                break
    assert counted == Counter(
        {(kind, f"k{i}"): 10 for kind in ("session", "tumbling") for i in range(3)}
    )
