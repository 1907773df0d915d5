"""Feeder and watcher of bench/latency.py, run as a process of its own (no lockgate, no Spark).

The feeder writes, every ``--file-interval-ms`` (100 ms), one file of keyed events into the
input directory: ``rate x interval`` lines ``<key>,<arrival ms>``, keys drawn uniformly from
``--keys`` (seeded), every line of a file stamped with the same arrival time: the wall clock
(``time.time()``) just before the file is written. A file is written under a hidden name
(``.arrivals-<n>.tmp``) and renamed into place, so a reader never sees half of one; the
systems under test all skip hidden names. File n is due at ``start + n x interval``; a file
written late (the machine busy) keeps its real stamp, and the feed's real rate is reported.

The watcher lists the output directory every ``--poll-ms`` (20 ms), recursively, skipping
hidden names (``.`` or ``_``: in-progress part files, ``_spark_metadata``, checksums), and
reads every complete line (``...,<arrival ms>``) it has not read yet. A line is *visible* at
the poll that first reads it; its latency is that poll's time minus its arrival stamp, so a
latency is late by up to one poll interval (10 ms on average).

- ``--sink rename`` (lockgate's and Flink's FileSink): a file appears complete, by rename, when
  the sink publishes or commits it; it is read once.
- ``--sink spark`` (Spark's file sink): part files are written in place under their final
  names while the micro-batch runs, and a batch is committed by its entry in
  ``_spark_metadata/<batch>`` (the file sink's log, which Spark's readers use). Lines are read
  as they are written (*visible*), and a file's lines are *committed* at the poll that first
  finds the file in the log.

Only events whose arrival falls in the measured window count: after ``--warmup-seconds``
(discarded: the job's first epochs or batches, JIT and caches), for ``--seconds``. The
feeder keeps feeding after the window, so that the window's last events meet the same load
as the others, until every measured event's result has been seen by every rule, or
``--drain-seconds`` after the window (then the events not seen count as infinitely late: a
percentile that falls among them is ``inf``).

The last line printed is one JSON object: the feed (events, seconds, rate, measured events,
files written late) and per rule (``visible``, and ``committed`` with ``--sink spark``) the
events seen and the p50, p99 and max latency in milliseconds (nearest rank over the measured
events).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import threading
import time
from collections import Counter
from urllib.parse import unquote, urlparse

LATE_FILE_MS = 50  # a file written this much after it was due counts as late


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--rate", type=int, required=True, help="events per second")
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--file-interval-ms", type=int, default=100)
    parser.add_argument("--warmup-seconds", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--drain-seconds", type=float, default=30.0)
    parser.add_argument("--poll-ms", type=int, default=20)
    parser.add_argument("--sink", choices=("rename", "spark"), default="rename")
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args(argv)


class Feeder(threading.Thread):
    def __init__(self, args: argparse.Namespace, start: float):
        super().__init__(name="feeder", daemon=True)
        self.directory = args.input
        self.interval = args.file_interval_ms / 1000
        self.per_file = args.rate * self.interval
        self.start_s = start
        self.window = (
            int((start + args.warmup_seconds) * 1000),
            int((start + args.warmup_seconds + args.seconds) * 1000),
        )
        self.rng = random.Random(args.seed)
        self.keys = [str(key) for key in range(args.keys)]
        self.stop = threading.Event()
        self.window_fed = threading.Event()  # every file of the window is written
        self.events = 0
        self.measured = 0
        self.files = 0
        self.late_files = 0
        self.last_write = start
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._feed()
        except BaseException as error:  # reported by the main thread
            self.error = error
            self.window_fed.set()

    def _feed(self) -> None:
        number = 0
        while not self.stop.is_set():
            due = self.start_s + number * self.interval
            delay = due - time.time()
            if delay > 0 and self.stop.wait(delay):
                return
            lines = round((number + 1) * self.per_file) - round(number * self.per_file)
            stamp = int(time.time() * 1000)
            if stamp - due * 1000 > LATE_FILE_MS:
                self.late_files += 1
            if stamp >= self.window[1]:
                self.window_fed.set()
            suffix = f",{stamp}\n"
            content = suffix.join(self.rng.choices(self.keys, k=lines)) + suffix
            name = f"arrivals-{number:07d}.txt"
            hidden = os.path.join(self.directory, f".{name}.tmp")
            with open(hidden, "w") as handle:
                handle.write(content)
            os.rename(hidden, os.path.join(self.directory, name))
            self.last_write = time.time()
            self.events += lines
            if self.window[0] <= stamp < self.window[1]:
                self.measured += lines
            self.files += 1
            number += 1


class Rule:
    """Latencies of the measured events under one visibility rule."""

    def __init__(self, window: tuple[int, int]):
        self.window = window
        self.latencies: Counter[int] = Counter()
        self.seen = 0

    def add(self, arrivals: Counter[int], now_ms: int) -> None:
        low, high = self.window
        for arrival, count in arrivals.items():
            if low <= arrival < high:
                self.latencies[now_ms - arrival] += count
                self.seen += count

    def figures(self, measured: int) -> dict[str, float | int]:
        result: dict[str, float | int] = {"seen": self.seen}
        ranked = sorted(self.latencies.items())
        for name, fraction in (("p50_ms", 0.5), ("p99_ms", 0.99), ("max_ms", 1.0)):
            rank = max(1, math.ceil(fraction * measured))
            result[name] = _at_rank(ranked, rank)
        return result


def _at_rank(ranked: list[tuple[int, int]], rank: int) -> float:
    total = 0
    for latency, count in ranked:
        total += count
        if total >= rank:
            return float(latency)
    return math.inf


def _arrivals(data: bytes) -> Counter[int]:
    """Arrival stamps of complete output lines ``...,<arrival ms>``."""
    found: Counter[int] = Counter()
    for line in data.split(b"\n"):
        if line:
            found[int(line[line.rfind(b",") + 1 :])] += 1
    return found


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))


class Watcher:
    """Reads the output directory's new complete lines at every poll."""

    def __init__(self, directory: str, sink: str, window: tuple[int, int]):
        self.directory = directory
        self.spark = sink == "spark"
        self.visible = Rule(window)
        self.committed = Rule(window) if self.spark else None
        self.offsets: dict[str, int] = {}  # files still being read, by path
        self.done: set[str] = set()  # files read to their end for good
        self.pending: dict[str, Counter[int]] = {}  # spark: arrivals of uncommitted files
        self.commit_paths: set[str] = set()  # spark: files the sink's log lists
        self.log_entries: set[str] = set()  # spark: log files read

    def poll(self) -> None:
        now_ms = int(time.time() * 1000)
        for path in self._files():
            if path in self.done:
                continue
            arrivals = self._read_new(path)
            if arrivals:
                self.visible.add(arrivals, now_ms)
                if self.spark:
                    self.pending.setdefault(path, Counter()).update(arrivals)
            if not self.spark:
                self.done.add(path)  # published by rename: complete when it appears
        if self.spark:
            self._commits(now_ms)

    def _files(self) -> list[str]:
        found = []
        for root, directories, names in os.walk(self.directory):
            directories[:] = [d for d in directories if not _hidden(d)]
            found.extend(os.path.join(root, name) for name in names if not _hidden(name))
        return found

    def _read_new(self, path: str) -> Counter[int]:
        offset = self.offsets.get(path, 0)
        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                data = handle.read()
        except FileNotFoundError:
            return Counter()
        end = data.rfind(b"\n") + 1
        if end == 0:
            return Counter()
        self.offsets[path] = offset + end
        return _arrivals(data[:end])

    def _commits(self, now_ms: int) -> None:
        log = os.path.join(self.directory, "_spark_metadata")
        if not os.path.isdir(log):
            return
        newly: list[str] = []
        for name in sorted(os.listdir(log)):
            if _hidden(name) or name in self.log_entries or name.endswith(".tmp"):
                continue
            self.log_entries.add(name)
            with open(os.path.join(log, name)) as handle:
                for line in handle:
                    if line.startswith("{"):
                        path = unquote(urlparse(json.loads(line)["path"]).path)
                        if path not in self.commit_paths:
                            self.commit_paths.add(path)
                            newly.append(path)
        for path in newly:
            arrivals = self.pending.pop(path, Counter())
            rest = self._read_new(path)  # a committed file is complete
            if rest:
                self.visible.add(rest, now_ms)
                arrivals.update(rest)
            assert self.committed is not None
            self.committed.add(arrivals, now_ms)
            self.done.add(path)
            self.offsets.pop(path, None)

    def rules(self) -> dict[str, Rule]:
        rules = {"visible": self.visible}
        if self.committed is not None:
            rules["committed"] = self.committed
        return rules


def run(args: argparse.Namespace) -> dict:
    start = time.time()
    feeder = Feeder(args, start)
    watcher = Watcher(args.output, args.sink, feeder.window)
    feeder.start()
    window_end = feeder.window[1] / 1000
    deadline = window_end + args.drain_seconds
    drained = False
    try:
        while True:
            polled = time.time()
            watcher.poll()
            if feeder.error is not None:
                raise feeder.error
            if feeder.window_fed.is_set() and all(
                rule.seen >= feeder.measured for rule in watcher.rules().values()
            ):
                drained = True
                break
            if polled >= deadline:
                break
            time.sleep(max(0.0, args.poll_ms / 1000 - (time.time() - polled)))
    finally:
        feeder.stop.set()
        feeder.join()
    return {
        "fed_events": feeder.events,
        "fed_seconds": round(feeder.last_write - start, 3),
        "measured_events": feeder.measured,
        "measured_rate": round(feeder.measured / args.seconds, 1),
        "late_files": feeder.late_files,
        "files": feeder.files,
        "drained": drained,
        "rules": {name: rule.figures(feeder.measured) for name, rule in watcher.rules().items()},
    }


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    result = run(args)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
