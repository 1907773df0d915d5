"""Soak: a continuous job runs for LOCKGATE_SOAK_MINUTES (30) with failures every few minutes.

Not in the default run (marker ``soak``): ``make soak``, or ``pytest -m soak tests/soak``.
Settings (environment variables):

- ``LOCKGATE_SOAK_MINUTES``: how long the job is fed, default 30.
- ``LOCKGATE_SOAK_BACKENDS``: the state backends to soak, one job each, default
  ``hashmap,rocksdb`` (rocksdb with incremental checkpoints).
- ``LOCKGATE_SOAK_SEED``: the feeder's seed (keys, file sizes, pauses); random by default,
  printed at the start so that a run can be repeated.

A feeder thread adds files to a directory that a ``FileSource`` monitors; the job counts
per key in ``ValueState`` and writes to an exactly-once ``FileSink`` (and the same records
to ``execute_and_collect``), checkpointing every 1.5 s. Failures are spread over the run:
user functions that raise on a chosen record (absorbed by Spark's task retry, or failing
the epoch past it), and lockgate's injected failures (after a snapshot before its ack, a
failed ``_metadata`` write, after ``_metadata`` before the commit, in the middle of the
commit, and during restores). When the feed ends, the test waits until everything fed is
committed, stops the job through the iterator, and checks:

- exactly once: every fed line leads to exactly one committed output line (FileSink) and
  one collected record, with per-key counts exactly 1..n (see ``output_problems``);
- every planned failure happened, and no other (restarts == failures that fail over);
- flat driver memory (``flat_memory_problems``), and checkpoint storage and the work
  directory that do not grow with the run (``bounded_storage_problems``).

Each run prints its figures (epochs, checkpoints, restarts, memory by quarter of the feed,
storage, every failure with its time) before the checks fail or pass.
"""

from __future__ import annotations

import functools
import gc
import json
import logging
import os
import random
import statistics
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from soak_job import (
    Event,
    Feeder,
    OutputCounter,
    SparkJobs,
    Traps,
    build_job,
    fed_records,
    injection_spec,
    latest_checkpoint,
    output_problems,
    plan_events,
    rss_bytes,
    tree_size,
    visible_files,
)

from lockgate.common import Configuration, RestartStrategies
from lockgate.datastream import CheckpointingMode, StreamExecutionEnvironment
from lockgate.datastream.checkpoint_storage import FileSystemCheckpointStorage

pytestmark = pytest.mark.soak

MINUTES = float(os.environ.get("LOCKGATE_SOAK_MINUTES") or 30)
BACKENDS = (os.environ.get("LOCKGATE_SOAK_BACKENDS") or "hashmap,rocksdb").split(",")
SEED = int(os.environ.get("LOCKGATE_SOAK_SEED") or random.SystemRandom().randrange(10**6))

SPARK = {
    # Two cores like the machines lockgate is tested on, and one retry per task: local mode
    # never retries a failed task otherwise (the task-retry traps rely on it).
    "spark.master": "local[2,2]",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
}
PARALLELISM = 2
CHECKPOINT_INTERVAL_MS = 1500
KEYS = 50
# About 40 lines/s in files of about 800 lines: few files, so that the FileSource's memory
# per file (see flat_memory_problems) stays small next to what a leak per epoch would add;
# at most 25 lines of a file per epoch, so the job reads most of the time, in bounded epochs.
MEAN_LINES = 800
MEAN_PAUSE_S = 20.0
MAX_RECORDS_PER_SPLIT = 25
EPOCH_HISTORY = 100  # lockgate.epoch.history: full after a minute or two of epochs
WARM_UP_S = 60.0
SAMPLE_EVERY_S = 5.0
JVM_EVERY_S = 60.0
DRAIN_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 120.0


# The run ------------------------------------------------------------------------------------


class RestartLog(logging.Handler):
    """Keeps the text of lockgate's warnings; a restart says '...; restarting in <n> ms'.

    Only text: a log record of a restart holds the failure, whose traceback holds the
    driver's frames (pytest's log capture, which keeps every record of a test, would make
    each restart look like a leak, so lockgate's records do not go there during the run).
    """

    def __init__(self, started: float):
        super().__init__(logging.WARNING)
        self.started = started
        self.restarts: list[tuple[float, str]] = []
        self.others: list[tuple[float, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()[:400]
        entry = (time.monotonic() - self.started, message)
        (self.restarts if "restarting in" in message else self.others).append(entry)
        print(f"lockgate warning at {entry[0] / 60:.1f} min: {message}", file=sys.stderr)


class JobRunner(threading.Thread):
    """Consumes the job's collected records (writing them to a file) until the job stops."""

    def __init__(self, results: Any, path: Path):
        super().__init__(name="soak-job", daemon=True)
        self.results = results
        self.path = path
        self.collected = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with open(self.path, "w", encoding="utf-8") as handle:
                for line in self.results:
                    handle.write(line + "\n")
                    self.collected += 1
        except BaseException as exc:  # reported by the test
            self.error = exc


@dataclass
class Sample:
    at_s: float
    traced: int  # tracemalloc, after a collection: live Python memory allocated in the run
    rss: int
    jvm_heap: int  # the driver JVM's used heap after a full GC (refreshed every minute)
    checkpoint: int  # id of the latest completed checkpoint on storage
    epoch: int  # its epoch
    spark_jobs: int
    fed_lines: int
    fed_files: int
    checkpoint_entries: int  # files and directories in checkpoint storage (every 30 s)
    checkpoint_bytes: int
    checkpoint_dirs: dict[str, int]  # entries per directory, two levels down
    work_entries: int  # lockgate.work-dir
    work_bytes: int
    work_dirs: dict[str, int]


@dataclass
class RunReport:
    backend: str
    feed_s: float
    events: list[Event]
    restore_failures: list[int]
    fed_lines: int = 0
    fed_files: int = 0
    drain_s: float = 0.0
    stop_s: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    restarts: list[tuple[float, str]] = field(default_factory=list)
    warnings: list[tuple[float, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    memory_growth: str = ""


def make_env(backend: str, root: Path, inject: str, restart_attempts: int) -> Any:
    config = Configuration()
    for key, value in SPARK.items():
        config.set_string(key, value)
    config.set_string("lockgate.work-dir", str(root / "work"))
    config.set_string("state.backend.type", backend)
    if backend == "rocksdb":
        config.set_string("execution.checkpointing.incremental", "true")
    config.set_integer("lockgate.epoch.history", EPOCH_HISTORY)
    config.set_integer("lockgate.epoch.max-records-per-split", MAX_RECORDS_PER_SPLIT)
    if inject:
        config.set_string("lockgate.testing.inject-failure", inject)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(PARALLELISM)
    env.enable_checkpointing(CHECKPOINT_INTERVAL_MS, CheckpointingMode.EXACTLY_ONCE)
    checkpoints = env.get_checkpoint_config()
    checkpoints.set_checkpoint_storage(FileSystemCheckpointStorage(str(root / "checkpoints")))
    checkpoints.set_num_retained_checkpoints(2)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(restart_attempts, 1000))
    return env


def run_soak(
    backend: str,
    root: Path,
    feed_s: float,
    events: list[Event],
    restore_failures: list[int],
    seed: int,
    label: str,
) -> RunReport:
    """Feed the job for ``feed_s`` seconds with the planned failures, drain, stop, check."""
    for name in ("incoming", "out", "traps"):
        (root / name).mkdir(parents=True)
    report = RunReport(backend, feed_s, events, restore_failures)
    failovers = sum(e.fails_over for e in events) + len(restore_failures)
    env = make_env(backend, root, injection_spec(events, restore_failures), 2 * failovers + 10)
    traps = Traps(root / "traps")
    stream = build_job(env, root / "incoming", root / "out", traps)
    feeder = Feeder(root / "incoming", seed, KEYS, MEAN_LINES, MEAN_PAUSE_S)
    feeder.write_file()  # the source's directory is not empty when the job starts

    started = time.monotonic()
    log = RestartLog(started)
    lockgate_log = logging.getLogger("lockgate")
    lockgate_log.addHandler(log)
    lockgate_log.propagate = False  # see RestartLog
    tracemalloc.start(4)
    results = stream.execute_and_collect(f"soak {label} ({backend})")
    runner = JobRunner(results, root / "collected.txt")
    runner.start()
    feeder.start()
    spark_jobs = spark_job_counter()
    jobs_before = spark_jobs.count()

    def jobs() -> int:
        return spark_jobs.count() - jobs_before

    try:
        feed_and_observe(report, feeder, traps, runner, log, jobs, root, started)
        report.memory_growth = growth_since(root / "middle.tracemalloc")
        feeder.stop()
        report.fed_lines, report.fed_files = feeder.lines, feeder.files
        drain(report, runner, root, started)
        stop_at = time.monotonic()
        results.close()
        runner.join(STOP_TIMEOUT_S)
        report.stop_s = time.monotonic() - stop_at
        assert not runner.is_alive(), f"the job did not stop within {STOP_TIMEOUT_S:.0f} s"
        assert runner.error is None, f"the job failed: {runner.error!r}"
    finally:
        feeder.stopped.set()
        if runner.is_alive():
            results.close()
        tracemalloc.stop()
        lockgate_log.removeHandler(log)
        lockgate_log.propagate = True
    report.restarts, report.warnings = log.restarts, log.others
    report.samples = read_samples(root)
    check_output(report, root)
    check_failures(report, traps)
    return report


def feed_and_observe(
    report: RunReport,
    feeder: Feeder,
    traps: Traps,
    runner: JobRunner,
    log: RestartLog,
    spark_jobs: Callable[[], int],
    root: Path,
    started: float,
) -> None:
    """Let the feeder run for the feeding time, arm the user traps on time, and sample.

    Samples go to a file, not to a list: the test's own memory must not grow with the run.
    """
    pending = sorted((e for e in report.events if e.kind == "user"), key=lambda e: e.at_s)
    next_sample, next_line, next_jvm = 0.0, 60.0, 0.0
    disk: tuple = (0, 0, {}, 0, 0, {})
    jvm_heap = 0
    mid_snapshot: Path | None = root / "middle.tracemalloc"
    with open(root / "samples.jsonl", "w") as samples:
        while (now := time.monotonic() - started) < report.feed_s:
            if runner.error is not None or not runner.is_alive():
                raise AssertionError(f"the job stopped while being fed: {runner.error!r}")
            if feeder.error is not None:
                raise AssertionError(f"the feeder failed: {feeder.error!r}")
            while pending and pending[0].at_s <= now:
                event = pending.pop(0)
                event.seq = feeder.arm_next(traps, event.site, event.times)
                event.armed_at_s = now
            if mid_snapshot is not None and now >= report.feed_s / 2:
                tracemalloc.take_snapshot().dump(str(mid_snapshot))
                mid_snapshot = None
            if now >= next_sample:
                if next_sample % 30 < SAMPLE_EVERY_S:  # walking the directories costs a little
                    disk = (*tree_size(root / "checkpoints"), *tree_size(root / "work"))
                if now >= next_jvm:
                    jvm_heap = jvm_heap_after_gc()
                    next_jvm += JVM_EVERY_S
                latest = sample(now, feeder, spark_jobs, root, jvm_heap, disk)
                samples.write(json.dumps(asdict(latest)) + "\n")
                samples.flush()
                next_sample += SAMPLE_EVERY_S
                if now >= next_line:
                    print(progress_line(report.backend, latest, len(log.restarts)), flush=True)
                    next_line += 60.0
            time.sleep(0.2)


def sample(
    now: float, feeder: Feeder, spark_jobs: Callable[[], int], root: Path, jvm_heap: int, disk
) -> Sample:
    checkpoint, epoch = latest_checkpoint(root / "checkpoints") or (0, 0)
    gc.collect()  # garbage in reference cycles is not a leak: count only what is live
    return Sample(
        now,
        tracemalloc.get_traced_memory()[0],
        rss_bytes(),
        jvm_heap,
        checkpoint,
        epoch,
        spark_jobs(),
        feeder.lines,
        feeder.files,
        *disk,
    )


def growth_since(snapshot_file: Path, top: int = 8) -> str:
    """Where live Python memory grew since the snapshot dumped in the middle of the feed,
    by allocation site (innermost frame first)."""
    gc.collect()
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
    end = tracemalloc.take_snapshot().filter_traces(ignore)
    middle = tracemalloc.Snapshot.load(str(snapshot_file)).filter_traces(ignore)
    stats = end.compare_to(middle, "traceback")
    net = sum(stat.size_diff for stat in stats)
    lines = [f"    net {net / 1024:+.1f} KiB between the two snapshots (each holds transients)"]
    for stat in stats[:top]:
        frames = " < ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(stat.traceback))
        lines.append(f"    {stat.size_diff / 1024:+.1f} KiB ({stat.count_diff:+d} blocks) {frames}")
    return "\n".join(lines)


@functools.cache
def spark_job_counter() -> SparkJobs:
    """One counter for the session (see SparkJobs), made once the first job started Spark."""
    return SparkJobs(SparkSession.builder.getOrCreate())


def jvm_heap_after_gc() -> int:
    jvm = spark_job_counter().spark.sparkContext._jvm
    jvm.java.lang.System.gc()
    runtime = jvm.java.lang.Runtime.getRuntime()
    return runtime.totalMemory() - runtime.freeMemory()


def read_samples(root: Path) -> list[Sample]:
    with open(root / "samples.jsonl") as handle:
        return [Sample(**json.loads(line)) for line in handle]


def progress_line(backend: str, s: Sample, restarts: int) -> str:
    return (
        f"soak {backend} {s.at_s / 60:5.1f} min: fed {s.fed_lines} lines in {s.fed_files} "
        f"files, checkpoint {s.checkpoint} (epoch {s.epoch}), {s.spark_jobs} Spark jobs, "
        f"{restarts} restarts, traced {s.traced / 2**20:.2f} MiB, rss {s.rss / 2**20:.0f} MiB"
    )


def drain(report: RunReport, runner: JobRunner, root: Path, started: float) -> None:
    """Wait until every fed line is committed by the FileSink and collected."""
    drain_started = time.monotonic()
    committed = OutputCounter(root / "out")
    while True:
        done = committed.count(), runner.collected
        if done == (report.fed_lines, report.fed_lines):
            break
        waited = time.monotonic() - drain_started
        if runner.error is not None or not runner.is_alive():
            raise AssertionError(f"the job stopped while draining: {runner.error!r}")
        if waited > DRAIN_TIMEOUT_S or max(done) > report.fed_lines:
            raise AssertionError(
                f"{waited:.0f} s after the feed ended, {done[0]} lines are committed and "
                f"{done[1]} collected, of {report.fed_lines} fed (lost, repeated or stuck)"
            )
        time.sleep(0.5)
    report.drain_s = time.monotonic() - drain_started


# Checks -------------------------------------------------------------------------------------


def check_output(report: RunReport, root: Path) -> None:
    fed = fed_records(root / "incoming")
    assert len(fed) == report.fed_lines, (len(fed), report.fed_lines)
    committed = [
        line for path in visible_files(root / "out") for line in path.read_text().splitlines()
    ]
    collected = (root / "collected.txt").read_text().splitlines()
    report.problems += output_problems("FileSink", committed, fed)
    report.problems += output_problems("collected", collected, fed)
    staged = [p.name for p in (root / "out").rglob(".*") if p.is_file()]
    if staged:
        report.problems.append(f"staged part files left after the job stopped: {staged[:5]}")
    # A cancelled job without externalized checkpoints removes its checkpoints, and every
    # job removes its files from the work directory.
    left = [str(p) for name in ("checkpoints", "work") for p in (root / name).rglob("*")]
    if left:
        report.problems.append(f"{len(left)} files left after the job stopped: {left[:5]}")


def check_failures(report: RunReport, traps: Traps) -> None:
    """Every planned failure happened, as planned, and nothing else failed the job."""
    messages = [message for _, message in report.restarts]
    expected = []
    for event in report.events:
        if event.kind == "user":
            if event.seq is None:
                report.problems.append(f"{event.describe()} was never armed")
                continue
            fired = traps.fired(event.seq, event.site)
            if fired != event.times:
                report.problems.append(f"{event.describe()} fired {fired} times")
            text = f"soak trap fired on record {event.seq} at {event.site}"
        elif event.site == "after-snapshot-before-ack":
            text = f"injected failure after the snapshot of epoch {event.number},"
        else:
            text = f"injected failure at {event.site} ({event.number})"
        matching = [m for m in messages if text in m]
        if event.fails_over:
            expected.append(text)
            if len(matching) != 1:
                report.problems.append(
                    f"{event.describe()}: {len(matching)} restarts for it, expected 1"
                )
        elif matching:
            report.problems.append(f"{event.describe()} failed the job: {matching}")
    for number in report.restore_failures:
        text = f"injected failure at during-restore ({number})"
        expected.append(text)
        if sum(text in m for m in messages) != 1:
            report.problems.append(f"during-restore@{number} did not fail exactly one restore")
    unexpected = [m for m in messages if not any(text in m for text in expected)]
    if unexpected:
        report.problems.append(f"{len(unexpected)} unexpected failures: {unexpected[:5]}")


# Memory and storage --------------------------------------------------------------------------

# Flat driver memory: live Python memory (tracemalloc after a collection, so garbage in
# reference cycles does not count) must not grow from the second quarter of the feed (the
# bounded histories are full by then) to the last quarter by more than
#   NOISE_BYTES: what one sample differs from another (the moment it is taken inside an
#     epoch's planning or acknowledgement), about 10-30 KiB in 5-minute runs;
#   PER_FILE_BYTES for each file fed in between: a continuous FileSource's enumerator
#     remembers every file it has seen (its path, owner, offset and that it is finished),
#     in its state and in each retained checkpoint, as Flink's enumerator remembers the
#     paths it processed; measured about 0.6 KiB per file.
# What grows per epoch, checkpoint or restart goes beyond that: a 30-minute run has ~900
# epochs between the two quarters, so an unbounded list that keeps a 100-byte object per
# epoch adds ~90 KiB, with at most 32 KiB + 45 files x 1.5 KiB = 100 KiB allowed.
NOISE_BYTES = 32 * 1024
PER_FILE_BYTES = 1536
# The process's RSS also counts allocator arenas and caches: only a large growth means
# something there (a native leak in the driver); the same holds for the driver JVM's heap.
RSS_SLACK_BYTES = 32 * 2**20
JVM_SLACK_BYTES = 64 * 2**20


def level(values: list[int]) -> float:
    """The memory that stays over a stretch of samples: its 20th percentile (a sample taken
    while an epoch is planned or acknowledged also holds that epoch's transient objects)."""
    return statistics.quantiles(values, n=5)[0] if len(values) >= 2 else float(values[0])


def quarters(report: RunReport) -> list[list[Sample]]:
    feed_s = report.feed_s
    return [
        [s for s in report.samples if q * feed_s / 4 <= s.at_s < (q + 1) * feed_s / 4]
        for q in range(4)
    ]


def flat_memory_problems(report: RunReport) -> list[str]:
    _, second, _, last = quarters(report)
    if len(second) < 2 or len(last) < 2:
        return [f"too few memory samples ({len(report.samples)}) for a run this short"]
    problems = []
    growth = level([s.traced for s in last]) - level([s.traced for s in second])
    files = statistics.median(s.fed_files for s in last) - statistics.median(
        s.fed_files for s in second
    )
    allowed = NOISE_BYTES + PER_FILE_BYTES * files
    if growth > allowed:
        problems.append(
            f"the driver's live Python memory grew by {growth / 1024:.0f} KiB from the second "
            f"to the last quarter of the feed, more than the {allowed / 1024:.0f} KiB allowed "
            f"({files:.0f} files fed in between); where it grew:\n{report.memory_growth}"
        )
    rss = max(s.rss for s in last) - max(s.rss for s in second)
    if rss > RSS_SLACK_BYTES:
        problems.append(f"the driver's RSS grew by {rss / 2**20:.0f} MiB (second to last quarter)")
    jvm = level([s.jvm_heap for s in last]) - level([s.jvm_heap for s in second])
    if jvm > JVM_SLACK_BYTES:
        problems.append(f"the driver JVM's heap after GC grew by {jvm / 2**20:.0f} MiB")
    return problems


def bounded_storage_problems(report: RunReport) -> list[str]:
    """State is bounded (KEYS keys) and two checkpoints are retained, so checkpoint storage
    and the work directory must not grow with the run: the largest number of entries (files
    and directories) and bytes in the last quarter of the feed may exceed those of the
    second quarter by half (or 50 entries, 1 MiB), not more: what grows steadily from the
    start (per epoch, per checkpoint) about doubles from one quarter to the other."""
    _, second, _, last = quarters(report)
    problems = []
    for what, prefix in (("checkpoint storage", "checkpoint"), ("the work directory", "work")):
        count = attrgetter(f"{prefix}_entries")
        before, after = max(second, key=count), max(last, key=count)
        entries = count(before), count(after)
        size = [max(getattr(s, f"{prefix}_bytes") for s in part) for part in (second, last)]
        grew = entries[1] > entries[0] + max(50, entries[0] // 2)
        if grew or size[1] > size[0] + max(2**20, size[0] // 2):
            dirs = getattr(before, f"{prefix}_dirs"), getattr(after, f"{prefix}_dirs")
            grown = {d: (dirs[0].get(d, 0), n) for d, n in dirs[1].items() if n > dirs[0].get(d, 0)}
            problems.append(
                f"{what} grew from {entries[0]} entries, {size[0]} bytes (second quarter of "
                f"the feed) to {entries[1]} entries, {size[1]} bytes (last quarter); entries "
                f"per directory that grew (before, after): {grown}"
            )
    return problems


# The test -----------------------------------------------------------------------------------


def rates(report: RunReport) -> tuple[float, float]:
    """Epochs and checkpoints per second in the warm-up, after its first 20 s."""
    steady = [s for s in report.samples if s.at_s >= 20]
    first, last = steady[0], steady[-1]
    seconds = last.at_s - first.at_s
    return (last.epoch - first.epoch) / seconds, (last.checkpoint - first.checkpoint) / seconds


@pytest.mark.parametrize("backend", BACKENDS)
def test_soak(backend, tmp_path):
    print(f"\nsoak {backend}: {MINUTES:g} minutes, LOCKGATE_SOAK_SEED={SEED}")
    # A short run without failures: warms Spark's workers up, checks exactly-once once
    # without failures, and measures the rates that place the injected failures.
    warm_up = run_soak(backend, tmp_path / "warm-up", WARM_UP_S, [], [], SEED + 1, "warm-up")
    assert not warm_up.problems, "warm-up run:\n" + "\n".join(warm_up.problems)
    epochs_per_s, checkpoints_per_s = rates(warm_up)
    feed_s = MINUTES * 60
    events = plan_events(feed_s, max(10, round(MINUTES / 2.5)), epochs_per_s, checkpoints_per_s)
    print(
        f"warm-up: {epochs_per_s:.2f} epochs/s, {checkpoints_per_s:.2f} checkpoints/s; plan: "
        + "; ".join(f"{e.at_s / 60:.1f} min {e.describe()}" for e in events)
    )
    gc.collect()
    report = run_soak(backend, tmp_path / "soak", feed_s, events, [2, 5], SEED, "run")
    report.problems += flat_memory_problems(report)
    report.problems += bounded_storage_problems(report)
    print(summary(report))
    assert not report.problems, "\n".join(report.problems)


def summary(report: RunReport) -> str:
    last = report.samples[-1]
    q = quarters(report)

    def levels(attribute: str, unit: int, name: str) -> str:
        values = [level([getattr(s, attribute) for s in part]) / unit for part in q if part]
        return ", ".join(f"{v:.0f}" for v in values) + f" {name}"

    lines = [
        f"soak {report.backend}: fed {report.fed_lines} lines in {report.fed_files} files over "
        f"{report.feed_s / 60:.1f} min; all committed {report.drain_s:.1f} s after the feed "
        f"ended; the job stopped {report.stop_s:.1f} s after close()",
        f"  epochs: {last.epoch} (at the latest checkpoint), Spark jobs: {last.spark_jobs} "
        f"(epoch attempts, in the feeding time), "
        f"checkpoints: {last.checkpoint} (latest id), restarts: {len(report.restarts)}",
        "  by quarter of the feed: traced Python memory "
        + levels("traced", 1024, "KiB")
        + "; rss "
        + levels("rss", 2**20, "MiB")
        + "; JVM heap after GC "
        + levels("jvm_heap", 2**20, "MiB"),
        f"  memory samples: {len(report.samples)} (every {SAMPLE_EVERY_S:g} s); checkpoint "
        f"storage at most {max(s.checkpoint_entries for s in report.samples)} entries, "
        f"{max(s.checkpoint_bytes for s in report.samples) / 2**20:.1f} MiB; work dir at most "
        f"{max(s.work_entries for s in report.samples)} entries, "
        f"{max(s.work_bytes for s in report.samples) / 2**20:.1f} MiB",
        "  growth of live Python memory over the second half of the feed, largest first:",
        report.memory_growth,
    ]
    lines += [f"  restart at {t / 60:.1f} min: {m[:200]}" for t, m in report.restarts]
    lines += [f"  warning at {t / 60:.1f} min: {m[:200]}" for t, m in report.warnings[:10]]
    for event in report.events:
        armed = f", armed at {event.armed_at_s / 60:.1f} min" if event.armed_at_s else ""
        lines.append(f"  planned at {event.at_s / 60:.1f} min{armed}: {event.describe()}")
    return "\n".join(lines)
