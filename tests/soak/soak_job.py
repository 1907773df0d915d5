"""The soak test's job, feeder, failure schedule and output checks (not a test module).

The job reads a directory that a feeder thread keeps adding files to (``FileSource``
monitoring it), parses each line ``"<seq> <key>"``, counts per key in ``ValueState`` and
writes ``"<seq>,<key>,<count>"`` to an exactly-once ``FileSink``; the same records are also
collected (``execute_and_collect``, which hands records out only after their checkpoint).

Classes defined here are pickled by reference: Spark's Python workers import this module
from the test directory (on ``sys.path`` or ``PYTHONPATH`` before the session starts).
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockgate.common import Duration, Encoder, WatermarkStrategy
from lockgate.datastream import KeyedProcessFunction, MapFunction
from lockgate.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    FileSource,
    RollingPolicy,
    StreamFormat,
)
from lockgate.datastream.state import ValueStateDescriptor

UIDS = ("fed-files", "parse", "count-per-key", "file-sink")
PART_SIZE = 4096  # bytes: a busy epoch rolls a subtask's part file once or twice


# User-code failures ---------------------------------------------------------------------------


class Traps:
    """Failures of user code, armed by the test at chosen moments.

    The test arms a trap on one input record (its sequence number, not yet written when the
    trap is armed) at one site: ``parse`` (the map chained to the source) or ``count`` (the
    keyed function, after its state update). The function that meets the record raises,
    ``times`` times in all over every task attempt and restart: once is absorbed by Spark's
    task retry (the epoch still succeeds), twice fails the epoch past Spark's retries, so
    the job fails over and re-reads the record (which then passes). Attempts are counted
    with marker files, which all Spark workers of the machine share.
    """

    def __init__(self, directory: Path):
        self.directory = str(directory)
        Path(self.directory).mkdir(parents=True, exist_ok=True)

    def arm(self, seq: int, site: str, times: int) -> None:
        path = Path(self.directory) / f"arm-{seq}-{site}"
        temp = path.with_name(f".{path.name}.tmp")
        temp.write_text(str(times))
        os.rename(temp, path)  # a worker never reads a half-written count

    def fired(self, seq: int, site: str) -> int:
        return len(list(Path(self.directory).glob(f"fired-{seq}-{site}-*")))

    def check(self, seq: int, site: str) -> None:
        armed = f"{self.directory}/arm-{seq}-{site}"
        if not os.path.exists(armed):  # one stat per record: the common case
            return
        with open(armed) as handle:
            times = int(handle.read())
        if self.fired(seq, site) < times:
            Path(self.directory, f"fired-{seq}-{site}-{uuid.uuid4().hex}").write_text("")
            raise RuntimeError(f"soak trap fired on record {seq} at {site}")


class ParseLine(MapFunction):
    def __init__(self, traps: Traps):
        self.traps = traps

    def map(self, value: str) -> tuple[int, str]:
        seq, key = value.split(" ")
        self.traps.check(int(seq), "parse")
        return int(seq), key


class CountPerKey(KeyedProcessFunction):
    """Running count per key in ValueState; a trap here fires after the state update."""

    def __init__(self, traps: Traps):
        self.traps = traps

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value: tuple[int, str], ctx: Any):
        seq, key = value
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        self.traps.check(seq, "count")
        yield f"{seq},{key},{count}"


def build_job(env: Any, incoming: Path, out: Path, traps: Traps) -> Any:
    """The job; returns the stream of output lines (the FileSink is attached already)."""
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(incoming))
        .monitor_continuously(Duration.of_millis(200))
        .build()
    )
    lines = env.from_source(source, WatermarkStrategy.no_watermarks(), "fed files").uid(UIDS[0])
    counts = (
        lines.map(ParseLine(traps))
        .uid(UIDS[1])
        .key_by(lambda record: record[1])
        .process(CountPerKey(traps))
        .uid(UIDS[2])
    )
    sink = (
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=PART_SIZE))
        .build()
    )
    counts.sink_to(sink).uid(UIDS[3])
    return counts


# The feeder -----------------------------------------------------------------------------------


class Feeder(threading.Thread):
    """Adds input files to a directory until stopped: each is written under a hidden name
    and renamed into place, so a visible file never changes. Line ``i`` overall is
    ``"<i> <key>"`` with a key drawn from ``keys`` keys by a seeded generator; a file of
    about ``mean_lines`` lines (+-25%) comes about every ``mean_pause_s`` seconds (+-10%),
    a steady feed, so that the rates the warm-up measures hold for the run."""

    def __init__(self, directory: Path, seed: int, keys: int, mean_lines: int, mean_pause_s: float):
        super().__init__(name="soak-feeder", daemon=True)
        self.directory = directory
        self.random = random.Random(seed)
        self.arming = random.Random(seed + 1)  # the feed's own sequence stays the seed's
        self.keys = keys
        self.mean_lines = mean_lines
        self.mean_pause_s = mean_pause_s
        self.lock = threading.Lock()  # held while a file is written: see ``arm_next``
        self.stopped = threading.Event()
        self.wake = threading.Event()
        self.lines = 0
        self.files = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stopped.is_set():
                self.write_file()
                self.wake.wait(self.mean_pause_s * self.random.uniform(0.9, 1.1))
                self.wake.clear()
        except BaseException as exc:  # the test checks ``error``
            self.error = exc

    def write_file(self) -> None:
        count = self.random.randint(self.mean_lines * 3 // 4, self.mean_lines * 5 // 4)
        with self.lock:
            name = f"in-{self.files:06d}.txt"
            temp = self.directory / f".{name}.tmp"
            with open(temp, "w", encoding="utf-8") as handle:
                for seq in range(self.lines, self.lines + count):
                    handle.write(f"{seq} k{self.random.randrange(self.keys):03d}\n")
            os.rename(temp, self.directory / name)
            self.lines += count
            self.files += 1

    def arm_next(self, traps: Traps, site: str, times: int) -> int:
        """Arm a trap on a line of the next file, which is written at once (after the trap
        exists, so no reader can have passed that line)."""
        with self.lock:
            seq = self.lines + self.arming.randrange(self.mean_lines * 3 // 4)
            traps.arm(seq, site, times)
        self.wake.set()
        return seq

    def stop(self) -> None:
        self.stopped.set()
        self.wake.set()
        self.join(30)
        if self.error is not None:
            raise self.error


# The failure schedule -------------------------------------------------------------------------

# Injected failures (lockgate.testing.inject-failure): the point and what its number counts
INJECTIONS = (
    ("after-snapshot-before-ack", "epoch"),
    ("metadata-write", "checkpoint"),
    ("after-metadata-before-commit", "checkpoint"),
    ("mid-commit", "checkpoint"),
)
# User-code failures: the site and how many times the trap fires (2: past Spark's retries)
USER_FAILURES = (("count", 2), ("parse", 1), ("parse", 2), ("count", 1))


@dataclass
class Event:
    at_s: float  # planned time, seconds after the job started
    kind: str  # "user" or "inject"
    site: str  # user: parse/count; inject: the injection point
    times: int = 0  # user: how often the trap fires
    number: int = 0  # inject: the epoch or checkpoint id
    seq: int | None = None  # user: the record the trap was armed on
    armed_at_s: float | None = None

    @property
    def fails_over(self) -> bool:
        return self.kind == "inject" or self.times >= 2

    def describe(self) -> str:
        if self.kind == "inject":
            return f"inject {self.site}@{self.number}"
        what = "fails over" if self.fails_over else "task retry"
        return f"user trap at {self.site} x{self.times} ({what}) on record {self.seq}"


def plan_events(
    feed_s: float, slots: int, epochs_per_s: float, checkpoints_per_s: float
) -> list[Event]:
    """``slots`` failures spread evenly over the feeding time, a few minutes apart in a long
    run. User-code failures are armed at their exact time; injected failures are named by
    epoch or checkpoint id, estimated from the rates measured in the warm-up run (90% of
    them, so that they rather come early than miss the run), and take the first eight slots,
    alternating with user failures so that their estimate has most of the run to be met."""
    events = []
    injections = list(INJECTIONS)
    for slot in range(slots):
        at_s = feed_s * (slot + 0.5) / slots
        if slot % 2 == 1 and injections:
            point, counts = injections.pop(0)
            rate = epochs_per_s if counts == "epoch" else checkpoints_per_s
            number = max(3, round(0.9 * rate * at_s))
            events.append(Event(at_s, "inject", point, number=number))
        else:
            site, times = USER_FAILURES[len([e for e in events if e.kind == "user"]) % 4]
            events.append(Event(at_s, "user", site, times=times))
    return events


def injection_spec(events: list[Event], restore_failures: list[int]) -> str:
    points = [f"{e.site}@{e.number}" for e in events if e.kind == "inject"]
    points += [f"during-restore@{n}" for n in restore_failures]
    return ",".join(points)


# Observing the running job --------------------------------------------------------------------


def latest_checkpoint(checkpoints: Path) -> tuple[int, int] | None:
    """(id, epoch) of the newest completed checkpoint on storage, or None."""
    found = []
    for job_dir in checkpoints.glob("*"):
        for chk in job_dir.glob("chk-*"):
            if re.fullmatch(r"chk-\d+", chk.name):
                found.append(chk)
    for chk in sorted(found, key=lambda p: int(p.name[4:]), reverse=True):
        try:
            body = json.loads((chk / "_metadata").read_text())["body"]
        except (OSError, ValueError, KeyError):
            continue  # being written, or subsumed meanwhile
        return int(body["checkpoint_id"]), int(body["epoch"])
    return None


def tree_size(root: Path) -> tuple[int, int, dict[str, int]]:
    """Entries (files and directories), bytes, and entries per directory two levels down
    (a job's id shown as ``<job>``) under ``root``; entries may vanish while it is walked."""
    entries = size = 0
    by_dir: Counter = Counter()
    for dirpath, dirnames, names in os.walk(root):
        parts = Path(dirpath).relative_to(root).parts[:2]
        where = "/".join("<job>" if re.fullmatch(r"[0-9a-f]{32}", p) else p for p in parts)
        by_dir[where or "."] += len(dirnames) + len(names)
        entries += len(dirnames)
        for name in names:
            try:
                size += os.stat(os.path.join(dirpath, name)).st_size
                entries += 1
            except FileNotFoundError:
                pass
    return entries, size, dict(by_dir)


def rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class SparkJobs:
    """Counts the Spark jobs started in the application (lockgate runs one per epoch attempt).

    Job ids are sequential and the status tracker knows the most recent ones (1000 by
    default): one counter probes forward from the last id it saw, so it must be asked at
    least every few hundred jobs, and serves every run of the session.
    """

    def __init__(self, spark: Any):
        self.spark = spark
        self.tracker = spark.sparkContext.statusTracker()
        self.next_id = 0

    def count(self) -> int:
        misses, probe = 0, self.next_id
        while misses < 20:
            if self.tracker.getJobInfo(probe) is None:
                misses += 1
            else:
                self.next_id, misses = probe + 1, 0
            probe += 1
        return self.next_id


# Checking the output --------------------------------------------------------------------------


def visible_files(directory: Path) -> list[Path]:
    return sorted(
        p for p in directory.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))
    )


def count_lines(files: list[Path]) -> int:
    total = 0
    for path in files:
        with open(path, "rb") as handle:
            total += sum(1 for _ in handle)
    return total


class OutputCounter:
    """Counts the lines of the visible files of a directory, reading each new file once
    (committed part files never change). Only used while draining, after the feed ended."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.seen: set[Path] = set()
        self.lines = 0

    def count(self) -> int:
        new = [p for p in visible_files(self.directory) if p not in self.seen]
        self.lines += count_lines(new)
        self.seen.update(new)
        return self.lines


def fed_records(incoming: Path) -> list[tuple[int, str, str]]:
    """(seq, key, file name) of every line the feeder wrote, from its files."""
    records = []
    for path in visible_files(incoming):
        for line in path.read_text(encoding="utf-8").splitlines():
            seq, key = line.split(" ")
            records.append((int(seq), key, path.name))
    return records


def output_problems(what: str, lines: list[str], fed: list[tuple[int, str, str]]) -> list[str]:
    """Differences between output lines and the plain-Python reference of the fed records.

    Exactly once: every fed record appears in exactly one output line, with its key, and
    the counts of a key are 1..n (each once), increasing in the order of the records of
    that key within one input file (a file is read in order by one subtask; records of a
    key in different files may interleave, so their relative counts are not fixed).
    """
    problems = []
    key_of = {seq: key for seq, key, _ in fed}
    seen: Counter = Counter()
    count_of: dict[int, int] = {}
    counts_by_key: dict[str, list[int]] = defaultdict(list)
    malformed = []
    for line in lines:
        try:
            seq_text, key, count_text = line.split(",")
            seq, count = int(seq_text), int(count_text)
        except ValueError:
            malformed.append(line)
            continue
        seen[seq] += 1
        count_of[seq] = count
        counts_by_key[key].append(count)
        if key_of.get(seq, key) != key:
            problems.append(f"{what}: record {seq} has key {key}, fed with {key_of[seq]}")
    if malformed:
        problems.append(f"{what}: {len(malformed)} malformed lines, first {malformed[:3]}")
    missing = sorted(set(key_of) - set(seen))
    repeated = sorted(seq for seq, n in seen.items() if n > 1)
    unknown = sorted(set(seen) - set(key_of))
    if missing:
        problems.append(f"{what}: {len(missing)} fed records lost, first {missing[:10]}")
    if repeated:
        problems.append(
            f"{what}: {len(repeated)} records written more than once, first "
            f"{[(seq, seen[seq]) for seq in repeated[:10]]}"
        )
    if unknown:
        problems.append(f"{what}: {len(unknown)} records never fed, first {unknown[:10]}")
    fed_per_key = Counter(key for _, key, _ in fed)
    for key in sorted(set(fed_per_key) | set(counts_by_key)):
        counts = sorted(counts_by_key.get(key, []))
        if counts != list(range(1, fed_per_key[key] + 1)):
            expected = Counter(range(1, fed_per_key[key] + 1))
            absent = sorted(expected - Counter(counts))[:10]
            wrong = sorted(Counter(counts) - expected)[:10]
            problems.append(
                f"{what}: key {key} fed {fed_per_key[key]} times has counts other than "
                f"1..{fed_per_key[key]} (missing {absent}, unexpected or repeated {wrong})"
            )
            break  # one key says enough
    last: dict[tuple[str, str], tuple[int, int]] = {}
    for seq, key, file in fed:
        if seq not in count_of:
            continue
        previous = last.get((file, key))
        if previous is not None and count_of[seq] <= previous[1]:
            problems.append(
                f"{what}: in {file}, record {seq} of key {key} counted {count_of[seq]} after "
                f"record {previous[0]} counted {previous[1]}"
            )
            break
        last[(file, key)] = (seq, count_of[seq])
    return problems
