"""Continuous triggers fire every interval within a window, scheduling each next firing with
``register_next_fire_timestamp`` (PyFlink's method), at the window's end at the latest."""

from __future__ import annotations

from lockgate.common import Time
from lockgate.datastream.window import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    TimeWindow,
    TriggerResult,
)


class ReducingValue:
    def __init__(self, reduce):
        self.reduce = reduce
        self.value = None

    def get(self):
        return self.value

    def add(self, value):
        self.value = value if self.value is None else self.reduce(self.value, value)

    def clear(self):
        self.value = None


class Context:
    def __init__(self, watermark=-1, now=0):
        self.states = {}
        self.event_timers = []
        self.processing_timers = []
        self.watermark = watermark
        self.now = now

    def get_partitioned_state(self, descriptor):
        return self.states.setdefault(descriptor.name, ReducingValue(descriptor.reduce))

    def get_current_watermark(self):
        return self.watermark

    def get_current_processing_time(self):
        return self.now

    def register_event_time_timer(self, time):
        self.event_timers.append(time)

    def register_processing_time_timer(self, time):
        self.processing_timers.append(time)


def test_event_time_fires_every_interval_up_to_the_window_end():
    trigger = ContinuousEventTimeTrigger.of(Time.milliseconds(10))
    window = TimeWindow(0, 25)
    ctx = Context()
    assert trigger.on_element("x", 3, window, ctx) is TriggerResult.CONTINUE
    assert ctx.event_timers == [24, 10]  # the window's end, then the next interval
    assert trigger.on_event_time(10, window, ctx) is TriggerResult.FIRE
    assert trigger.on_event_time(20, window, ctx) is TriggerResult.FIRE
    assert ctx.event_timers == [24, 10, 20, 24]  # capped at the window's end
    assert trigger.on_event_time(15, window, ctx) is TriggerResult.CONTINUE


def test_processing_time_starts_at_the_next_interval_after_now():
    trigger = ContinuousProcessingTimeTrigger.of(Time.milliseconds(100))
    window = TimeWindow(0, 1000)
    ctx = Context(now=250)
    trigger.on_element("x", 0, window, ctx)
    assert ctx.processing_timers == [300]
    assert trigger.on_processing_time(300, window, ctx) is TriggerResult.FIRE
    assert ctx.processing_timers == [300, 400]


def test_register_next_fire_timestamp_is_pyflinks_helper():
    trigger = ContinuousEventTimeTrigger.of(Time.milliseconds(10))
    ctx = Context()
    state = ReducingValue(min)
    trigger.register_next_fire_timestamp(7, TimeWindow(0, 100), ctx, state)
    assert state.get() == 17 and ctx.event_timers == [17]
    trigger.register_next_fire_timestamp(95, TimeWindow(0, 100), ctx, state)
    assert ctx.event_timers == [17, 99] and state.get() == 17  # the earliest is kept
