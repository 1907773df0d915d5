"""WatermarkStrategy's builders, as PyFlink's behave."""

from __future__ import annotations

import pytest

from lockgate.common import Duration, WatermarkStrategy
from lockgate.common.watermark_strategy import TimestampAssigner


class First(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[0]


def test_with_timestamp_assigner_sets_it_on_the_strategy_as_pyflink_does():
    strategy = WatermarkStrategy.for_monotonous_timestamps()
    assigner = First()
    assert strategy.with_timestamp_assigner(assigner) is strategy
    assert strategy.timestamp_assigner is assigner  # the result need not be used


def test_with_idleness_keeps_the_assigner_in_a_new_strategy():
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(2))
    strategy.with_timestamp_assigner(First())
    idle = strategy.with_idleness(Duration.of_millis(500))
    assert idle is not strategy and strategy.idle_timeout_ms is None
    assert (idle.out_of_orderness_ms, idle.idle_timeout_ms) == (2000, 500)
    assert isinstance(idle.timestamp_assigner, First)


def test_bad_arguments_fail_at_the_call():
    with pytest.raises(TypeError, match="needs a TimestampAssigner"):
        WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda v, t: 1)
    with pytest.raises(ValueError, match="must not be negative"):
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(-1))
    with pytest.raises(ValueError, match="must be positive"):
        WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_millis(0))
    with pytest.raises(NotImplementedError, match="watermark alignment"):
        WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment("g")
