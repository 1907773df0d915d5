"""Processing time: the wall clock in milliseconds since the epoch, as Flink's
``ProcessingTimeService`` gives it (timers, idleness, state TTL and the planner read it)."""

from __future__ import annotations

import time


def processing_time_ms() -> int:
    return time.time_ns() // 1_000_000
