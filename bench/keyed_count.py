"""Keyed (count, sum) per key: 1M events over 10k keys through lockgate's keyed state.

The job is ``from_collection(events) -> key_by -> KeyedProcessFunction -> DiscardingSink``:
per key a ValueState holds (count, sum) and every update is emitted. Events are generated on
the driver; the Spark session is warmed up first (a small job starts the Python workers),
and the cost of an empty Spark job in the same session is measured as the floor of an
epoch.

How the rate is measured, on every system alike (lockgate, and with ``--peers`` PyFlink and
Spark's ``transformWithStateInPandas``): over the *record window*, from the first record
any instance of the job's user functions saw (the key function, ``keyed_events.TimedKey``,
or the keyed function where a system has no Python key function) to the last record the
keyed function saw; ``events_per_s`` = events / window. So the start of each system is left
out (Spark's or Flink's session or mini-cluster, job submission, scheduling and reading up to
the first record) and so is its end after the last record (the final checkpoint, closing
the job). Each function instance notes ``time.time()`` of its first and last record and
counts its records (a clock read and a counter per record in lockgate, PyFlink and the loop
below; per key and micro-batch in Spark's vectorized processor), and writes them to a marks
directory when it closes (the key function when it sees its first record). A run whose
keyed instances did not count every event is an error. Every system runs the same
``--events`` events (make_events, same seed).

The last printed line is the figures line:

    keyed_count system=lockgate events_per_s=... epochs=... median_epoch_ms=...
    job_overhead_ms=... backend=<hashmap|rocksdb> cores_busy=... ratio_to_user_code_loop=...
    execute_events_per_s=...

- ``cores_busy``: CPU time of the whole process tree (this driver Python, its Spark JVM,
  the PySpark daemon, the Python workers and any other process under them; utime + stime
  of /proc, sampled every 20 ms by ``cpu_tree.TreeCpu`` and interpolated to the window)
  over the record window of the reported run, divided by (window x the cores the session
  uses: N of ``local[N]``). 1.0 means every core was busy all the time; less means time
  spent waiting (scheduling, idle workers, the driver between epochs).
- ``ratio_to_user_code_loop``: ``events_per_s`` over that of the line before it,

      keyed_count system=user_code_loop events_per_s=...

  the job's own user code run as a plain Python loop on one core in this driver, over the
  same events: for each event the key function, then ``process_element`` of the job's
  KeyedProcessFunction (the same instrumented class the job runs) with a dict as its state
  (a ValueState whose current key the loop sets), its outputs iterated. That is the work no
  engine can avoid; the median of ``--runs`` loops, measured while Spark is idle.
- ``execute_events_per_s``: events over the wall time of ``env.execute()`` (what this line
  reported as ``events_per_s`` before the record window: job planning, the first epoch's
  scheduling and the final checkpoint included).

``--backend`` picks the keyed state backend: ``hashmap`` (default, ``HashMapStateBackend``)
or ``rocksdb`` (``EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)``, one
RocksDB instance per keyed subtask in Spark's local directory, write-back cache of
``lockgate.state.rocksdb.cache-entries`` keys per state).

The job runs ``--runs`` times in the session (default 3) and the figures are those of the
run with the median record window: the first run after the session starts is often slower
(the JVM is still compiling its hot paths). Each run is also printed on its own line.

With ``--peers``, the same job then runs once on each peer over the same events: Spark's
``transformWithStateInPandas`` with the RocksDB state store (``bench/peers/
spark_tws_keyed_count.py``, in this session, micro-batches as large as lockgate's largest
epoch: ``--max-records-per-split`` x ``--source-parallelism`` events) and PyFlink in thread
mode, else process mode (``bench/peers/pyflink_keyed_count.py``, in the interpreter named by
``--pyflink-python`` or ``$LOCKGATE_PYFLINK_PYTHON``); each prints
``keyed_count system=<name> events_per_s=<float>`` (``nan`` when it is not installed or
failed) and the last line becomes

    keyed_count ratio_vs_pyflink=<float> ratio_vs_spark_tws=<float>

(lockgate's events/s over the peer's). ``bench/requirements-peers.txt`` lists the peers.
PyFlink processes about 10k events/s here and Spark's peer a few thousand: at the default
1M events ``--peers`` takes minutes; ``--events`` sets the count for every system at once.

Run: ``python bench/keyed_count.py [--events N] [--keys K] [--source-parallelism P]
[--backend hashmap|rocksdb] [--runs R] [--peers]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass

import keyed_events
from cpu_tree import TreeCpu, session_cores
from keyed_events import RecordWindow, TimedKey, make_events, read_window
from peer_runs import (
    PEERS_DIR,
    PYFLINK_NOT_INSTALLED,
    add_peer_arguments,
    ratio,
    run_pyflink_script,
)
from pyspark import cloudpickle

from lockgate.common import Configuration
from lockgate.common import config_options as options
from lockgate.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from lockgate.datastream.connectors import DiscardingSink
from lockgate.datastream.state import ValueStateDescriptor
from lockgate.datastream.state_backend import (
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    StateBackend,
)
from lockgate.runtime.jobmaster.spark_session import get_or_create_session

# Spark's Python workers import neither this script nor keyed_events: ship them by value.
cloudpickle.register_pickle_by_value(keyed_events)

# Measured on a 2-core machine (local[2], 1M events, 10k keys): the source at parallelism 2
# ran 1.3-1.5x faster than at 1, since the source's work is split over both cores and
# there are half as many epochs (each epoch costs 150-250 ms of Spark scheduling).
DEFAULT_SOURCE_PARALLELISM = 2
OVERHEAD_RUNS = 7


class CountAndSum(KeyedProcessFunction):
    """Keeps (count, sum) of the values of each key; emits every update."""

    def open(self, runtime_context):
        self.state = runtime_context.get_state(ValueStateDescriptor("count_sum"))

    def process_element(self, value, ctx):
        count, total = self.state.value() or (0, 0)
        count, total = count + 1, total + value[1]
        self.state.update((count, total))
        yield value[0], count, total


class TimedCountAndSum(CountAndSum):
    """CountAndSum that notes the time of its first and last record and counts its records
    (``keyed_events``' record window), writing them to ``marks_dir`` when it closes."""

    def __init__(self, marks_dir: str | None = None):
        self.marks_dir = marks_dir
        self.first = 0.0
        self.last = 0.0
        self.count = 0

    def process_element(self, value, ctx):
        self.last = now = time.time()
        if not self.count:
            self.first = now
        self.count += 1
        count, total = self.state.value() or (0, 0)
        count, total = count + 1, total + value[1]
        self.state.update((count, total))
        yield value[0], count, total

    def close(self):
        if self.count and self.marks_dir is not None:
            keyed_events.write_mark(self.marks_dir, self.first, self.last, self.count)


__all__ = [
    "BACKENDS",
    "CountAndSum",
    "TimedCountAndSum",
    "add_backend_argument",
    "add_job_arguments",
    "add_spark_arguments",
    "main",
    "make_events",
    "state_backend",
    "user_code_loop_rate",
]
_RATE_LINE = re.compile(r"^keyed_count system=(\S+) events_per_s=(\S+)$")


def _key(event):
    return event[0]


BACKENDS = ("hashmap", "rocksdb")


def add_backend_argument(parser: argparse.ArgumentParser, default: str = "hashmap") -> None:
    """``--backend hashmap|rocksdb``: the benchmarks' keyed state backend option."""
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default=default,
        help=f"keyed state backend (default {default}); rocksdb is "
        "EmbeddedRocksDBStateBackend with incremental checkpoints",
    )


def state_backend(name: str) -> StateBackend:
    """The state backend a ``--backend`` value stands for."""
    if name == "rocksdb":
        return EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)
    if name == "hashmap":
        return HashMapStateBackend()
    raise ValueError(f"unknown state backend {name!r}: use one of {', '.join(BACKENDS)}")


def add_spark_arguments(parser: argparse.ArgumentParser) -> None:
    """``--parallelism`` and ``--master``: the options every benchmark job has."""
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--master", default="local[2]")


def add_job_arguments(parser: argparse.ArgumentParser) -> None:
    """The keyed-count job's options, shared with the benchmarks that reuse the job."""
    parser.add_argument(
        "--events", type=int, default=1_000_000, help="events, for every system (default 1M)"
    )
    parser.add_argument("--keys", type=int, default=10_000)
    add_spark_arguments(parser)
    parser.add_argument(
        "--source-parallelism",
        type=int,
        default=DEFAULT_SOURCE_PARALLELISM,
        help="parallelism of the collection source (Flink's default would be 1)",
    )
    parser.add_argument(
        "--max-records-per-split",
        type=int,
        default=options.EPOCH_MAX_RECORDS_PER_SPLIT.default,
        help="lockgate.epoch.max-records-per-split (records per source split per epoch)",
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_job_arguments(parser)
    add_backend_argument(parser)
    parser.add_argument(
        "--runs",
        type=int,
        default=3,
        help="timed runs of the job (and of the user-code loop); the median one is reported",
    )
    add_peer_arguments(
        parser, "also run the job on PyFlink and Spark transformWithStateInPandas and compare"
    )
    return parser.parse_args(argv)


def job_overhead_ms(sc, runs: int = OVERHEAD_RUNS) -> float:
    """Median wall time of an empty two-partition Spark job with a Python stage."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        sc.parallelize(range(2), 2).map(lambda x: x).collect()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _nothing(index, items):
    # Read the whole input: a Python task that leaves shuffled input unread makes PySpark
    # drop its worker, and the next task then pays for a new one (+100-200 ms per job).
    for _ in items:
        pass
    return iter(())


def epoch_floor_ms(sc, runs: int = OVERHEAD_RUNS) -> float:
    """Median wall time of an empty two-stage job (parallelize, shuffle, collect): the Spark
    floor of an epoch whose job has one shuffle, as keyed_count's has."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        rdd = sc.parallelize(range(2), 2).mapPartitionsWithIndex(_nothing)
        rdd.partitionBy(2).mapPartitionsWithIndex(_nothing).collect()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def run_job(
    spark, args: argparse.Namespace, events: list, work_dir: str, marks_dir: str | None = None
):
    """One run of the job; with ``marks_dir``, its functions write their record marks."""
    config = Configuration()
    config.set_string(options.WORK_DIR.key, work_dir)
    config.set_integer(options.EPOCH_MAX_RECORDS_PER_SPLIT.key, args.max_records_per_split)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.configure(config)
    env.set_parallelism(args.parallelism)
    env.set_state_backend(state_backend(args.backend))
    source = env.from_collection(events)
    if args.source_parallelism != 1:
        source = source.set_parallelism(args.source_parallelism)
    keyed = source.key_by(TimedKey(marks_dir))
    keyed.process(TimedCountAndSum(marks_dir)).sink_to(DiscardingSink())
    started = time.perf_counter()
    result = env.execute("keyed_count")
    return time.perf_counter() - started, result


@dataclass(frozen=True)
class Run:
    wall_s: float  # env.execute()
    window: RecordWindow
    result: object  # lockgate's JobExecutionResult
    cores_busy: float


def timed_run(spark, args, events, work_dir: str, cpu: TreeCpu, cores: int) -> Run:
    with tempfile.TemporaryDirectory(prefix="lockgate-marks-") as marks_dir:
        seconds, result = run_job(spark, args, events, work_dir, marks_dir)
        window = read_window(marks_dir)
    check_window(window, len(events), "lockgate")
    return Run(seconds, window, result, cpu.cores_busy(window.first, window.last, cores))


def check_window(window: RecordWindow, events: int, system: str) -> None:
    if window.count != events or window.seconds <= 0:
        raise RuntimeError(
            f"{system}: the keyed function's instances counted {window.count} records over "
            f"{window.seconds:.3f} s, not the {events} events (a subtask that did not close?)"
        )


class _DictValueState:
    """A ValueState over a dict, for the loop: the loop sets the current key."""

    __slots__ = ("data", "key")

    def __init__(self) -> None:
        self.data: dict = {}
        self.key = None

    def value(self):
        return self.data.get(self.key)

    def update(self, value) -> None:
        self.data[self.key] = value


class _LoopRuntimeContext:
    def __init__(self, state: _DictValueState):
        self._state = state

    def get_state(self, descriptor):
        return self._state


def user_code_loop_rate(events: list) -> float:
    """Events per second of the job's user code as a plain Python loop on one core: the key
    function, then ``process_element`` with a dict-backed ValueState, outputs iterated."""
    key = TimedKey()
    function = TimedCountAndSum()
    state = _DictValueState()
    function.open(_LoopRuntimeContext(state))
    get_key, process = key.get_key, function.process_element
    started = time.perf_counter()
    for event in events:
        state.key = get_key(event)
        for _ in process(event, None):
            pass
    seconds = time.perf_counter() - started
    function.close()
    if len(state.data) == 0 and events:
        raise RuntimeError("the user-code loop kept no state")
    return len(events) / seconds


def start_session(master: str):
    """The benchmarks' Spark session, after a line naming the machine."""
    print(f"cores={os.cpu_count()} python={sys.version.split()[0]} master={master}")
    return get_or_create_session(
        {
            "spark.master": master,
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.memory": "2g",
        }
    )


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    spark = start_session(args.master)
    sc = spark.sparkContext
    cores = session_cores(args.master, sc.defaultParallelism)
    events = make_events(args.events, args.keys)
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-") as work_dir:
        # Warm up: start the Python workers and import lockgate in them.
        warm_args = argparse.Namespace(**{**vars(args), "max_records_per_split": 1000})
        run_job(spark, warm_args, events[:2000], work_dir)
        overhead = job_overhead_ms(sc)
        floor = epoch_floor_ms(sc)
        with TreeCpu() as cpu:
            for number in range(max(1, args.runs)):
                run = timed_run(spark, args, events, work_dir, cpu, cores)
                runs.append(run)
                epoch_ms = [round(stats.duration_ms, 1) for stats in run.result.epochs]
                print(
                    f"run {number + 1}: wall_s={run.wall_s:.2f} "
                    f"window_s={run.window.seconds:.2f} "
                    f"events_per_s={args.events / run.window.seconds:.0f} "
                    f"execute_events_per_s={args.events / run.wall_s:.0f} "
                    f"cores_busy={run.cores_busy:.2f} epoch_ms={epoch_ms}"
                )
    loops = [user_code_loop_rate(events) for _ in range(max(1, args.runs))]
    loop_rate = statistics.median(loops)
    run = sorted(runs, key=lambda run: run.window.seconds)[(len(runs) - 1) // 2]
    epoch_ms = [stats.duration_ms for stats in run.result.epochs]
    median_epoch = statistics.median(epoch_ms) if epoch_ms else 0.0
    lockgate_rate = args.events / run.window.seconds
    print(
        f"config events={args.events} keys={args.keys} parallelism={args.parallelism} "
        f"source_parallelism={args.source_parallelism} "
        f"max_records_per_split={args.max_records_per_split} runs={len(runs)} "
        f"empty_two_stage_job_ms={floor:.2f} session_cores={cores}"
    )
    print(f"keyed_count system=user_code_loop events_per_s={loop_rate:.2f}")
    print(
        f"keyed_count system=lockgate events_per_s={lockgate_rate:.2f} "
        f"epochs={len(run.result.epochs)} median_epoch_ms={median_epoch:.2f} "
        f"job_overhead_ms={overhead:.2f} backend={args.backend} "
        f"cores_busy={run.cores_busy:.3f} ratio_to_user_code_loop={lockgate_rate / loop_rate:.3f} "
        f"execute_events_per_s={args.events / run.wall_s:.2f}"
    )
    if not args.peers:
        spark.stop()
        return
    spark_tws = spark_tws_rate(spark, args, events)
    spark.stop()
    pyflink = pyflink_rate(args, len(events))
    print(
        f"keyed_count ratio_vs_pyflink={ratio(lockgate_rate, pyflink):.2f} "
        f"ratio_vs_spark_tws={ratio(lockgate_rate, spark_tws):.2f}"
    )


def _peer_line(system: str, rate: float, reason: str | None = None) -> float:
    if reason:
        print(f"{system}: {reason}")
    print(f"keyed_count system={system} events_per_s={rate:.2f}")
    return rate


def spark_tws_rate(spark, args: argparse.Namespace, events: list) -> float:
    """The job on Spark's transformWithStateInPandas (RocksDB state store), in this session,
    in micro-batches of as many events as lockgate's epochs."""
    path = PEERS_DIR / "spark_tws_keyed_count.py"
    spec = importlib.util.spec_from_file_location("spark_tws_keyed_count", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    # Spark's Python workers cannot import the peer module: ship its classes by value.
    cloudpickle.register_pickle_by_value(module)
    reason = module.missing_reason()
    if reason is not None:
        return _peer_line("spark_tws", math.nan, f"not installed: {reason}")
    batch_events = args.max_records_per_split * args.source_parallelism
    try:
        rate = module.run_peer(
            spark, events, parallelism=args.parallelism, batch_events=batch_events
        )
    except Exception as error:  # a failed peer is reported, not fatal
        message = str(error).strip().splitlines()
        return _peer_line("spark_tws", math.nan, f"failed: {message[0] if message else error!r}")
    return _peer_line("spark_tws", rate)


def _run_pyflink(args: argparse.Namespace, events: int, mode: str) -> tuple[float, str]:
    arguments = [
        f"--events={events}",
        f"--keys={args.keys}",
        f"--parallelism={args.parallelism}",
        f"--mode={mode}",
    ]
    lines, failure = run_pyflink_script(args.pyflink_python, "pyflink_keyed_count.py", arguments)
    match = _RATE_LINE.match(lines[-1]) if lines else None
    if failure or match is None:
        return math.nan, f"{mode} mode failed: {failure or 'no figures line'}"
    return float(match.group(2)), ""


def pyflink_rate(args: argparse.Namespace, events: int) -> float:
    """The job on PyFlink, in its own interpreter: thread mode, else process mode."""
    if not args.pyflink_python:
        return _peer_line("pyflink", math.nan, PYFLINK_NOT_INSTALLED)
    reasons = []
    for mode in ("thread", "process"):
        rate, reason = _run_pyflink(args, events, mode)
        if not math.isnan(rate):
            return _peer_line("pyflink", rate)
        reasons.append(reason)
    return _peer_line("pyflink", math.nan, "; ".join(reasons))


if __name__ == "__main__":
    main()
