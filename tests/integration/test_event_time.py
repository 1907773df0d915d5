"""Event time end to end: timestamps through chains and shuffles, watermarks, event-time timers.

The reference for every job is plain Python over the same records. Input is out of order by
less than the strategy's bound, so no record is late and the output must not depend on the
epoch size or the parallelism.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

from lockgate_it_support import BACKENDS, matrix

from lockgate.common import Duration, WatermarkStrategy
from lockgate.common.watermark_strategy import TimestampAssigner
from lockgate.datastream import KeyedCoProcessFunction, KeyedProcessFunction, ProcessFunction
from lockgate.datastream.state import ListStateDescriptor

BOUND_MS = 20
LONG_MIN = -(1 << 63)
LONG_MAX = (1 << 63) - 1


def out_of_order(count: int, keys: str = "abcde", seed: int = 3) -> list[tuple[str, int]]:
    """(key, timestamp): timestamps rise by 3 per record, each moved back by up to
    BOUND_MS - 1, so none is behind the bounded-out-of-orderness watermark."""
    rng = random.Random(seed)
    return [(keys[i % len(keys)], i * 3 + 40 - rng.randrange(BOUND_MS)) for i in range(count)]


class SecondField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def strategy() -> WatermarkStrategy:
    return WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(BOUND_MS)
    ).with_timestamp_assigner(SecondField())


class CountAtTimer(KeyedProcessFunction):
    """Per record a timer at its timestamp + 10; a firing timer reports how many of the key's
    records are at or before its time, its timestamp and the watermark it fired at."""

    def open(self, runtime_context):
        self.seen = runtime_context.get_list_state(ListStateDescriptor("seen"))

    def process_element(self, value, ctx):
        assert ctx.timestamp() == value[1]
        assert ctx.timer_service().current_watermark() < value[1]  # never late here
        self.seen.add(value[1])
        ctx.timer_service().register_event_time_timer(value[1] + 10)

    def on_timer(self, timestamp, ctx):
        assert ctx.timestamp() == timestamp
        assert ctx.timer_service().current_watermark() >= timestamp
        count = sum(1 for ts in self.seen.get() if ts <= timestamp)
        yield ctx.get_current_key(), timestamp, count, ctx.time_domain().name


def expected_counts(records: list[tuple[str, int]]) -> Counter:
    expected: Counter = Counter()
    for key, timer in {(key, ts + 10) for key, ts in records}:
        count = sum(1 for k, ts in records if k == key and ts <= timer)
        expected[(key, timer, count, "EVENT_TIME")] += 1
    return expected


@BACKENDS
# one epoch on one subtask (1, 1000) in `make integration-full` only
@matrix("parallelism, max_records", [(2, 37), (3, 101), (1, 1000)])
def test_event_time_timers_fire_once_in_order_whatever_the_epoch_size(
    make_env, parallelism, max_records
):
    records = out_of_order(600)
    env = make_env(parallelism=parallelism, max_records_per_split=max_records)
    fired = list(
        env.from_collection(records)
        .assign_timestamps_and_watermarks(strategy())
        .key_by(lambda r: r[0])
        .process(CountAtTimer())
        .execute_and_collect()
    )
    assert Counter(fired) == expected_counts(records)
    for key in "abcde":  # a key's timers fire in time order
        times = [timer for k, timer, _, _ in fired if k == key]
        assert times == sorted(times)


class Stamps(ProcessFunction):
    def process_element(self, value, ctx):
        yield value, ctx.timestamp()


def test_timestamps_travel_through_chains_and_shuffles(make_env):
    records = out_of_order(200)
    env = make_env(parallelism=2, max_records_per_split=50)
    stamped = (
        env.from_collection(records)
        .assign_timestamps_and_watermarks(strategy())
        .map(lambda r: (r[0].upper(), r[1]))  # chained: keeps the timestamp
        .rebalance()
        .process(Stamps())  # after a shuffle
        .key_by(lambda r: r[0][0])
        .map(lambda r: r)  # keyed, after another shuffle
        .process(Stamps())
        .execute_and_collect()
    )
    assert sorted(stamped) == sorted((((k.upper(), ts), ts), ts) for k, ts in records)


def test_records_without_an_assigner_have_no_timestamp(make_env):
    env = make_env(parallelism=1)
    stamped = list(env.from_collection([1, 2]).process(Stamps()).execute_and_collect())
    assert stamped == [(1, LONG_MIN), (2, LONG_MIN)]


class SeenAtTimer(CountAtTimer):
    def on_timer(self, timestamp, ctx):
        yield (
            ctx.get_current_key(),
            timestamp,
            len(self.seen.get()),
            ctx.timer_service().current_watermark(),
        )


@BACKENDS
def test_without_watermarks_timers_fire_at_the_end_of_input(make_env):
    records = out_of_order(300)
    env = make_env(parallelism=2, max_records_per_split=40)
    no_watermarks = WatermarkStrategy.no_watermarks().with_timestamp_assigner(SecondField())
    fired = list(
        env.from_collection(records)
        .assign_timestamps_and_watermarks(no_watermarks)
        .key_by(lambda r: r[0])
        .process(SeenAtTimer())
        .execute_and_collect()
    )
    # every timer fires on the final watermark, when each key has seen all its records
    assert Counter(fired) == Counter(
        (key, timer, sum(1 for k, _ in records if k == key), LONG_MAX)
        for key, timer in {(key, ts + 10) for key, ts in records}
    )


class ProcessingTimers(KeyedProcessFunction):
    """Per record a processing-time timer ``delay_ms`` from now, and one it deletes again."""

    def __init__(self, delay_ms: int):
        self.delay_ms = delay_ms

    def process_element(self, value, ctx):
        timers = ctx.timer_service()
        now = timers.current_processing_time()
        timers.register_processing_time_timer(now + self.delay_ms)
        timers.register_processing_time_timer(now + self.delay_ms + 1)
        timers.delete_processing_time_timer(now + self.delay_ms + 1)
        yield "element", value

    def on_timer(self, timestamp, ctx):
        assert ctx.timestamp() == timestamp
        yield "timer", ctx.get_current_key(), ctx.time_domain().name


@BACKENDS
def test_due_processing_time_timers_fire_at_the_end_of_the_epoch(make_env):
    env = make_env(parallelism=2, max_records_per_split=3)
    out = list(
        env.from_collection(list(range(8)))
        .key_by(lambda v: v)
        .process(ProcessingTimers(delay_ms=-1))
        .execute_and_collect()
    )
    assert Counter(out) == Counter(
        [("element", v) for v in range(8)] + [("timer", v, "PROCESSING_TIME") for v in range(8)]
    )


def test_an_epoch_runs_without_input_when_a_processing_time_timer_is_due(make_env, tmp_path):
    """A continuous job whose input has all been read still fires its timers on time."""
    from lockgate.datastream.connectors.file_system import FileSource, StreamFormat

    directory = tmp_path / "in"
    directory.mkdir()
    (directory / "part-0").write_text("a\nb\nc\n")
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(directory))
        .monitor_continuously(Duration.of_millis(100))
        .build()
    )
    env = make_env(parallelism=1)
    started = time.monotonic()
    out = (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "files")
        .key_by(lambda line: line)
        .process(ProcessingTimers(delay_ms=1500))
        .execute_and_collect(limit=6)
    )
    assert Counter(out) == Counter(
        [("element", k) for k in "abc"] + [("timer", k, "PROCESSING_TIME") for k in "abc"]
    )
    assert time.monotonic() - started >= 1.5


class LateCount(KeyedProcessFunction):
    """Reports each record with whether it was behind the watermark when it arrived."""

    def process_element(self, value, ctx):
        yield value, ctx.timestamp() <= ctx.timer_service().current_watermark()


class FirstField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return int(value.split(",")[0])


def test_a_source_keeps_a_watermark_per_split(make_env, tmp_path):
    """Two files read by one source subtask, one far ahead in event time: per split, the
    slow file's records are never late; one watermark over both would make most of them
    late."""
    from lockgate.datastream.connectors.file_system import FileSource, StreamFormat

    directory = tmp_path / "in"
    directory.mkdir()
    (directory / "fast").write_text("".join(f"{1000 + 10 * i},fast\n" for i in range(200)))
    (directory / "slow").write_text("".join(f"{i},slow\n" for i in range(200)))
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(directory)
    ).build()
    monotonous = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(FirstField())
    env = make_env(parallelism=1, max_records_per_split=20)
    late = list(
        env.from_source(source, monotonous, "files")
        .key_by(lambda line: line.split(",")[1])
        .process(LateCount())
        .execute_and_collect()
    )
    assert len(late) == 400
    assert not any(is_late for _, is_late in late)

    env = make_env(parallelism=1, max_records_per_split=20)
    late = list(
        env.from_source(source, WatermarkStrategy.no_watermarks(), "files")
        .assign_timestamps_and_watermarks(monotonous)  # one watermark for the subtask
        .key_by(lambda line: line.split(",")[1])
        .process(LateCount())
        .execute_and_collect()
    )
    assert sum(is_late for line, is_late in late if line.endswith("slow")) > 150


def test_a_union_moves_at_the_pace_of_its_slowest_input(make_env):
    """Timers on a union fire only once both inputs passed them: the count a timer sees is
    everything at or before it, from both inputs."""
    fast = [("k", 100 + 10 * i) for i in range(300)]
    slow = [("k", i) for i in range(300)]
    env = make_env(parallelism=2, max_records_per_split=25)
    bounded = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(SecondField())
    fired = list(
        env.from_collection(fast)
        .assign_timestamps_and_watermarks(bounded)
        .union(env.from_collection(slow).assign_timestamps_and_watermarks(bounded))
        .key_by(lambda r: r[0])
        .process(CountAtTimer())
        .execute_and_collect()
    )
    assert Counter(fired) == expected_counts(fast + slow)


class TimerAtWatermark(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value[1])

    def on_timer(self, timestamp, ctx):
        yield ctx.timer_service().current_watermark() == LONG_MAX


def test_an_idle_input_stops_holding_the_watermark_back(make_env):
    """All keys go to subtask 0 of the keyed operator; the assigner chained after it on
    subtask 1 sees nothing. With idleness its subtask stops holding the watermark back and
    timers fire before the end of the input; without, only at the end."""

    def run(strategy_of_assigner):
        records = [(0, 10 * i) for i in range(400)]  # key 0: one key, one subtask
        env = make_env(parallelism=2, max_records_per_split=20)
        return list(
            env.from_collection(records)
            .key_by(lambda r: r[0])
            .map(lambda r: r)
            .assign_timestamps_and_watermarks(strategy_of_assigner)
            .key_by(lambda r: r[0])
            .process(TimerAtWatermark())
            .execute_and_collect()
        )

    monotonous = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        SecondField()
    )
    assert all(run(monotonous))  # held back by the idle subtask until the end
    idle = monotonous.with_idleness(Duration.of_millis(1))
    assert not all(run(idle))


class TimerAtTimestamp(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(ctx.timestamp())

    def on_timer(self, timestamp, ctx):
        yield timestamp


def _continuous_files(directory):
    from lockgate.datastream.connectors.file_system import FileSource, StreamFormat

    return (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(directory))
        .monitor_continuously(Duration.of_millis(100))
        .build()
    )


def _first(records, count: int, seconds: float = 60) -> list:
    """The first ``count`` records of a job that runs on; fails (and ends the job) if they
    take longer than ``seconds``."""
    got: list = []

    def take():
        for record in records:
            got.append(record)
            if len(got) == count:
                return

    reader = threading.Thread(target=take, daemon=True)
    reader.start()
    reader.join(seconds)
    records.close()
    assert len(got) == count, f"{len(got)} of {count} records within {seconds} s: {got}"
    return got


def test_a_file_read_whole_in_one_epoch_moves_event_time(make_env, tmp_path):
    """A continuous source never ends its input; its only file is read in one epoch, and the
    watermark of that file's records still counts."""
    directory = tmp_path / "in"
    directory.mkdir()
    (directory / "part-0").write_text("".join(f"{ts},k\n" for ts in range(1, 51)))
    monotonous = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(FirstField())
    env = make_env(parallelism=1)
    fired = (
        env.from_source(_continuous_files(directory), monotonous, "files")
        .key_by(lambda line: "k")
        .process(TimerAtTimestamp())
        .execute_and_collect()
    )
    assert sorted(_first(fired, 49)) == list(range(1, 50))  # the watermark is 50 - 1


class RulesAndEvents(KeyedCoProcessFunction):
    def process_element1(self, value, ctx):
        ctx.timer_service().register_event_time_timer(ctx.timestamp())

    def process_element2(self, value, ctx):
        return None

    def on_timer(self, timestamp, ctx):
        yield timestamp


def test_a_bounded_source_that_ends_sends_the_end_of_event_time(make_env, tmp_path):
    """As in Flink, a source read to its end sends the end of event time whatever the other
    sources do: a collection of rules without watermarks, connected to continuous events,
    stops holding the events' watermark back once it is read."""
    directory = tmp_path / "in"
    directory.mkdir()
    (directory / "part-0").write_text("".join(f"{ts},k\n" for ts in range(1, 51)))
    monotonous = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(FirstField())
    env = make_env(parallelism=1)
    events = env.from_source(_continuous_files(directory), monotonous, "events")
    rules = env.from_collection([("k", "rule")])
    fired = (
        events.connect(rules)
        .key_by(lambda line: "k", lambda rule: rule[0])
        .process(RulesAndEvents())
        .execute_and_collect()
    )
    assert sorted(_first(fired, 49)) == list(range(1, 50))


def test_inputs_that_stop_become_idle_without_more_input(make_env, tmp_path):
    """Two continuous inputs, one behind the other in event time, both stop: once their
    idle timeout has passed the driver runs an epoch without input, both are idle, and the
    watermark moves to the one ahead (Flink's valve), firing its timers."""
    ahead, behind = tmp_path / "ahead", tmp_path / "behind"
    ahead.mkdir()
    behind.mkdir()
    (ahead / "part-0").write_text("".join(f"{ts},k\n" for ts in range(10, 1001, 10)))
    (behind / "part-0").write_text("".join(f"{ts},k\n" for ts in range(1, 101)))
    idle = (
        WatermarkStrategy.for_monotonous_timestamps()
        .with_timestamp_assigner(FirstField())
        .with_idleness(Duration.of_millis(300))
    )
    env = make_env(parallelism=1)

    def read(directory, name):
        return env.from_source(
            _continuous_files(directory), WatermarkStrategy.no_watermarks(), name
        ).assign_timestamps_and_watermarks(idle)

    fired = (
        read(ahead, "ahead")
        .union(read(behind, "behind"))
        .key_by(lambda line: "k")
        .process(TimerAtTimestamp())
        .execute_and_collect()
    )
    stamps = sorted({*range(10, 1001, 10), *range(1, 101)})
    assert sorted(_first(fired, len(stamps) - 1)) == stamps[:-1]  # the watermark is 1000 - 1
