"""Where timestamps and watermarks enter a job: a source read with a ``WatermarkStrategy``
(per split, ``SourceOperator``) and ``assign_timestamps_and_watermarks`` (per subtask,
``TimestampsAndWatermarksOperator``), as in Flink.

Both give each record the timestamp their strategy's assigner extracts (or keep the one it
has), and at the end of an epoch emit the watermark of the timestamps seen so far. What they
have seen is operator state, so a restore continues from the watermark of the checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from numbers import Integral
from typing import Any

from lockgate.common.clock import processing_time_ms
from lockgate.common.records import Record
from lockgate.common.type_conversion import Converter, RecordTypeError
from lockgate.common.watermark_strategy import LONG_MAX, LONG_MIN
from lockgate.core.source import SplitProgress
from lockgate.runtime.subtaskhost.operators import Operator, OperatorContext
from lockgate.runtime.subtaskhost.watermarks import SplitWatermarks, bounded_watermark


class _Assigning(Operator):
    """Runs a strategy's ``TimestampAssigner``, checking what it returns."""

    def __init__(self, ctx: OperatorContext, strategy: Any):
        super().__init__(ctx)
        self.strategy = strategy
        assigner = strategy.timestamp_assigner if strategy is not None else None
        self.extract: Callable[[Any, int], Any] | None = (
            assigner.extract_timestamp if assigner is not None else None
        )

    def timestamp_of(self, value: Any, record_timestamp: int) -> int:
        try:
            timestamp = self.extract(value, record_timestamp)  # type: ignore[misc]
        except Exception as exc:
            raise self.failure(exc, value, "the timestamp assigner") from exc
        if type(timestamp) is not int:
            if not isinstance(timestamp, Integral) or isinstance(timestamp, bool):
                raise self.failure(
                    TypeError(
                        f"extract_timestamp returned {timestamp!r} of type "
                        f"{type(timestamp).__name__}, not an int (milliseconds)"
                    ),
                    value,
                    "the timestamp assigner",
                )
            timestamp = int(timestamp)
        if not LONG_MIN <= timestamp <= LONG_MAX:
            raise self.failure(
                ValueError(f"extract_timestamp returned {timestamp}, outside the 64-bit range"),
                value,
                "the timestamp assigner",
            )
        return timestamp


@dataclass(frozen=True)
class TimestampsState(Record, format="lockgate-timestamps-and-watermarks", version=1):
    """The operator state of a ``TimestampsAndWatermarksOperator``."""

    max_timestamp: int


class TimestampsAndWatermarksOperator(_Assigning):
    """``assign_timestamps_and_watermarks``: watermarks from the timestamps this subtask saw,
    whatever its input's watermarks (except the end of input, which passes through)."""

    one_to_one = True

    def __init__(self, ctx: OperatorContext, strategy: Any):
        super().__init__(ctx, strategy)
        self.max_timestamp = LONG_MIN
        self.records = 0  # in this epoch (for idleness)
        self.last_active = processing_time_ms()
        # Set by the subtask when the operator has no side outputs to route: batches then
        # go on to these as batches.
        self.targets: list[Operator] | None = None

    def process_batch(self, values: Any, timestamps: list[int] | None = None) -> None:
        if self.targets is None:
            super().process_batch(values, timestamps)
            return
        if self.extract is None:
            stamps = timestamps if timestamps is not None else [LONG_MIN] * len(values)
        else:
            timestamp_of = self.timestamp_of
            given = timestamps if timestamps is not None else repeat(LONG_MIN)
            stamps = [timestamp_of(v, t) for v, t in zip(values, given, strict=False)]
        if stamps:
            self.max_timestamp = max(self.max_timestamp, max(stamps))
        self.records += len(values)
        for target in self.targets:
            target.records_in += len(values)  # it may have other inputs: see Operator
            target.process_batch(values, stamps)

    def process(self, value: Any) -> None:
        record = self.ctx.record
        original = record.value
        timestamp = original if self.extract is None else self.timestamp_of(value, original)
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        self.records += 1
        record.value = timestamp
        self.emit(value)
        record.value = original

    def advance_watermark(self, watermark: int, idle: bool) -> tuple[int, bool]:
        if watermark == LONG_MAX:
            self.watermark = LONG_MAX
            return LONG_MAX, False
        if self.ctx.batch:  # BATCH ignores watermark generators: event time ends at once
            return self.watermark, False
        now = processing_time_ms()
        if self.records:
            self.last_active = now
            self.records = 0
        timeout = self.strategy.idle_timeout_ms
        generated = bounded_watermark(self.max_timestamp, self.strategy.out_of_orderness_ms)
        self.watermark = max(self.watermark, generated)
        return self.watermark, timeout is not None and now - self.last_active >= timeout

    def next_processing_time(self) -> int | None:
        # An input that stops is idle after the timeout, also when no epoch would run.
        timeout = self.strategy.idle_timeout_ms
        if timeout is None or self.watermark == LONG_MAX:
            return None
        due = int(self.last_active + timeout)
        return due if due > processing_time_ms() else None

    def snapshot_state(self) -> Any:
        return TimestampsState(self.max_timestamp).to_json()

    def restore_state(self, state: Any) -> None:
        where = f"the state of operator '{self.ctx.name}' (uid '{self.ctx.uid}')"
        self.max_timestamp = TimestampsState.from_json(state, where).max_timestamp


class SourceOperator(_Assigning):
    """The source of a chain: hands what its reader reads to the chain in chunks, with the
    timestamps its strategy assigns, and keeps a watermark per split (``SplitWatermarks``).

    A source without a strategy (``from_collection``) emits records without timestamps and
    no watermark until the end of input, as Flink's legacy sources. It takes (numRecordsIn)
    and emits what it reads."""

    one_to_one = True

    def __init__(self, ctx: OperatorContext, strategy: Any, convert: Converter | None = None):
        super().__init__(ctx, strategy)
        self.convert = convert  # to the source's declared type_info (None: none declared)
        self.splits = (
            SplitWatermarks(strategy.out_of_orderness_ms, strategy.idle_timeout_ms)
            if strategy is not None
            else None
        )
        self.targets: list[Operator] = []  # what the chunks go to (set by the subtask)

    def process(self, value: Any) -> None:
        raise TypeError(f"source '{self.ctx.name}' takes its records from its reader")

    def emit_chunk(
        self, split: str, values: list[Any], timestamps: list[int] | None = None
    ) -> None:
        """Hand ``values`` read from ``split`` to the chain, with the ``timestamps`` they
        have in their source (a timestamped source's) or their strategy's assigner gives."""
        if self.convert is not None:
            values = self._converted(self.convert, values)
        if self.splits is not None:
            max_timestamp = LONG_MIN
            if self.extract is not None:
                given = timestamps if timestamps is not None else repeat(LONG_MIN)
                timestamp_of = self.timestamp_of
                timestamps = [timestamp_of(v, t) for v, t in zip(values, given, strict=False)]
            if timestamps:
                max_timestamp = max(timestamps)
            self.splits.read(split, max_timestamp, len(values), processing_time_ms())
        self.records_in += len(values)
        for target in self.targets:
            target.records_in += len(values)  # it may have other inputs: see Operator
            target.process_batch(values, timestamps)

    def _converted(self, convert: Converter, values: list[Any]) -> list[Any]:
        converted = []
        for value in values:
            try:
                converted.append(convert(value))
            except RecordTypeError as exc:
                raise self.failure(exc, value, "its type_info") from exc
        return converted

    def split_read(self, split: str, progress: SplitProgress | None) -> None:
        """The epoch's assignment of ``split`` is read; ``progress`` says where it stopped."""
        if self.splits is None:
            return
        if progress is not None and progress.finished:
            self.splits.finished(split)
        else:
            self.splits.read(split, LONG_MIN, 0, processing_time_ms())

    def advance_watermark(self, watermark: int, idle: bool) -> tuple[int, bool]:
        """``watermark`` is LONG_MAX at the end of the input (it has no other input)."""
        if watermark == LONG_MAX:
            self.watermark = LONG_MAX
            return LONG_MAX, False
        if self.splits is None or self.ctx.batch:
            return self.watermark, False
        generated, idle = self.splits.current(processing_time_ms())
        self.watermark = max(self.watermark, generated)
        return self.watermark, idle

    def next_processing_time(self) -> int | None:
        if self.splits is None or self.watermark == LONG_MAX:
            return None
        return self.splits.next_idle(processing_time_ms())

    def snapshot_state(self) -> Any:
        return self.splits.snapshot() if self.splits is not None else None

    def restore_state(self, state: Any) -> None:
        if self.splits is not None:
            where = f"the split watermarks of source '{self.ctx.name}' (uid '{self.ctx.uid}')"
            self.splits.restore(state, where, processing_time_ms())
