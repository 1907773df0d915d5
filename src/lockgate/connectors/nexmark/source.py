"""``NexmarkSource``: a bounded source of Nexmark events generated inside Spark tasks.

The events ``0 .. events - 1`` are cut into as many contiguous index ranges (splits) as the
source has subtasks when the job starts; a split's position is the index of the next event
to generate. The driver plans and checkpoints only positions: each reader generates its
range (``NexmarkGenerator.event`` is a pure function of the configuration and the index),
so a restore, at any parallelism, reads on from the checkpointed offsets.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lockgate.common.time import Duration
from lockgate.common.watermark_strategy import TimestampAssigner, WatermarkStrategy
from lockgate.connectors.nexmark.generator import BATCH, NexmarkConfig, NexmarkGenerator
from lockgate.connectors.offset_splits import ContiguousSplitEnumerator
from lockgate.core.source import Source, SplitAssignment, SplitProgress


class NexmarkSource(Source):
    """``events`` Nexmark events (``Person``, ``Auction`` and ``Bid`` records); the other
    keywords are ``NexmarkConfig``'s (rate, seed, out-of-order share, hot ratios, sizes)."""

    def __init__(self, events: int, **settings: Any):
        self.config = NexmarkConfig(events=events, **settings)
        self._generator: NexmarkGenerator | None = None  # built in each task

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_generator": None}

    def watermark_strategy(self) -> WatermarkStrategy:
        """Event time from ``date_time``, with watermarks that lag by the longest
        out-of-order delay: none of the source's events is late."""
        bound = Duration.of_millis(self.config.out_of_order_max_delay)
        return WatermarkStrategy.for_bounded_out_of_orderness(bound).with_timestamp_assigner(
            EventTime()
        )

    def create_enumerator(self, parallelism: int) -> NexmarkEnumerator:
        return NexmarkEnumerator(self.config.events, parallelism)

    def read(
        self, assignment: SplitAssignment, payload: Any, progress: dict[str, SplitProgress]
    ) -> Iterator[Any]:
        if self._generator is None:
            self._generator = NexmarkGenerator(self.config)
        stop = assignment.start + assignment.max_records
        for first in range(assignment.start, stop, BATCH):
            yield from self._generator.events(first, min(first + BATCH, stop))
        progress[assignment.split] = SplitProgress(stop, assignment.last)


class EventTime(TimestampAssigner):
    """A Nexmark event's ``date_time``."""

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value.date_time)


class NexmarkEnumerator(ContiguousSplitEnumerator):
    """Split i is the i-th of as many contiguous index ranges as the source had subtasks
    when it started; its position is the next event's index."""

    source_name = "nexmark"
