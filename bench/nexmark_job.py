"""What bench/nexmark.py's runs share on every system (lockgate, and PyFlink in
bench/peers/pyflink_nexmark.py), with no dependency on lockgate's Spark parts or PyFlink: the
events' settings, the timing of a run and its figures line.

A run is timed over its *record window* (as ``keyed_events``' for keyed_count): from the
first event the timestamp assigner (``TimedEventTime``) saw to the last output record the
final map (``CountedOutputs``, before the discarding sink) saw. The final map also counts
the outputs, so both systems' runs over the same events can be compared record for record.
The user code here is mixed into each system's base classes (``class
Assigner(TimedEventTime, TimestampAssigner)``).
"""

from __future__ import annotations

import re
import time

from keyed_events import write_mark

OUT_OF_ORDER_SHARE = 0.1  # of the events, up to OUT_OF_ORDER_MAX_DELAY_MS late
OUT_OF_ORDER_MAX_DELAY_MS = 1000  # and the watermarks lag by as much: no event is late
WARM_UP_EVENTS = 2000
FIGURES_LINE = re.compile(
    r"^nexmark query=(?P<query>\S+) system=(?P<system>\S+) events=(?P<events>\d+) "
    r"seconds=(?P<seconds>\S+) events_per_s=(?P<rate>\S+) events_per_s_per_core=\S+ "
    r"outputs=(?P<outputs>-?\d+) execute_s=\S+$"
)


def source_settings(rate: int) -> dict:
    """``NexmarkConfig``'s keywords (besides ``events``) of every run: ``rate`` events per
    second of event time, 10% of them up to 1 s out of order."""
    return {
        "events_per_second": rate,
        "out_of_order_share": OUT_OF_ORDER_SHARE,
        "out_of_order_max_delay": OUT_OF_ORDER_MAX_DELAY_MS,
    }


class TimedEventTime:
    """The timestamp assigner: an event's ``date_time``. It notes when it sees its first
    record (a check per record; it has no ``close``) if given a marks directory."""

    def __init__(self, marks_dir: str | None = None):
        self.marks_dir = marks_dir
        self.first: float | None = None

    def extract_timestamp(self, value, record_timestamp):
        if self.first is None:
            self.first = time.time()
            if self.marks_dir is not None:
                write_mark(self.marks_dir, self.first, None, 0)
        return value.date_time


class CountedOutputs:
    """The final map: passes records through, counts them and notes the time of its first
    and last; with a marks directory it writes them on ``close``."""

    def __init__(self, marks_dir: str | None = None):
        self.marks_dir = marks_dir
        self.first = 0.0
        self.last = 0.0
        self.count = 0

    def map(self, value):
        self.last = now = time.time()
        if not self.count:
            self.first = now
        self.count += 1
        return value

    def close(self):
        if self.count and self.marks_dir is not None:
            write_mark(self.marks_dir, self.first, self.last, self.count)


def figures_line(
    query: str,
    system: str,
    events: int,
    seconds: float,
    cores: int,
    outputs: int,
    execute_s: float,
) -> str:
    """The line of one run (``nan`` figures and ``outputs=-1`` for a run that failed)."""
    rate = events / seconds if seconds > 0 else float("nan")
    return (
        f"nexmark query={query} system={system} events={events} seconds={seconds:.2f} "
        f"events_per_s={rate:.0f} events_per_s_per_core={rate / cores:.0f} "
        f"outputs={outputs} execute_s={execute_s:.2f}"
    )
