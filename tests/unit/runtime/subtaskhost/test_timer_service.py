"""InternalTimerService: what a timer's timestamp may be, and that it needs a current key."""

from __future__ import annotations

import enum

import pytest

from lockgate.runtime.subtaskhost.timer_service import InternalTimerService
from lockgate.state.heap import HeapKeyedStateBackend
from lockgate.state.key_groups import KeyGroupRange


class Millis(enum.IntEnum):
    TEN = 10


def _timers():
    backend = HeapKeyedStateBackend(KeyGroupRange(0, 127), 128)
    return backend, InternalTimerService(backend, "user")


def test_any_integral_timestamp_is_taken_as_an_int():
    backend, timers = _timers()
    backend.ctx.group, backend.ctx.key = 3, "k"
    timers.register_event_time_timer(None, Millis.TEN)
    timers.register_event_time_timer(None, 10)  # the same timer
    fired = []
    timers.advance_watermark(10, lambda ts, key, ns: fired.append((type(ts), ts, key)))
    assert fired == [(int, 10, "k")]


@pytest.mark.parametrize(
    ("timestamp", "error", "message"),
    [
        (1.5, TypeError, "must be an int"),
        (True, TypeError, "must be an int"),
        ("10", TypeError, "must be an int"),
        (2**63, ValueError, "fit in 64 bits"),
        (-(2**63) - 1, ValueError, "fit in 64 bits"),
    ],
)
def test_a_bad_timestamp_fails_at_the_call(timestamp, error, message):
    backend, timers = _timers()
    backend.ctx.group, backend.ctx.key = 3, "k"
    with pytest.raises(error, match=message):
        timers.register_processing_time_timer(None, timestamp)


def test_a_timer_outside_a_key_context_says_where_to_register_it():
    _, timers = _timers()  # as in open(): no record yet
    with pytest.raises(RuntimeError, match="process_element or on_timer"):
        timers.register_event_time_timer(None, 5)
