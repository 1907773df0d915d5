"""Watermarks inside a subtask: how they are generated, combined and sent on.

When a watermark advances (the contract, see docs/concepts/event-time.md): during epoch n
every operator sees the watermark it reached at the end of epoch n-1, so a record is late
exactly when its timestamp is at or below that watermark. At the end of epoch n a subtask
combines the watermarks its input channels sent with their end-of-epoch markers (the
minimum over channels, idle ones left out, as Flink's ``StatusWatermarkValve``), hands the
result through its chain (each operator fires its due timers before the next one moves
on), and sends its own watermark to the next stage with its markers. A Spark stage
boundary delivers every sender's marker in the same epoch, so a watermark crosses the whole
job in one epoch, and output depends on the epoch boundaries only through what is late.

Sources generate watermarks per split (``SplitWatermarks``): ``max timestamp - B - 1`` of
each split read so far, the minimum over the subtask's splits that are neither finished
nor idle; at the end of a bounded input every source sends ``LONG_MAX``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lockgate.common.records import Record
from lockgate.common.watermark_strategy import LONG_MIN

CHANNEL_END_FORMAT = "lockgate-channel-end"
CHANNEL_END_VERSION = 1


@dataclass(frozen=True)
class ChannelEnd(Record, format=CHANNEL_END_FORMAT, version=CHANNEL_END_VERSION):
    """What a channel's end-of-epoch marker tells the receiver: the sender's watermark, and
    whether the sender is idle (its watermark then holds nobody back)."""

    watermark: int
    idle: bool


def combine(inputs: Iterable[tuple[int, bool]], last: int) -> tuple[int, bool]:
    """The watermark and idleness of an operator whose inputs are ``inputs`` ((watermark,
    idle) each) and whose watermark is ``last``; it never goes back.

    Flink's valve: the minimum over active inputs that have caught up with ``last`` (an
    input that comes back from idleness behind it holds nobody back until it catches up);
    when every input is idle, the highest watermark among them, and idle."""
    inputs = list(inputs)
    if not inputs:
        return last, True
    active = [watermark for watermark, idle in inputs if not idle]
    if not active:
        return max(last, max(watermark for watermark, _ in inputs)), True
    aligned = [watermark for watermark in active if watermark >= last]
    return (max(last, min(aligned)) if aligned else last), False


def bounded_watermark(max_timestamp: int, out_of_orderness_ms: int | None) -> int:
    """The watermark after records up to ``max_timestamp``: Flink's bounded
    out-of-orderness (``None``: a strategy without watermarks)."""
    if out_of_orderness_ms is None or max_timestamp == LONG_MIN:
        return LONG_MIN
    return max(LONG_MIN, max_timestamp - out_of_orderness_ms - 1)


SPLITS_FORMAT = "lockgate-split-watermarks"
SPLITS_VERSION = 1


@dataclass(frozen=True)
class SplitWatermarksState(Record, format=SPLITS_FORMAT, version=SPLITS_VERSION):
    """The operator state of a source's ``SplitWatermarks``."""

    max_timestamps: dict[str, int]  # split -> the highest timestamp read of it


class SplitWatermarks:
    """The watermark generators of a source subtask, one per split it reads.

    A split counts from its first assignment until the reader reports it finished (Flink
    releases a finished split's output). It is idle when the strategy has an idle timeout
    and the split has produced no record for that long; idleness is measured on the
    processing-time clock, so it is the one part of event time that depends on timing.
    """

    def __init__(self, out_of_orderness_ms: int | None, idle_timeout_ms: int | None):
        self.out_of_orderness_ms = out_of_orderness_ms
        self.idle_timeout_ms = idle_timeout_ms
        self.max_timestamps: dict[str, int] = {}
        self.last_active: dict[str, float] = {}  # processing time (ms) of the last record
        self.ending: dict[str, int] = {}  # splits finished in this epoch: max timestamp

    def read(self, split: str, max_timestamp: int, records: int, now_ms: float) -> None:
        """``records`` records of ``split`` were read, the latest at ``max_timestamp``."""
        if self.max_timestamps.get(split, LONG_MIN) < max_timestamp:
            self.max_timestamps[split] = max_timestamp
        else:
            self.max_timestamps.setdefault(split, LONG_MIN)
        if records or split not in self.last_active:
            self.last_active[split] = now_ms

    def finished(self, split: str) -> None:
        # It still counts in this epoch's watermark (its last records were read in it, and
        # a file is often read whole in one epoch); ``current`` then lets it go.
        self.last_active.pop(split, None)
        max_timestamp = self.max_timestamps.pop(split, LONG_MIN)
        if max_timestamp > LONG_MIN:
            self.ending[split] = max_timestamp

    def current(self, now_ms: float) -> tuple[int, bool]:
        """(watermark, idle) over the live splits and those finished since the last call;
        no such split counts as idle."""
        timeout = self.idle_timeout_ms
        active = [
            bounded_watermark(max_ts, self.out_of_orderness_ms)
            for split, max_ts in self.max_timestamps.items()
            if timeout is None or now_ms - self.last_active[split] < timeout
        ]
        active.extend(bounded_watermark(t, self.out_of_orderness_ms) for t in self.ending.values())
        self.ending.clear()
        if not active:
            return LONG_MIN, True
        return min(active), False

    def next_idle(self, now_ms: float) -> int | None:
        """When the next live split that is not idle yet becomes idle (None: never)."""
        if self.idle_timeout_ms is None:
            return None
        due = [t + self.idle_timeout_ms for t in self.last_active.values()]
        later = [int(t) for t in due if t > now_ms]
        return min(later) if later else None

    def snapshot(self) -> Any:
        return SplitWatermarksState(self.max_timestamps).to_json()

    def restore(self, raw: Any, where: str, now_ms: float) -> None:
        stamps = SplitWatermarksState.from_json(raw, where).max_timestamps
        self.max_timestamps = dict(stamps)
        # idleness counts again from the restore, as in Flink
        self.last_active = dict.fromkeys(stamps, now_ms)
