"""``WatermarkStrategy`` and ``TimestampAssigner`` as in PyFlink.

A strategy says where a record's timestamp comes from (its ``TimestampAssigner``, else the
timestamp it already carries) and how watermarks follow the timestamps seen: bounded
out-of-orderness ``B`` gives ``max timestamp - B - 1`` (monotonous: ``B = 0``), and
``no_watermarks()`` none until the end of a bounded input. ``with_idleness`` lets an input
that has produced nothing for that long stop holding the watermark back. The runtime builds
the watermarks from it (``lockgate.runtime.subtaskhost.watermarks``).

Unlike PyFlink, ``with_idleness`` keeps the timestamp assigner (PyFlink's returns a strategy
without it, so records silently lose their timestamps), and ``from_source`` applies the
assigner (PyFlink ignores a Python assigner there), as Flink's Java API does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from lockgate.common.time import Duration
from lockgate.common.unsupported import unsupported

LONG_MIN = -(1 << 63)  # no watermark yet; also the timestamp of a record that has none
LONG_MAX = (1 << 63) - 1  # the end of event time: every timer and window fires


class TimestampAssigner:
    """Gives each record its event timestamp, in milliseconds."""

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        """The timestamp of ``value``; ``record_timestamp`` is the one it carries now
        (``-2**63`` when it has none)."""
        raise NotImplementedError


@dataclass
class WatermarkStrategy:
    """How a stream's timestamps and watermarks are generated (build one with the static
    methods). ``with_timestamp_assigner`` sets the assigner on this strategy, as PyFlink's
    does (code that does not use its result relies on that)."""

    #: watermark = max timestamp - out_of_orderness_ms - 1; None: no watermarks
    out_of_orderness_ms: int | None
    timestamp_assigner: TimestampAssigner | None = None
    idle_timeout_ms: int | None = None

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        return WatermarkStrategy(None)

    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        return WatermarkStrategy(0)

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: Duration) -> WatermarkStrategy:
        millis = _millis(max_out_of_orderness, "max_out_of_orderness")
        if millis < 0:
            raise ValueError(
                f"max_out_of_orderness must not be negative, got {max_out_of_orderness!r}"
            )
        return WatermarkStrategy(millis)

    def with_timestamp_assigner(self, timestamp_assigner: TimestampAssigner) -> WatermarkStrategy:
        if not callable(getattr(timestamp_assigner, "extract_timestamp", None)):
            raise TypeError(
                "with_timestamp_assigner needs a TimestampAssigner (an object with "
                f"extract_timestamp(value, record_timestamp)), got {timestamp_assigner!r}"
            )
        self.timestamp_assigner = timestamp_assigner
        return self

    def with_idleness(self, idle_timeout: Duration) -> WatermarkStrategy:
        millis = _millis(idle_timeout, "idle_timeout")
        if millis <= 0:
            raise ValueError(f"idle_timeout must be positive, got {idle_timeout!r}")
        return replace(self, idle_timeout_ms=millis)

    def with_watermark_alignment(self, *args: Any, **kwargs: Any) -> WatermarkStrategy:
        raise NotImplementedError(
            "watermark alignment is not supported by lockgate: sources read each epoch's "
            "planned input, so no split can run ahead of the others by more than one epoch"
        )

    def __repr__(self) -> str:
        if self.out_of_orderness_ms is None:
            kind = "no_watermarks"
        elif self.out_of_orderness_ms == 0:
            kind = "monotonous"
        else:
            kind = f"bounded_out_of_orderness={self.out_of_orderness_ms} ms"
        extras = []
        if self.timestamp_assigner is not None:
            extras.append(f"assigner={type(self.timestamp_assigner).__name__}")
        if self.idle_timeout_ms is not None:
            extras.append(f"idleness={self.idle_timeout_ms} ms")
        return f"WatermarkStrategy({', '.join([kind, *extras])})"


def _millis(duration: Any, what: str) -> int:
    if not isinstance(duration, Duration):
        raise TypeError(
            f"{what} must be a Duration (e.g. Duration.of_seconds(5)), got {duration!r}"
        )
    return duration.to_milliseconds()


def check_strategy(strategy: Any) -> None:
    if not isinstance(strategy, WatermarkStrategy):
        raise TypeError(
            "a WatermarkStrategy is required (e.g. WatermarkStrategy.for_monotonous_timestamps()), "
            f"got {strategy!r}"
        )


AssignerWithPeriodicWatermarksWrapper = unsupported(
    "AssignerWithPeriodicWatermarksWrapper",
    "WatermarkStrategy.for_bounded_out_of_orderness(...).with_timestamp_assigner(...)",
    __name__,
)
