"""Latency of a keyed count fed at a fixed rate: from an event's arrival to its result being
visible, in AT_LEAST_ONCE and EXACTLY_ONCE, on lockgate (and with ``--peers`` on PyFlink and
Spark's ``transformWithStateInPandas``, in the same run).

Input, the same for every system: a feeder (``latency_probe.py``, a process of its own, so
that neither it nor the watcher below competes for the GIL of this process, where lockgate's
and Spark's drivers run) writes a file of keyed events into a fresh directory every 100 ms
(``--file-interval-ms``), ``rate x 0.1 s`` lines ``<key>,<arrival ms>`` over 10k keys, each
file stamped with the wall clock just before it is written, written under a hidden name and
renamed into place. Rates:
``--rates`` (default 20k and 100k events/s), each for ``--warmup-seconds`` (10, discarded:
the job's first epochs or micro-batches, the JVMs' warm-up) plus ``--seconds`` (60)
measured.

The job, the same on every system: a continuously monitoring file source over that directory
-> parse -> ``key_by`` -> a keyed function with a ValueState count per key that emits
``<key>,<count>,<arrival ms>`` for every event -> a file sink into a fresh output directory.
Parallelism 2 (``local[2]``). lockgate: ``FileSource.for_record_stream_format(text lines)
.monitor_continuously(100 ms)`` -> ``map`` -> ``key_by`` -> ``KeyedProcessFunction`` ->
``FileSink.for_row_format`` (SimpleStringEncoder, ``on_checkpoint_rolling_policy``; lockgate
rolls part files at every epoch end anyway), checkpoints every 1 s
(``--checkpoint-interval-ms``) in the mode measured, everything else lockgate's defaults:
epochs sized by ``lockgate.epoch.target-duration`` 1 s within
``lockgate.epoch.max-records-per-split`` 1M (an epoch reads every file found, up to its
share of lines of each), ``lockgate.source.idle-poll-ms`` 200 (the driver sleeps that long when
no new file is there), heap state backend, checkpoints in the driver's memory. The discovery
interval and the checkpoint interval have no default in lockgate or Flink (a monitoring
source must be given one; without an interval there are no checkpoints, and exactly-once
output is committed by checkpoints): both systems get the same, 100 ms and 1 s.

Visible means: a line of a file of the output directory that is not hidden, read by the
probe's watcher, which lists the directory every 20 ms (``--poll-ms``). Latency = the poll's
wall clock minus the arrival stamp, so up to one poll late.

- lockgate: in AT_LEAST_ONCE the FileSink publishes (renames) its part files at the end of
  every epoch; in EXACTLY_ONCE when the checkpoint covering the epoch completes.
- PyFlink (thread mode, ``bench/peers/pyflink_latency.py``, in ``--pyflink-python``): the same
  job, Flink's FileSink with ``OnCheckpointRollingPolicy`` (its default rolling policy keeps
  part files open up to 60 s); Flink's FileSink commits part files when a checkpoint
  completes in either mode, so its AT_LEAST_ONCE differs from its EXACTLY_ONCE only in the
  checkpoints' barrier alignment.
- Spark (``bench/peers/spark_tws_latency.py``, in this session): a file stream source on the
  directory, default trigger, the file sink. Spark has no checkpointing mode; its file sink
  writes part files in place while a micro-batch runs and commits the batch in
  ``_spark_metadata``. One query gives both lines: mode=AT_LEAST_ONCE counts a line visible
  as soon as it is in a part file, mode=EXACTLY_ONCE when its file is in the commit log.

Each system runs alone (one after the other: lockgate, Spark, then PyFlink with Spark
stopped), each mode on fresh directories and a fresh job; the feeder keeps feeding after
the measured window until every measured event's result has been seen (so the last ones meet
the same load), at most ``--drain-seconds`` (30). A system that cannot keep up falls ever
further behind: its events not seen by then count as infinitely late, and a percentile that
falls among them prints ``inf``; ``seen`` says how many were.

One figures line per system, mode and rate:

    latency system=<lockgate|pyflink|spark_tws> mode=<AT_LEAST_ONCE|EXACTLY_ONCE>
    rate=<events/s asked> p50_ms=... p99_ms=... max_ms=... events=<measured events>
    seen=<of them, seen> fed_rate=<measured events / --seconds> late_files=<files written
    more than 50 ms after due>

(nearest-rank percentiles over the measured events). ``nan`` figures mean the system is not
installed or failed (the line before says why).

Run: ``python bench/latency.py [--rates 20000,100000] [--seconds 60] [--modes
AT_LEAST_ONCE,EXACTLY_ONCE] [--peers --pyflink-python PATH]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import keyed_count
from peer_runs import PEERS_DIR, add_peer_arguments, peer_environment
from pyspark import cloudpickle

from lockgate.common import Configuration, Duration, Encoder, Types, WatermarkStrategy
from lockgate.common import config_options as options
from lockgate.datastream import (
    CheckpointingMode,
    KeyedProcessFunction,
    StreamExecutionEnvironment,
)
from lockgate.datastream.connectors.file_system import (
    FileSink,
    FileSource,
    RollingPolicy,
    StreamFormat,
)
from lockgate.datastream.state import ValueStateDescriptor

BENCH_DIR = Path(__file__).resolve().parent
MODES = ("AT_LEAST_ONCE", "EXACTLY_ONCE")
PYFLINK_START_TIMEOUT_S = 300
STOP_TIMEOUT_S = 120


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rates", default="20000,100000", help="comma-separated events/s (default 20k,100k)"
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="measured seconds per run")
    parser.add_argument(
        "--warmup-seconds", type=float, default=10.0, help="fed first and not measured"
    )
    parser.add_argument(
        "--drain-seconds",
        type=float,
        default=30.0,
        help="most time after the window to wait for its events' results",
    )
    parser.add_argument("--modes", default=",".join(MODES), help="checkpointing modes to run")
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--file-interval-ms", type=int, default=100)
    parser.add_argument(
        "--discovery-ms",
        type=int,
        default=100,
        help="discovery interval of the monitoring FileSource (lockgate and PyFlink)",
    )
    parser.add_argument("--checkpoint-interval-ms", type=int, default=1000)
    parser.add_argument("--poll-ms", type=int, default=20, help="the watcher's listing interval")
    keyed_count.add_spark_arguments(parser)
    add_peer_arguments(parser, "also run PyFlink and Spark TWS")
    args = parser.parse_args(argv)
    args.rate_list = [int(rate) for rate in args.rates.split(",") if rate.strip()]
    args.mode_list = [mode.strip().upper() for mode in args.modes.split(",") if mode.strip()]
    for mode in args.mode_list:
        if mode not in MODES:
            parser.error(f"unknown mode {mode!r}: use {' or '.join(MODES)}")
    return args


# The job ------------------------------------------------------------------------------------


def parse(line):
    key, arrival = line.split(",")
    return int(key), int(arrival)


def event_key(event):
    return event[0]


def never(_):
    return False


class CountArrivals(KeyedProcessFunction):
    """Counts the events of each key; emits ``key,count,arrival`` for every event."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield f"{value[0]},{count},{value[1]}"


def lockgate_job(spark, args, mode: str, input_dir: str, output_dir: str, work_dir: str):
    """The job, and the collect iterator that runs it (closing it cancels the job: lockgate
    has no ``execute_async``, so the job gets a second sink that collects nothing)."""
    config = Configuration()
    config.set_string(options.WORK_DIR.key, work_dir)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.configure(config)
    env.set_parallelism(args.parallelism)
    env.enable_checkpointing(args.checkpoint_interval_ms, CheckpointingMode[mode])
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), input_dir)
        .monitor_continuously(Duration.of_millis(args.discovery_ms))
        .build()
    )
    counts = (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "arrivals")
        .map(parse)
        .key_by(event_key)
        .process(CountArrivals())
    )
    counts.sink_to(
        FileSink.for_row_format(output_dir, Encoder.simple_string_encoder())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    return counts.filter(never).execute_and_collect(f"latency {mode}")


# Runs ---------------------------------------------------------------------------------------


class RunDirs:
    """Fresh input, output and scratch directories of one run, removed afterwards."""

    def __init__(self, label: str):
        self._temp = tempfile.TemporaryDirectory(prefix=f"lockgate-latency-{label}-")
        root = self._temp.name
        self.input = os.path.join(root, "input")
        self.output = os.path.join(root, "output")
        self.scratch = os.path.join(root, "scratch")
        for path in (self.input, self.output, self.scratch):
            os.makedirs(path)

    def __enter__(self) -> RunDirs:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._temp.cleanup()


def start_probe(args, rate: int, dirs: RunDirs, sink: str) -> subprocess.Popen:
    command = [
        sys.executable,
        str(BENCH_DIR / "latency_probe.py"),
        f"--input={dirs.input}",
        f"--output={dirs.output}",
        f"--rate={rate}",
        f"--keys={args.keys}",
        f"--file-interval-ms={args.file_interval_ms}",
        f"--warmup-seconds={args.warmup_seconds}",
        f"--seconds={args.seconds}",
        f"--drain-seconds={args.drain_seconds}",
        f"--poll-ms={args.poll_ms}",
        f"--sink={sink}",
    ]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)


def probe_result(probe: subprocess.Popen) -> dict:
    out, _ = probe.communicate()
    lines = out.strip().splitlines()
    if probe.returncode != 0 or not lines:
        raise RuntimeError(f"the probe failed (exit code {probe.returncode})")
    return json.loads(lines[-1])


def figures_line(system: str, mode: str, rate: int, result: dict | None, rule: str) -> str:
    if result is None:
        return (
            f"latency system={system} mode={mode} rate={rate} p50_ms=nan p99_ms=nan "
            "max_ms=nan events=0 seen=0 fed_rate=nan late_files=0"
        )
    figures = result["rules"][rule]
    return (
        f"latency system={system} mode={mode} rate={rate} p50_ms={figures['p50_ms']:.0f} "
        f"p99_ms={figures['p99_ms']:.0f} max_ms={figures['max_ms']:.0f} "
        f"events={result['measured_events']} seen={figures['seen']} "
        f"fed_rate={result['measured_rate']:.0f} late_files={result['late_files']}"
    )


def run_lockgate(spark, args, rate: int, mode: str) -> dict:
    with RunDirs("lockgate") as dirs:
        results = lockgate_job(spark, args, mode, dirs.input, dirs.output, dirs.scratch)
        errors: list[BaseException] = []

        def drive() -> None:
            try:
                for _ in results:
                    pass
            except BaseException as error:  # reported below
                errors.append(error)

        runner = threading.Thread(target=drive, name="lockgate-job", daemon=True)
        runner.start()
        probe = start_probe(args, rate, dirs, "rename")
        try:
            result = probe_result(probe)
        finally:
            if probe.poll() is None:
                probe.kill()
            results.close()
            runner.join(STOP_TIMEOUT_S)
        if errors:
            raise RuntimeError(f"the lockgate job failed: {errors[0]!r}") from errors[0]
        if runner.is_alive():
            raise RuntimeError(f"the lockgate job did not stop within {STOP_TIMEOUT_S} s")
        return result


def _load_peer(name: str):
    spec = importlib.util.spec_from_file_location(name, PEERS_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    # Spark's Python workers cannot import the peer module: ship its classes by value.
    cloudpickle.register_pickle_by_value(module)
    return module


def run_spark_tws(spark, args, rate: int) -> dict:
    module = _load_peer("spark_tws_latency")
    previous = module.configure(spark, args.parallelism)
    try:
        with RunDirs("spark") as dirs:
            query = module.start_query(
                spark, dirs.input, dirs.output, os.path.join(dirs.scratch, "checkpoint")
            )
            probe = start_probe(args, rate, dirs, "spark")
            try:
                result = probe_result(probe)
            finally:
                if probe.poll() is None:
                    probe.kill()
                error = query.exception()
                query.stop()
            if error is not None:
                raise RuntimeError(f"the query failed: {error}")
            return result
    finally:
        module.restore(spark, previous)


def spark_tws_missing() -> str | None:
    spec = importlib.util.spec_from_file_location(
        "spark_tws_keyed_count", PEERS_DIR / "spark_tws_keyed_count.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.missing_reason()


def _lines_of(stream, into: queue.Queue) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


def _stop_group(process: subprocess.Popen) -> None:
    """Stop the PyFlink process we started and the JVM it started (its process group)."""
    if process.stdin is not None:
        process.stdin.close()  # the script cancels its job and exits
    try:
        process.wait(STOP_TIMEOUT_S)
        return
    except subprocess.TimeoutExpired:
        pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
            process.wait(30)
            return
        except (ProcessLookupError, subprocess.TimeoutExpired):
            continue


def run_pyflink(args, rate: int, mode: str) -> dict:
    with RunDirs("pyflink") as dirs, open(os.path.join(dirs.scratch, "stderr"), "w+") as errors:
        command = [
            args.pyflink_python,
            str(PEERS_DIR / "pyflink_latency.py"),
            f"--input={dirs.input}",
            f"--output={dirs.output}",
            f"--parallelism={args.parallelism}",
            f"--checkpointing-mode={mode}",
            f"--checkpoint-interval-ms={args.checkpoint_interval_ms}",
            f"--discovery-ms={args.discovery_ms}",
        ]
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            start_new_session=True,  # its own process group: the JVM goes with it
            env=peer_environment(),
        )
        try:
            lines: queue.Queue = queue.Queue()
            threading.Thread(target=_lines_of, args=(process.stdout, lines), daemon=True).start()
            deadline = time.monotonic() + PYFLINK_START_TIMEOUT_S
            while True:
                try:
                    line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
                except queue.Empty:
                    line = None
                if line is None:
                    errors.seek(0)
                    tail = [text for text in errors.read().splitlines() if text.strip()][-3:]
                    raise RuntimeError(f"the job did not start: {' | '.join(tail)}")
                if line.startswith("pyflink_latency running"):
                    break
            probe = start_probe(args, rate, dirs, "rename")
            try:
                return probe_result(probe)
            finally:
                if probe.poll() is None:
                    probe.kill()
        finally:
            _stop_group(process)


# Main ---------------------------------------------------------------------------------------


def _failed(system: str, mode: str, rate: int, reason: str) -> None:
    print(f"{system} mode={mode} rate={rate}: {reason}")
    print(figures_line(system, mode, rate, None, "visible"), flush=True)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    spark = keyed_count.start_session(args.master)
    print(
        f"latency_config rates={args.rates} warmup_s={args.warmup_seconds:g} "
        f"seconds={args.seconds:g} drain_s={args.drain_seconds:g} keys={args.keys} "
        f"file_interval_ms={args.file_interval_ms} discovery_ms={args.discovery_ms} "
        f"checkpoint_interval_ms={args.checkpoint_interval_ms} poll_ms={args.poll_ms} "
        f"parallelism={args.parallelism} "
        f"idle_poll_ms={options.CONTINUOUS_IDLE_POLL.default} "
        f"max_records_per_split={options.EPOCH_MAX_RECORDS_PER_SPLIT.default} "
        f"epoch_target_ms={options.EPOCH_TARGET_DURATION.default}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-") as work_dir:
        # Start the Python workers and import lockgate in them before the first run.
        warm = keyed_count.parse_args(["--events=2000", f"--parallelism={args.parallelism}"])
        warm.max_records_per_split = 1000
        keyed_count.run_job(spark, warm, keyed_count.make_events(2000, 100), work_dir)
    tws_reason = spark_tws_missing() if args.peers else None
    for rate in args.rate_list:
        for mode in args.mode_list:
            result = run_lockgate(spark, args, rate, mode)
            print(figures_line("lockgate", mode, rate, result, "visible"), flush=True)
        if not args.peers:
            continue
        if tws_reason is not None:
            for mode in args.mode_list:
                _failed("spark_tws", mode, rate, f"not installed: {tws_reason}")
            continue
        try:
            result = run_spark_tws(spark, args, rate)
        except Exception as error:  # a failed peer is reported, not fatal
            for mode in args.mode_list:
                _failed("spark_tws", mode, rate, f"failed: {_first_line(error)}")
            continue
        for mode in args.mode_list:
            rule = "visible" if mode == "AT_LEAST_ONCE" else "committed"
            print(figures_line("spark_tws", mode, rate, result, rule), flush=True)
    spark.stop()
    if not args.peers:
        return
    for rate in args.rate_list:
        for mode in args.mode_list:
            if not args.pyflink_python:
                _failed("pyflink", mode, rate, "not installed: give --pyflink-python")
                continue
            try:
                result = run_pyflink(args, rate, mode)
            except Exception as error:  # a failed peer is reported, not fatal
                _failed("pyflink", mode, rate, f"failed: {_first_line(error)}")
                continue
            print(figures_line("pyflink", mode, rate, result, "visible"), flush=True)


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else repr(error)


if __name__ == "__main__":
    main()
