"""Processing-time timers by the executor's clock, planned by the driver's: an ack says in
how long its subtask next needs an epoch, so an executor whose clock is behind or ahead of
the driver's neither makes the driver run empty epochs nor leaves timers late."""

from __future__ import annotations

import pytest
from epoch_harness import HASHMAP, Cluster

from lockgate.common.clock import processing_time_ms
from lockgate.datastream import KeyedProcessFunction
from lockgate.runtime.subtaskhost import context, subtask_host


class EverySecond(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_processing_time_timer(
            ctx.timer_service().current_processing_time() + 1000
        )
        yield value


@pytest.mark.parametrize("skew_ms", [-3_000, 0, 3_000])
def test_the_driver_plans_timers_by_the_delay_its_executor_reports(cluster, monkeypatch, skew_ms):
    def executor_clock() -> int:
        return processing_time_ms() + skew_ms

    monkeypatch.setattr(subtask_host, "processing_time_ms", executor_clock)
    monkeypatch.setattr(context, "processing_time_ms", executor_clock)
    c: Cluster = cluster([(0, n) for n in range(4)], backend=HASHMAP, function=EverySecond())
    before = processing_time_ms()
    ack = c.epoch("w1")
    after = processing_time_ms()
    assert 0 < ack.next_timer_in_ms <= 1000
    due = c.state.next_processing_timer()
    # about a second from now by the driver's clock, whichever way the executor's is off
    assert before < due <= after + 1000
