"""Stopping a host's work when the task that handed it the work goes away.

Spark kills a task that it cancels (an epoch past the checkpoint timeout, a failed job) or
whose executor is lost; the subtask's host lives on, maybe inside a user function that takes
its time. The watch waits for the task's end of the socket to hang up while the host works
on a frame, then raises ``TaskGone`` in the host's main thread (at its next bytecode, or in
a sleep) and gives the host ``GRACE_S`` to close its subtask before the process exits
without it (Flink likewise kills a TaskManager whose task does not react to its
cancellation).
"""

from __future__ import annotations

import os
import select
import signal
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

GRACE_S = 30.0
_POLL_MS = 200


class TaskGone(BaseException):
    """The task went away mid-epoch. A BaseException, like KeyboardInterrupt, so that a user
    function's ``except Exception`` does not swallow it."""


class CancelWatch:
    def __init__(self, sock: socket.socket):
        self.fd = sock.fileno()
        self.busy = threading.Event()
        self.stopped = threading.Event()
        self.fired = False
        signal.signal(signal.SIGUSR1, self._interrupt)  # the host's main thread
        self.thread = threading.Thread(target=self._watch, name="cancel-watch", daemon=True)
        self.thread.start()

    @contextmanager
    def working(self) -> Iterator[None]:
        """Work on a frame, interruptible by the task hanging up."""
        self.busy.set()
        try:
            yield
        finally:
            self.busy.clear()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()

    def _watch(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLRDHUP)  # a hang-up, not data
        main = threading.main_thread().ident
        assert main is not None
        while not self.stopped.is_set():
            if not self.busy.wait(_POLL_MS / 1000):
                continue
            if not poller.poll(_POLL_MS) or not self.busy.is_set():
                continue
            self.fired = True
            signal.pthread_kill(main, signal.SIGUSR1)
            if not self.stopped.wait(GRACE_S):
                os._exit(1)  # the subtask did not let go: its state is rebuilt elsewhere
            return

    def _interrupt(self, signum: int, frame: FrameType | None) -> None:
        if self.fired and self.busy.is_set():
            raise TaskGone()
