"""Keyed event-time windows and timers: 1M out-of-order events through lockgate's windows.

Three jobs (``window_events.JOBS``), each measured on its own, over the same events
(``window_events.make_events``: ``(key, ts_ms, value)``, 10k string keys, event i at about
i ms, up to 2 s out of order, seeded):

    from_collection(events)
      -> assign_timestamps_and_watermarks(WatermarkStrategy.for_bounded_out_of_orderness(
             Duration.of_seconds(2)).with_timestamp_assigner(<the event's ts>))
      -> key_by(key)
      -> tumbling: window(TumblingEventTimeWindows.of(Time.seconds(10))).reduce(SumValues)
         sliding:  window(SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(5)))
                       .aggregate(CountSumAggregate)                       # (count, sum)
         timers:   process(CountWithTimers)  # ValueState count per key, an event-time timer
                                             # at ts + 1 s per event, on_timer -> (key, count)
      -> map(TimedLastRecord) -> sink_to(DiscardingSink())

The bound of 2 s covers the jitter, so no record is late (``window_events`` shows why), and
every system must emit exactly the outputs ``window_events.expected`` counts (one per (key,
window) populated, one per distinct (key, timer time)), with the values' sum (``tumbling``) or
twice it (``sliding``) in their last fields: a run that differs is an error.

How the rate is measured, on lockgate and on PyFlink alike (``keyed_events``' record window):
from the first record any instance of the timestamp assigner or the key function saw to the
last record the final map saw; ``events_per_s`` = events / window. Each final-map instance
notes ``time.time()`` of its first and last record, counts them and writes them when it
closes. So the start of each system (Spark's session, Flink's mini-cluster, job submission,
reading up to the first record) and its end after the last output (the final checkpoint,
closing the job) are left out; the firing of windows and timers is in the window, up to the
last one. The events are generated on the driver (not timed); the Spark session is warmed up
first with each job on 2000 events on each backend.

For each job and backend the job runs ``--runs`` times (default 3) and the run with the median
window is reported; each run is printed too. Output, per job and backend:

    lockgate job=<job> backend=<b> window_s=... epochs=... median_epoch_ms=... cores_busy=...
        first_output_s=... outputs=... execute_events_per_s=...
    windows job=<job> system=lockgate backend=<hashmap|rocksdb> events_per_s=<float>

``cores_busy`` is keyed_count's (CPU of the whole process tree over the record window, per
core of the session); ``first_output_s`` is when the final map saw its first record, counted
from the window's start (small: windows fired while events were still arriving; close to
``window_s``: they all fired at the end); ``execute_events_per_s`` is events over the wall
time of ``env.execute()``.

``--backend`` is ``hashmap`` (``HashMapStateBackend``), ``rocksdb``
(``EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)``) or ``both`` (default).

With ``--peers``, after lockgate (its Spark session stopped) each job runs once on PyFlink
(``bench/peers/pyflink_windows.py`` in the interpreter named by ``--pyflink-python`` or
``$LOCKGATE_PYFLINK_PYTHON``: thread mode, else process mode, tuned as keyed_count's peer;
a JVM per job; its ``from_collection`` is non-parallel, lockgate's runs at
``--source-parallelism``, 2 by default as in keyed_count.py), which prints
``windows job=<job> system=pyflink events_per_s=<float>`` (``nan`` when it is not installed
or failed), and the last lines are

    windows job=<job> ratio_vs_pyflink_hashmap=<float> ratio_vs_pyflink_rocksdb=<float>
    windows ratio_vs_pyflink=<float> ratio_vs_pyflink_hashmap=<float>
        ratio_vs_pyflink_rocksdb=<float>

(each on one line). ``ratio_vs_pyflink`` is the geometric mean over the jobs run of
lockgate's events/s on the hashmap backend over PyFlink's (``nan`` if hashmap was not run or
a job has no figure); ``ratio_vs_pyflink_<backend>`` the same for each backend run. PyFlink
ran these jobs at 9-14k events/s at 1M events on this 2-core machine, up to 1.5x more in
some runs (see pyflink_windows.py): at the default 1M events the peers take about 5 minutes.

What the jobs need of lockgate, with PyFlink's names and signatures (checked before the
Spark session starts; a missing piece ends the script with the reason):
``lockgate.datastream.window.TumblingEventTimeWindows.of(Time)`` and
``SlidingEventTimeWindows.of(Time, Time)``; ``DataStream.assign_timestamps_and_watermarks(
WatermarkStrategy)`` calling the strategy's ``TimestampAssigner.extract_timestamp(value,
record_timestamp)`` (the assigner given to ``with_timestamp_assigner``, a plain subclass of
``lockgate.common.watermark_strategy.TimestampAssigner``); ``KeyedStream.window(assigner)``
whose ``reduce(ReduceFunction)`` and ``aggregate(AggregateFunction)`` emit the reduced value
and ``get_result(accumulator)`` once per (key, window) when the watermark passes the window's
end (and at the end of the input, which ends event time); in ``KeyedProcessFunction``,
``ctx.timestamp()`` (the assigned timestamp), ``ctx.timer_service()
.register_event_time_timer(ts)`` (a timer per (key, ts), registering it again is a no-op) and
``on_timer(timestamp, ctx)`` with ``ctx.get_current_key()`` and keyed state, its outputs
iterated; a ``process_element`` returning None emits nothing. ``MapFunction.close()`` is
called on every final-map instance once the job has processed its last record, before
``env.execute()`` returns (the marks are read then).

Run: ``python bench/windows.py [--events N] [--keys K] [--backend hashmap|rocksdb|both]
[--jobs tumbling,sliding,timers] [--runs R] [--peers] [--pyflink-python PATH]``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from dataclasses import dataclass

import keyed_events
import window_events
from cpu_tree import TreeCpu, session_cores
from keyed_count import (
    BACKENDS,
    add_job_arguments,
    epoch_floor_ms,
    start_session,
    state_backend,
)
from keyed_events import RecordWindow, TimedKey, read_window
from peer_runs import PYFLINK_NOT_INSTALLED, add_peer_arguments, ratio, run_pyflink_script
from pyspark import cloudpickle
from window_events import (
    JOBS,
    OUT_OF_ORDERNESS_S,
    RATE_LINE,
    SLIDING_SIZE_S,
    SLIDING_SLIDE_S,
    TIMER_DELAY_MS,
    TUMBLING_SIZE_S,
    Outputs,
    check_outputs,
    expected,
    geometric_mean,
    make_events,
    read_outputs,
)

from lockgate.common import Configuration, Duration, Time, Types, WatermarkStrategy
from lockgate.common import config_options as options
from lockgate.common.watermark_strategy import TimestampAssigner
from lockgate.datastream import (
    AggregateFunction,
    KeyedProcessFunction,
    MapFunction,
    ReduceFunction,
    StreamExecutionEnvironment,
)
from lockgate.datastream.connectors import DiscardingSink
from lockgate.datastream.state import ValueStateDescriptor

# Spark's Python workers import neither this script nor the bench modules: ship them by value.
cloudpickle.register_pickle_by_value(keyed_events)
cloudpickle.register_pickle_by_value(window_events)

WARM_UP_EVENTS = 2000


class Timestamps(window_events.TimedTimestamps, TimestampAssigner):
    """The timestamp assigner (the event's ts), noting its first record."""


class SumValues(window_events.SumValues, ReduceFunction):
    """``tumbling``: the values of a window summed, with the first record's key and ts."""


class CountSumAggregate(window_events.CountSumAggregate, AggregateFunction):
    """``sliding``: (count, sum) of a window."""


class LastRecord(window_events.TimedLastRecord, MapFunction):
    """The final map, noting its first and last record and counting them."""


class CountWithTimers(KeyedProcessFunction):
    """``timers``: a count per key; an event-time timer at ts + 1 s per event; on a timer,
    (key, count)."""

    def open(self, runtime_context):
        self.state = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        count = self.state.value()
        self.state.update(1 if count is None else count + 1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + TIMER_DELAY_MS)

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), self.state.value()


def missing_window_api() -> str | None:
    """Why this lockgate cannot build the jobs (None if it can)."""
    from lockgate.datastream import DataStream, KeyedStream

    try:
        from lockgate.datastream.window import (  # noqa: F401
            SlidingEventTimeWindows,
            TumblingEventTimeWindows,
        )
    except ImportError as error:
        return f"lockgate.datastream.window: {error}"
    if not hasattr(DataStream, "assign_timestamps_and_watermarks"):
        return "DataStream.assign_timestamps_and_watermarks is missing"
    if not hasattr(KeyedStream, "window"):
        return "KeyedStream.window is missing"
    return None


def build_job(
    env: StreamExecutionEnvironment,
    job: str,
    events: list,
    source_parallelism: int,
    marks_dir: str | None,
) -> None:
    """``job`` on ``env``; with ``marks_dir``, its functions write their record marks."""
    from lockgate.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows

    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_seconds(OUT_OF_ORDERNESS_S)
    ).with_timestamp_assigner(Timestamps(marks_dir))
    source = env.from_collection(events)
    if source_parallelism != 1:
        source = source.set_parallelism(source_parallelism)
    keyed = source.assign_timestamps_and_watermarks(strategy).key_by(TimedKey(marks_dir))
    if job == "tumbling":
        assigner = TumblingEventTimeWindows.of(Time.seconds(TUMBLING_SIZE_S))
        out = keyed.window(assigner).reduce(SumValues())
    elif job == "sliding":
        assigner = SlidingEventTimeWindows.of(
            Time.seconds(SLIDING_SIZE_S), Time.seconds(SLIDING_SLIDE_S)
        )
        out = keyed.window(assigner).aggregate(CountSumAggregate())
    elif job == "timers":
        out = keyed.process(CountWithTimers())
    else:
        raise ValueError(f"unknown job {job!r}: use one of {', '.join(JOBS)}")
    out.map(LastRecord(marks_dir)).sink_to(DiscardingSink())


def _jobs(text: str) -> list[str]:
    jobs = [job for job in text.split(",") if job]
    if not jobs or any(job not in JOBS for job in jobs):
        raise argparse.ArgumentTypeError(f"jobs are a comma-separated subset of {','.join(JOBS)}")
    return jobs


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_job_arguments(parser)
    parser.add_argument(
        "--backend",
        choices=(*BACKENDS, "both"),
        default="both",
        help="keyed state backend (default both, one after the other); rocksdb is "
        "EmbeddedRocksDBStateBackend with incremental checkpoints",
    )
    parser.add_argument(
        "--jobs",
        type=_jobs,
        default=list(JOBS),
        help=f"comma-separated jobs to run (default {','.join(JOBS)})",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=3,
        help="timed runs of each job on each backend; the median one is reported",
    )
    add_peer_arguments(parser, "also run the jobs on PyFlink and compare")
    return parser.parse_args(argv)


def run_job(
    spark,
    args: argparse.Namespace,
    backend: str,
    job: str,
    events: list,
    work_dir: str,
    marks_dir: str | None = None,
):
    """One run of ``job`` on ``backend``: (wall time of ``env.execute()``, its result)."""
    config = Configuration()
    config.set_string(options.WORK_DIR.key, work_dir)
    config.set_integer(options.EPOCH_MAX_RECORDS_PER_SPLIT.key, args.max_records_per_split)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.configure(config)
    env.set_parallelism(args.parallelism)
    env.set_state_backend(state_backend(backend))
    build_job(env, job, events, args.source_parallelism, marks_dir)
    started = time.perf_counter()
    result = env.execute(f"windows_{job}")
    return time.perf_counter() - started, result


@dataclass(frozen=True)
class Run:
    wall_s: float  # env.execute()
    window: RecordWindow
    outputs: Outputs
    result: object  # lockgate's JobExecutionResult
    cores_busy: float


def timed_run(
    spark, args, backend: str, job: str, events: list, expect, work_dir, cpu, cores
) -> Run:
    with tempfile.TemporaryDirectory(prefix="lockgate-marks-") as marks_dir:
        seconds, result = run_job(spark, args, backend, job, events, work_dir, marks_dir)
        window = read_window(marks_dir)
        outputs = read_outputs(marks_dir)
    if window.seconds <= 0:
        raise RuntimeError(f"{job}: the record window is {window.seconds} s")
    check_outputs(job, window.count, outputs.total, expect)
    return Run(seconds, window, outputs, result, cpu.cores_busy(window.first, window.last, cores))


def warm_up(spark, args: argparse.Namespace, backend: str, events: list, work_dir: str) -> None:
    """Each job on a few events: starts the Python workers, imports lockgate in them and
    opens ``backend``."""
    warm_args = argparse.Namespace(**{**vars(args), "max_records_per_split": 1000})
    for job in args.jobs:
        run_job(spark, warm_args, backend, job, events[:WARM_UP_EVENTS], work_dir)


def measure(spark, args, backend: str, events: list, expects: dict, work_dir: str, cores: int):
    """``{job: events/s}`` of lockgate on ``backend``, each the median of ``--runs`` runs."""
    rates = {}
    warm_up(spark, args, backend, events, work_dir)
    with TreeCpu() as cpu:
        for job in args.jobs:
            runs = []
            for number in range(max(1, args.runs)):
                run = timed_run(
                    spark, args, backend, job, events, expects[job], work_dir, cpu, cores
                )
                runs.append(run)
                print(
                    f"run {number + 1}: job={job} backend={backend} wall_s={run.wall_s:.2f} "
                    f"window_s={run.window.seconds:.2f} "
                    f"events_per_s={args.events / run.window.seconds:.0f} "
                    f"cores_busy={run.cores_busy:.2f} epochs={len(run.result.epochs)}",
                    flush=True,
                )
            run = sorted(runs, key=lambda run: run.window.seconds)[(len(runs) - 1) // 2]
            epoch_ms = [stats.duration_ms for stats in run.result.epochs]
            rates[job] = args.events / run.window.seconds
            print(
                f"lockgate job={job} backend={backend} window_s={run.window.seconds:.2f} "
                f"epochs={len(epoch_ms)} "
                f"median_epoch_ms={statistics.median(epoch_ms) if epoch_ms else 0.0:.2f} "
                f"cores_busy={run.cores_busy:.3f} "
                f"first_output_s={run.outputs.first - run.window.first:.2f} "
                f"outputs={run.window.count} "
                f"execute_events_per_s={args.events / run.wall_s:.2f}"
            )
            print(
                f"windows job={job} system=lockgate backend={backend} "
                f"events_per_s={rates[job]:.2f}",
                flush=True,
            )
    return rates


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    reason = missing_window_api()
    if reason is not None:
        raise SystemExit(f"lockgate cannot run the windows jobs yet: {reason}")
    backends = list(BACKENDS) if args.backend == "both" else [args.backend]
    events = make_events(args.events, args.keys)
    expects = {job: expected(job, events) for job in args.jobs}
    spark = start_session(args.master)
    cores = session_cores(args.master, spark.sparkContext.defaultParallelism)
    print(
        f"config events={args.events} keys={args.keys} parallelism={args.parallelism} "
        f"source_parallelism={args.source_parallelism} "
        f"max_records_per_split={args.max_records_per_split} runs={max(1, args.runs)} "
        f"jobs={','.join(args.jobs)} backends={','.join(backends)} "
        f"empty_two_stage_job_ms={epoch_floor_ms(spark.sparkContext):.2f} "
        f"session_cores={cores}",
        flush=True,
    )
    rates: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-") as work_dir:
        for backend in backends:
            rates[backend] = measure(spark, args, backend, events, expects, work_dir, cores)
    spark.stop()
    if not args.peers:
        return
    pyflink = pyflink_rates(args, len(events))
    ratios = {
        backend: {job: ratio(rates[backend][job], pyflink[job]) for job in args.jobs}
        for backend in backends
    }
    for job in args.jobs:
        per_backend = " ".join(
            f"ratio_vs_pyflink_{backend}={ratios[backend][job]:.2f}" for backend in backends
        )
        print(f"windows job={job} {per_backend}")
    means = {backend: geometric_mean(list(ratios[backend].values())) for backend in backends}
    per_backend = " ".join(
        f"ratio_vs_pyflink_{backend}={means[backend]:.2f}" for backend in backends
    )
    print(f"windows ratio_vs_pyflink={means.get('hashmap', math.nan):.2f} {per_backend}")


def _run_pyflink(args: argparse.Namespace, events: int, job: str, mode: str) -> tuple[float, str]:
    arguments = [
        f"--events={events}",
        f"--keys={args.keys}",
        f"--parallelism={args.parallelism}",
        f"--mode={mode}",
        f"--jobs={job}",
    ]
    lines, failure = run_pyflink_script(args.pyflink_python, "pyflink_windows.py", arguments)
    match = RATE_LINE.match(lines[-1]) if lines else None
    if failure or match is None or match.group(1) != job:
        return math.nan, f"{mode} mode failed: {failure or 'no figures line'}"
    rate = float(match.group(3))
    if math.isnan(rate):
        return rate, f"{mode} mode failed (see the pyflink line above)"
    return rate, ""


def pyflink_rates(args: argparse.Namespace, events: int) -> dict[str, float]:
    """``{job: events/s}`` on PyFlink, each job in its own interpreter (and JVM): thread
    mode, else process mode."""
    rates = {}
    for job in args.jobs:
        reasons = []
        rate = math.nan
        if not args.pyflink_python:
            reasons.append(PYFLINK_NOT_INSTALLED)
        else:
            for mode in ("thread", "process"):
                rate, reason = _run_pyflink(args, events, job, mode)
                if not math.isnan(rate):
                    break
                reasons.append(reason)
        if math.isnan(rate):
            print(f"pyflink job={job}: {'; '.join(reasons)}")
        print(f"windows job={job} system=pyflink events_per_s={rate:.2f}", flush=True)
        rates[job] = rate
    return rates


if __name__ == "__main__":
    main()
