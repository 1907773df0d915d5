"""The events of the keyed-count benchmark, with no dependency on lockgate or Spark, so that
the peer scripts (bench/peers/) can generate the same events in another interpreter.

Also the record window every system of keyed_count.py is timed by: the time from the first
record any instance of the job's user functions saw to the last record the keyed function
saw. Each function instance notes its own times and writes them to a *marks* directory (a
file per instance, written under a hidden name and renamed, so that a reader never sees half
of one); ``read_window`` combines them.
"""

from __future__ import annotations

import os
import random
import time
import uuid
from dataclasses import dataclass


def make_events(events: int, keys: int, seed: int = 42) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [(rng.randrange(keys), rng.randrange(1000)) for _ in range(events)]


# Record window ---------------------------------------------------------------------------------


def write_mark(directory: str, first: float, last: float | None, count: int) -> None:
    """One function instance's marks: the ``time.time()`` of the first record it saw, of the
    last one (None for a key function, which notes only its first), and how many records
    its keyed function processed."""
    name = f"mark-{os.getpid()}-{uuid.uuid4().hex}"
    hidden = os.path.join(directory, f".{name}.tmp")
    with open(hidden, "w") as handle:
        handle.write(f"{first!r} {'-' if last is None else repr(last)} {count}\n")
    os.rename(hidden, os.path.join(directory, name))


@dataclass(frozen=True)
class RecordWindow:
    first: float  # time.time() of the first record a user function saw
    last: float  # time.time() of the last record the keyed function saw
    count: int  # records the keyed function instances processed, summed

    @property
    def seconds(self) -> float:
        return self.last - self.first


def read_window(directory: str) -> RecordWindow:
    """The window of every mark in ``directory``."""
    firsts: list[float] = []
    lasts: list[float] = []
    count = 0
    for name in os.listdir(directory):
        if not name.startswith("mark-"):
            continue
        with open(os.path.join(directory, name)) as handle:
            first, last, seen = handle.read().split()
        firsts.append(float(first))
        if last != "-":
            lasts.append(float(last))
        count += int(seen)
    if not firsts or not lasts:
        raise RuntimeError(f"no record marks in {directory}: did the job's functions close?")
    return RecordWindow(min(firsts), max(lasts), count)


class TimedKey:
    """The job's key function: the event's first field. It notes when it sees its first
    record (a check per record, and one small file per instance) if given a marks directory.

    A plain callable with ``get_key`` as well: lockgate and PyFlink accept either.
    """

    def __init__(self, marks_dir: str | None = None):
        self.marks_dir = marks_dir
        self.first: float | None = None

    def get_key(self, value):
        if self.first is None:
            self._saw_first()
        return value[0]

    def __call__(self, value):
        if self.first is None:
            self._saw_first()
        return value[0]

    def _saw_first(self) -> None:
        self.first = time.time()
        if self.marks_dir is not None:
            write_mark(self.marks_dir, self.first, None, 0)
