"""An epoch fires the processing-time timers due at the driver's clock when it planned the
epoch, even where the executor's own clock is behind it."""

from __future__ import annotations

from epoch_harness import HASHMAP, Cluster

from lockgate.datastream import KeyedProcessFunction

FAR = 10**13  # milliseconds: centuries ahead of any executor's clock


class TimerFarAhead(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_processing_time_timer(FAR)
        yield ("record", value[1])

    def on_timer(self, timestamp, ctx):
        yield ("timer", ctx.get_current_key(), timestamp)


def test_timers_due_at_the_driver_s_time_fire_on_an_executor_whose_clock_is_behind(cluster):
    c: Cluster = cluster([(0, n) for n in range(4)], backend=HASHMAP, function=TimerFarAhead())
    c.epoch("w1")
    assert c.state.next_processing_timer() == FAR
    c.clock = FAR  # the driver's clock says the timer is due; the executor's does not
    ack = c.epoch("w1")
    assert ack.next_timer_ms is None  # fired
    assert c.state.next_processing_timer() is None
