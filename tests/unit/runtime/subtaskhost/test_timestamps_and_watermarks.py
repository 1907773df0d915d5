"""The assigner of ``assign_timestamps_and_watermarks``: batches and single records get the
same timestamps and watermark, and a bad timestamp names the record."""

from __future__ import annotations

import pytest

from lockgate.common.time import Duration
from lockgate.common.watermark_strategy import LONG_MIN, TimestampAssigner, WatermarkStrategy
from lockgate.runtime.errors import UserFunctionError
from lockgate.runtime.subtaskhost.context import RecordTimestamp
from lockgate.runtime.subtaskhost.operators import Operator, OperatorContext
from lockgate.runtime.subtaskhost.timestamps_and_watermarks import (
    TimestampsAndWatermarksOperator,
)


class Collect(Operator):
    def __init__(self, ctx: OperatorContext):
        super().__init__(ctx)
        self.seen: list[tuple[object, int]] = []

    def process(self, value: object) -> None:
        self.seen.append((value, self.ctx.record.value))


class Second(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def _assigner(batches: bool, assigner: TimestampAssigner | None = None):
    ctx = OperatorContext("ts", "ts-uid", 0, 1, None, None, [], RecordTimestamp(), epoch=4)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(10)
    ).with_timestamp_assigner(assigner or Second())
    operator = TimestampsAndWatermarksOperator(ctx, strategy)
    collect = Collect(ctx)
    operator.emit = collect.process
    if batches:
        operator.targets = [collect]
    return operator, collect


@pytest.mark.parametrize("batches", [False, True])
def test_batches_and_records_get_the_same_timestamps_and_watermark(batches):
    operator, collect = _assigner(batches)
    values = [("a", 50), ("b", 20), ("c", 70), ("d", 60)]
    operator.process_batch(values[:2])
    operator.process_batch(values[2:], [1, 2])  # timestamps the records had are replaced
    assert collect.seen == [(v, v[1]) for v in values]
    assert operator.ctx.record.value == LONG_MIN
    assert operator.advance_watermark(LONG_MIN, False) == (59, False)


@pytest.mark.parametrize("batches", [False, True])
def test_a_timestamp_that_is_not_an_int_names_the_record(batches):
    class Text(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return str(value[1])

    operator, _ = _assigner(batches, Text())
    with pytest.raises(UserFunctionError) as failure:
        operator.process_batch([("a", 5)])
    message = str(failure.value)
    assert "'ts' (uid 'ts-uid', subtask 0/1, epoch 4)" in message
    assert "('a', 5)" in message and "not an int" in message


def test_an_assigner_with_idleness_asks_for_an_epoch_when_it_would_become_idle():
    operator, _ = _assigner(batches=True)
    assert operator.next_processing_time() is None  # no idleness configured
    operator.strategy = operator.strategy.with_idleness(Duration.of_millis(60_000))
    operator.process_batch([("a", 5)])
    operator.advance_watermark(LONG_MIN, False)
    due = operator.next_processing_time()
    assert due is not None and due == operator.last_active + 60_000
    operator.last_active -= 60_000  # as if the timeout has passed
    assert operator.advance_watermark(LONG_MIN, False) == (5 - 10 - 1, True)
    assert operator.next_processing_time() is None  # idle already: nothing to wait for
