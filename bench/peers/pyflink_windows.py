"""Peer of bench/windows.py on PyFlink (``apache-flink``): the same three event-time jobs.

``from_collection(events) -> assign_timestamps_and_watermarks(for_bounded_out_of_orderness(2 s)
with a timestamp assigner) -> key_by(key) ->`` one of (``window_events``' JOBS)

- ``tumbling``: ``window(TumblingEventTimeWindows.of(Time.seconds(10))).reduce(SumValues)``
- ``sliding``: ``window(SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(5)))
  .aggregate(CountSumAggregate)`` ((count, sum) per window)
- ``timers``: ``process(KeyedProcessFunction)``: a ValueState count per key and an event-time
  timer at ts + 1 s per event; ``on_timer`` emits (key, count)

``-> map(TimedLastRecord) -> DiscardingSink`` (Java's, as bench/peers/pyflink_keyed_count.py),
over the same events as windows.py (``window_events.make_events``), with the user code of
``window_events`` mixed into PyFlink's base classes. Parallelism 2, hashmap state backend, a
checkpoint each second, types declared for every Python operator's output, state and
accumulator (no pickling), ``python.state.cache-size`` above the keys per subtask and
``python.fn-execution.bundle.size`` 10000, as pyflink_keyed_count.py. Run it with the
interpreter of the venv where apache-flink is installed; it prints a line per job

    windows job=<tumbling|sliding|timers> system=pyflink events_per_s=<float>

(``nan`` if the job failed, with the reason on the line before it). Each job runs on a fresh
environment (its own mini-cluster) in this process, one after the other.

Timed over the record window of ``window_events`` (as keyed_events'): from the first record
the timestamp assigner or the key function saw to the last record the final map saw, so the
JVM's and the mini-cluster's start, the job's submission and its end are left out;
``events_per_s`` = events / window. A job whose final map did not see the outputs
``window_events.expected`` gives (count, and sum of values where it is fixed) is an error.
The wall time of ``execute()`` is printed too, and ``first_output_s``: when the final map saw
its first record, counted from the window's start.

Watermarks: ``from_collection`` is a legacy non-parallel source. Chained to the operators
after it, no periodic watermark gets through before the end of the input, so every window and
timer fires on the final watermark (Long.MAX_VALUE) after the last event; that would still do
for a throughput figure. Here the source runs at parallelism 1 and the timestamp assigner
(PyFlink's "Extract-Timestamp" ProcessFunction, with Java's watermark assigner chained to it)
at 2, so they are not chained, and watermarks did advance during the run: at 100k events the
first window output reached the final map about 1 s into a 9-15 s record window
(``first_output_s``), and the counts ``timers`` emitted summed to 640k, where firing every
timer after the last event would give each key's final count, 1.1M in all. So windows and
timers fire while the events arrive.

``--mode thread`` (default) runs the Python functions embedded in the JVM
(``python.execution-mode: thread``, with PYTHONPATH set to this interpreter's site-packages);
``--mode process`` runs them in Beam workers.

Measured on a 2-core machine (PyFlink 2.3.0, Java 17), thread mode, 1M events, events/s
(tumbling, sliding, timers): 10.5k, 8.9k, 14.0k with nothing else running (single-job runs
gave the same: 10.6k and 10.8k, 8.7k, 13.9k); two runs an hour or two earlier, while other
tests ran beside them, gave 16.1k, 13.5k, 21.8k and 15.6k, 11.5k, 17.0k. So the same
command's rate varied by up to 1.5x over a few hours here: compare systems measured in the
same run. ``execute()`` took 2-10 s longer than the record window (the mini-cluster's start,
the job's submission and its end). At 100k events (one run; the JVM still compiling its hot
paths over a window of 8-15 s) thread mode gave 9.1k, 6.8k, 12.0k and process mode 1.6k,
0.8k, 4.5k.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import window_events
from keyed_events import TimedKey, read_window
from pyflink_setup import BENCH_DIR, discarding_sink, set_pythonpath, tuned_environment
from window_events import (
    JOBS,
    OUT_OF_ORDERNESS_S,
    SLIDING_SIZE_S,
    SLIDING_SLIDE_S,
    TIMER_DELAY_MS,
    TUMBLING_SIZE_S,
    check_outputs,
    expected,
    make_events,
    read_outputs,
)


def _jobs(text: str) -> list[str]:
    jobs = [job for job in text.split(",") if job]
    unknown = [job for job in jobs if job not in JOBS]
    if unknown or not jobs:
        raise argparse.ArgumentTypeError(f"jobs are a comma-separated subset of {','.join(JOBS)}")
    return jobs


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--mode", choices=("thread", "process"), default="thread")
    parser.add_argument("--checkpoint-interval-ms", type=int, default=1000)
    parser.add_argument(
        "--jobs",
        type=_jobs,
        default=list(JOBS),
        help=f"comma-separated jobs to run (default {','.join(JOBS)})",
    )
    parser.add_argument(
        "--no-check",
        action="store_true",
        help="skip comparing the outputs with window_events.expected (saves its time)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    set_pythonpath(args.mode, BENCH_DIR)  # keyed_events and window_events

    from pyflink.common import Duration, Time, Types, WatermarkStrategy
    from pyflink.common.watermark_strategy import TimestampAssigner
    from pyflink.datastream import (
        AggregateFunction,
        KeyedProcessFunction,
        MapFunction,
        ReduceFunction,
    )
    from pyflink.datastream.state import ValueStateDescriptor
    from pyflink.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows

    class Timestamps(window_events.TimedTimestamps, TimestampAssigner):
        pass

    class SumValues(window_events.SumValues, ReduceFunction):
        pass

    class CountSumAggregate(window_events.CountSumAggregate, AggregateFunction):
        pass

    class LastRecord(window_events.TimedLastRecord, MapFunction):
        pass

    class CountWithTimers(KeyedProcessFunction):
        """``timers``: a count per key; an event-time timer at ts + 1 s per event; on a
        timer, (key, count)."""

        def open(self, runtime_context):
            self.state = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

        def process_element(self, value, ctx):
            count = self.state.value()
            self.state.update(1 if count is None else count + 1)
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + TIMER_DELAY_MS)

        def on_timer(self, timestamp, ctx):
            yield ctx.get_current_key(), self.state.value()

    event_type = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])
    count_sum_type = Types.TUPLE([Types.LONG(), Types.LONG()])
    key_count_type = Types.TUPLE([Types.STRING(), Types.LONG()])

    def environment():
        keys_per_subtask = -(-args.keys // args.parallelism)
        return tuned_environment(
            args.mode, args.parallelism, 2 * keys_per_subtask, args.checkpoint_interval_ms
        )

    def build(env, job: str, events: list, marks_dir: str) -> None:
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_seconds(OUT_OF_ORDERNESS_S)
        ).with_timestamp_assigner(Timestamps(marks_dir))
        keyed = (
            env.from_collection(events, type_info=event_type)
            .assign_timestamps_and_watermarks(strategy)
            .key_by(TimedKey(marks_dir), key_type=Types.STRING())
        )
        if job == "tumbling":
            assigner = TumblingEventTimeWindows.of(Time.seconds(TUMBLING_SIZE_S))
            out = keyed.window(assigner).reduce(SumValues(), output_type=event_type)
            out_type = event_type
        elif job == "sliding":
            assigner = SlidingEventTimeWindows.of(
                Time.seconds(SLIDING_SIZE_S), Time.seconds(SLIDING_SLIDE_S)
            )
            out = keyed.window(assigner).aggregate(
                CountSumAggregate(), accumulator_type=count_sum_type, output_type=count_sum_type
            )
            out_type = count_sum_type
        else:
            out = keyed.process(CountWithTimers(), output_type=key_count_type)
            out_type = key_count_type
        out.map(LastRecord(marks_dir), output_type=out_type).sink_to(discarding_sink())

    events = make_events(args.events, args.keys)
    for job in args.jobs:
        expect = None if args.no_check else expected(job, events)
        try:
            with tempfile.TemporaryDirectory(prefix="pyflink-marks-") as marks_dir:
                env = environment()
                build(env, job, events, marks_dir)
                started = time.perf_counter()
                env.execute(f"windows_{job}_pyflink")
                seconds = time.perf_counter() - started
                window = read_window(marks_dir)
                outputs = read_outputs(marks_dir)
            if expect is not None:
                check_outputs(job, window.count, outputs.total, expect)
        except Exception as error:  # one failed job is reported, the others still run
            lines = str(error).strip().splitlines()
            print(f"pyflink job={job} mode={args.mode} failed: {lines[0] if lines else error!r}")
            print(f"windows job={job} system=pyflink events_per_s=nan", flush=True)
            continue
        print(
            f"pyflink job={job} mode={args.mode} events={args.events} keys={args.keys} "
            f"parallelism={args.parallelism} wall_s={seconds:.2f} window_s={window.seconds:.2f} "
            f"first_output_s={outputs.first - window.first:.2f} outputs={window.count} "
            f"outputs_total={outputs.total} checked={expect is not None}"
        )
        rate = args.events / window.seconds
        print(f"windows job={job} system=pyflink events_per_s={rate:.2f}", flush=True)


if __name__ == "__main__":
    main()
