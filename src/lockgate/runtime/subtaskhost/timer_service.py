"""Flink's ``InternalTimerService``: the timers of one keyed operator, per key and namespace.

Timers are keyed state (``lockgate.state.timer_queues``): an event-time and a processing-time
queue in the operator's keyed backend, checkpointed and restored with it. They fire at the
end of an epoch: event-time timers up to the operator's new watermark, processing-time
timers up to the clock, each in timestamp order with its key made current; a firing that
registers a timer that is already due fires it in the same pass.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral
from typing import Any, NoReturn

from lockgate.common.watermark_strategy import LONG_MAX, LONG_MIN
from lockgate.state.timer_queues import TimerQueue, timer_state_name

# Called for each firing timer: (timestamp, key, namespace)
OnTimer = Callable[[int, Any, Any], None]


def _checked(timestamp: int) -> int:
    if type(timestamp) is not int:  # the common case, one check
        if not isinstance(timestamp, Integral) or isinstance(timestamp, bool):
            raise TypeError(
                f"a timer's timestamp must be an int (milliseconds), got {timestamp!r} of type "
                f"{type(timestamp).__name__}"
            )
        timestamp = int(timestamp)
    if not LONG_MIN <= timestamp <= LONG_MAX:
        raise ValueError(f"a timer's timestamp must fit in 64 bits, got {timestamp}")
    return timestamp


def _no_current_key() -> NoReturn:
    # Before the first record (open()) no key is current.
    raise RuntimeError(
        "a timer needs a current key: register and delete timers in process_element or on_timer"
    )


class InternalTimerService:
    def __init__(self, backend: Any, name: str):
        self.key_context = backend.ctx
        self.event: TimerQueue = backend.timer_queue(timer_state_name(name, "event"))
        self.processing: TimerQueue = backend.timer_queue(timer_state_name(name, "processing"))

    # Each checks for a current key inline: timers are registered per record.
    def register_event_time_timer(self, namespace: Any, timestamp: int) -> None:
        ctx = self.key_context
        if ctx.group < 0:
            _no_current_key()
        self.event.add(ctx.group, ctx.key, namespace, _checked(timestamp))

    def register_processing_time_timer(self, namespace: Any, timestamp: int) -> None:
        ctx = self.key_context
        if ctx.group < 0:
            _no_current_key()
        self.processing.add(ctx.group, ctx.key, namespace, _checked(timestamp))

    def delete_event_time_timer(self, namespace: Any, timestamp: int) -> None:
        ctx = self.key_context
        if ctx.group < 0:
            _no_current_key()
        self.event.remove(ctx.group, ctx.key, namespace, _checked(timestamp))

    def delete_processing_time_timer(self, namespace: Any, timestamp: int) -> None:
        ctx = self.key_context
        if ctx.group < 0:
            _no_current_key()
        self.processing.remove(ctx.group, ctx.key, namespace, _checked(timestamp))

    def advance_watermark(self, watermark: int, on_event_time: OnTimer) -> None:
        self._fire(self.event.poll_due(watermark), on_event_time)

    def advance_processing_time(self, now: int, on_processing_time: OnTimer) -> None:
        self._fire(self.processing.poll_due(now), on_processing_time)

    def next_processing_time(self) -> int | None:
        """When the earliest processing-time timer is due (None: there is none)."""
        return self.processing.earliest()

    def _fire(self, due: Any, on_timer: OnTimer) -> None:
        ctx = self.key_context
        for timestamp, key_group, key, namespace in due:
            ctx.group = key_group
            ctx.key = key
            on_timer(timestamp, key, namespace)
