"""``WatermarkStrategy`` and ``TimestampAssigner`` as in PyFlink.

Accepted and carried on the source; event time (watermarks, timers) is built on top of them
by a later part of lockgate.
"""

from __future__ import annotations

from typing import Any

from lockgate.common.time import Duration


class TimestampAssigner:
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        raise NotImplementedError


class WatermarkStrategy:
    def __init__(self, kind: str, max_out_of_orderness: Duration | None = None):
        self.kind = kind
        self.max_out_of_orderness = max_out_of_orderness
        self.timestamp_assigner: TimestampAssigner | None = None
        self.idleness: Duration | None = None

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        return WatermarkStrategy("no_watermarks")

    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        return WatermarkStrategy("monotonous", Duration(0))

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: Duration) -> WatermarkStrategy:
        return WatermarkStrategy("bounded_out_of_orderness", max_out_of_orderness)

    def with_timestamp_assigner(self, timestamp_assigner: TimestampAssigner) -> WatermarkStrategy:
        self.timestamp_assigner = timestamp_assigner
        return self

    def with_idleness(self, idle_timeout: Duration) -> WatermarkStrategy:
        self.idleness = idle_timeout
        return self

    def __repr__(self) -> str:
        return f"WatermarkStrategy({self.kind})"
