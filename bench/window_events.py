"""The events and user code of the windows benchmark, shared by ``windows.py`` (lockgate) and
``peers/pyflink_windows.py`` (PyFlink), with no dependency on lockgate, Spark or PyFlink so
that both can import it in their own interpreter.

Events: ``(key, ts_ms, value)``; event i happens at ``START_MS + i`` ms and is delayed by a
jitter drawn uniformly from ``[0, OUT_OF_ORDERNESS_MS)``: ``ts = START_MS + i - jitter``
(``START_MS`` keeps every timestamp positive). The key is one of ``keys`` strings, the value
an int in ``[0, 1000)``, both drawn from ``random.Random(seed)``.

No record is late under ``for_bounded_out_of_orderness(OUT_OF_ORDERNESS_S)``: a watermark is
at most the largest timestamp seen so far, minus the bound, minus 1 ms, so before event i it
is at most ``START_MS + (i - 1) - 2000 - 1``, below event i's smallest possible timestamp
``START_MS + i - 1999``. This holds for every split of the events into subsequences (a
source split, a subtask's share), so each system's combined watermark (the minimum over its
inputs) keeps it too.

The three jobs (``JOBS``), after ``assign_timestamps_and_watermarks`` and ``key_by(key)``:

- ``tumbling``: ``TumblingEventTimeWindows.of(Time.seconds(10))`` and ``reduce`` (``SumValues``:
  the first record's key and timestamp, the values summed); one output per (key, window).
- ``sliding``: ``SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(5))`` and
  ``aggregate`` (``CountSumAggregate``: (count, sum)); each event is in two windows.
- ``timers``: a KeyedProcessFunction counting each key's events in a ValueState and
  registering an event-time timer at ``ts + 1000`` per event; ``on_timer`` emits
  ``(key, count)``. One output per distinct (key, timer time).

Each ends in a map (``TimedLastRecord``) that notes the time of its first and last record,
counts them and sums their last field, then a discarding sink. ``expected`` gives the output
count of each job over the events (and the sum of last fields where it does not depend on
when watermarks arrive), so a run that lost or duplicated windows or timers is an error.

Record window (as in ``keyed_events``): from the first record a user function saw (the
timestamp assigner, ``TimedTimestamps``, and the key function, ``keyed_events.TimedKey``) to
the last record the final map saw. The final map writes ``keyed_events.write_mark`` with its
output count when it closes, and an ``outputs-*`` file (``write_outputs``) with the time of
its first record and its sum, read back by ``read_outputs``.

The classes here hold the user code only; each script mixes them into its system's base
classes (``class Assigner(TimedTimestamps, TimestampAssigner)``), so both run the same code.
"""

from __future__ import annotations

import math
import os
import random
import re
import time
import uuid
from dataclasses import dataclass

from keyed_events import write_mark

JOBS = ("tumbling", "sliding", "timers")

START_MS = 2_000
OUT_OF_ORDERNESS_S = 2
OUT_OF_ORDERNESS_MS = OUT_OF_ORDERNESS_S * 1000
TUMBLING_SIZE_S = 10
SLIDING_SIZE_S = 10
SLIDING_SLIDE_S = 5
TIMER_DELAY_MS = 1_000

# A peer's per-job line, parsed by windows.py.
RATE_LINE = re.compile(r"^windows job=(\S+) system=(\S+) events_per_s=(\S+)$")


def make_events(events: int, keys: int, seed: int = 42) -> list[tuple[str, int, int]]:
    """``events`` events ``(key, ts_ms, value)``; the same list for the same arguments."""
    rng = random.Random(seed)
    names = [f"key{number}" for number in range(keys)]
    jitter = OUT_OF_ORDERNESS_MS
    return [
        (names[rng.randrange(keys)], START_MS + i - rng.randrange(jitter), rng.randrange(1000))
        for i in range(events)
    ]


def sliding_starts(ts: int) -> list[int]:
    """Start times of the sliding windows an event at ``ts`` (>= 0) belongs to."""
    size, slide = SLIDING_SIZE_S * 1000, SLIDING_SLIDE_S * 1000
    last = ts - ts % slide
    return list(range(last, ts - size, -slide))


def expected(job: str, events: list[tuple[str, int, int]]) -> tuple[int, int | None]:
    """The number of outputs of ``job`` over ``events`` and the sum of their last fields
    (None for ``timers``, whose counts depend on when the watermark passes each timer)."""
    values = sum(value for _, _, value in events)
    if job == "tumbling":
        size = TUMBLING_SIZE_S * 1000
        return len({(key, ts // size) for key, ts, _ in events}), values
    if job == "sliding":
        windows = {(key, start) for key, ts, _ in events for start in sliding_starts(ts)}
        covered = sum(len(sliding_starts(ts)) for _, ts, _ in events)
        if covered != 2 * len(events):
            raise AssertionError("every event should be in exactly two sliding windows")
        return len(windows), 2 * values
    if job == "timers":
        return len({(key, ts + TIMER_DELAY_MS) for key, ts, _ in events}), None
    raise ValueError(f"unknown job {job!r}: use one of {', '.join(JOBS)}")


# User code, mixed into each system's base classes -------------------------------------------


class TimedTimestamps:
    """The timestamp assigner: the event's second field. Like ``keyed_events.TimedKey``, it
    notes when it sees its first record (it has no ``close``) if given a marks directory."""

    def __init__(self, marks_dir: str | None = None):
        self.marks_dir = marks_dir
        self.first: float | None = None

    def extract_timestamp(self, value, record_timestamp):
        if self.first is None:
            self.first = time.time()
            if self.marks_dir is not None:
                write_mark(self.marks_dir, self.first, None, 0)
        return value[1]


class SumValues:
    """``tumbling``'s ReduceFunction: the first record's key and timestamp, values summed."""

    def reduce(self, value1, value2):
        return value1[0], value1[1], value1[2] + value2[2]


class CountSumAggregate:
    """``sliding``'s AggregateFunction: (count, sum of values) of a window."""

    def create_accumulator(self):
        return 0, 0

    def add(self, value, accumulator):
        return accumulator[0] + 1, accumulator[1] + value[2]

    def get_result(self, accumulator):
        return accumulator

    def merge(self, acc_a, acc_b):
        return acc_a[0] + acc_b[0], acc_a[1] + acc_b[1]


class TimedLastRecord:
    """The final map: passes records through, notes the time of its first and last record,
    counts them and sums their last field; with a marks directory it writes them on
    ``close`` (``keyed_events.write_mark`` and ``write_outputs``)."""

    def __init__(self, marks_dir: str | None = None):
        self.marks_dir = marks_dir
        self.first = 0.0
        self.last = 0.0
        self.count = 0
        self.total = 0

    def map(self, value):
        self.last = now = time.time()
        if not self.count:
            self.first = now
        self.count += 1
        self.total += value[-1]
        return value

    def close(self):
        if self.count and self.marks_dir is not None:
            write_mark(self.marks_dir, self.first, self.last, self.count)
            write_outputs(self.marks_dir, self.first, self.total)


# Outputs of the final map ------------------------------------------------------------------


def write_outputs(directory: str, first: float, total: int) -> None:
    """One final-map instance's first output time and sum of last fields (beside its mark)."""
    name = f"outputs-{os.getpid()}-{uuid.uuid4().hex}"
    hidden = os.path.join(directory, f".{name}.tmp")
    with open(hidden, "w") as handle:
        handle.write(f"{first!r} {total}\n")
    os.rename(hidden, os.path.join(directory, name))


@dataclass(frozen=True)
class Outputs:
    first: float  # time.time() of the first record any final-map instance saw
    total: int  # sum of the last fields of the records they saw


def read_outputs(directory: str) -> Outputs:
    firsts: list[float] = []
    total = 0
    for name in os.listdir(directory):
        if name.startswith("outputs-"):
            with open(os.path.join(directory, name)) as handle:
                first, seen = handle.read().split()
            firsts.append(float(first))
            total += int(seen)
    return Outputs(min(firsts) if firsts else math.nan, total)


def check_outputs(job: str, count: int, total: int, expect: tuple[int, int | None]) -> None:
    """Raise if a run's outputs are not those ``expected`` gives."""
    outputs, expect_total = expect
    if count != outputs:
        raise RuntimeError(f"{job}: the final map saw {count} records, expected {outputs}")
    if expect_total is not None and total != expect_total:
        raise RuntimeError(f"{job}: the outputs' last fields sum to {total}, not {expect_total}")


def geometric_mean(values: list[float]) -> float:
    """Geometric mean; nan if any value is nan or not positive (or there are none)."""
    if not values or any(math.isnan(v) or v <= 0 for v in values):
        return math.nan
    return math.exp(sum(math.log(v) for v in values) / len(values))
