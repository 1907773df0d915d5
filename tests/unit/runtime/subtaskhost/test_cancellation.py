"""A host's work stops when its task hangs up, and only then."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from lockgate.runtime.subtaskhost.cancellation import CancelWatch, TaskGone


def later(seconds: float, action) -> threading.Timer:
    timer = threading.Timer(seconds, action)
    timer.start()
    return timer


def test_a_hang_up_interrupts_the_work_even_inside_a_sleep():
    host_end, task_end = socket.socketpair()
    watch = CancelWatch(host_end)
    later(0.2, task_end.close)
    started = time.monotonic()
    try:
        with pytest.raises(TaskGone), watch.working():
            time.sleep(10)  # a user function taking its time
    finally:
        watch.close()
        host_end.close()
    assert time.monotonic() - started < 5


def test_an_except_exception_in_user_code_does_not_swallow_it():
    host_end, task_end = socket.socketpair()
    watch = CancelWatch(host_end)
    later(0.2, task_end.close)
    swallowed = []
    try:
        with pytest.raises(TaskGone), watch.working():
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    time.sleep(0.05)
                except Exception as exc:
                    swallowed.append(exc)
    finally:
        watch.close()
        host_end.close()
    assert swallowed == []


def test_data_from_the_task_and_a_hang_up_outside_work_interrupt_nothing():
    host_end, task_end = socket.socketpair()
    watch = CancelWatch(host_end)
    try:
        with watch.working():
            task_end.sendall(b"the next frame")  # the host reads it later
            time.sleep(0.6)
        task_end.close()  # the task's normal end, after the epoch
        time.sleep(0.6)
        assert not watch.fired
    finally:
        watch.close()
        host_end.close()
