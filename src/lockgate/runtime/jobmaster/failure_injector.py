"""Failures that tests plant in the protocol (``lockgate.testing.inject-failure``).

Each planned failure names a point of the protocol and an epoch or checkpoint id, and
strikes once: the job that failed over there passes the point when it comes back to it.
A planned kill SIGKILLs the driver's process there instead: no cleanup runs, as when its
machine dies.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable

from lockgate.runtime.errors import InjectedFailure


class FailureInjector:
    def __init__(self, planned: Iterable[tuple[str, int]], kills: Iterable[tuple[str, int]] = ()):
        self._planned = set(planned)
        self._kills = set(kills)

    def take(self, point: str, number: int) -> bool:
        """Whether a failure is planned at ``point`` for ``number``; it is then used up
        (a task strikes it: the epoch's descriptor carries it)."""
        if (point, number) not in self._planned:
            return False
        self._planned.discard((point, number))
        return True

    def planned(self, point: str, number: int) -> bool:
        """Whether a failure or a kill is planned at ``point`` for ``number`` (not using it)."""
        return (point, number) in self._planned or (point, number) in self._kills

    def strike(self, point: str, number: int, failure: type[Exception] = InjectedFailure) -> None:
        """Raise ``failure`` if one is planned here on the driver (or die, if planned)."""
        if (point, number) in self._kills:
            os.kill(os.getpid(), signal.SIGKILL)
        if self.take(point, number):
            raise failure(f"injected failure at {point} ({number})")
