"""``CompletableFuture``: what a ``JobClient``'s asynchronous calls return, as in PyFlink,
with a timeout on ``result``."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

T = TypeVar("T")
S = TypeVar("S")


class CompletableFuture(Generic[T]):
    """A result that comes later. Cancelling it stops the waiting, not the work: a job or
    savepoint goes on (``JobClient.cancel`` cancels a job)."""

    def __init__(self, future: Future[T]):
        self._future = future

    @staticmethod
    def completed(value: T) -> CompletableFuture[T]:
        future: Future[T] = Future()
        future.set_result(value)
        return CompletableFuture(future)

    @staticmethod
    def of(source: Future[S], convert: Callable[[S], T]) -> CompletableFuture[T]:
        """A future of ``convert(source's result)``; its own cancellation leaves
        ``source`` alone."""
        future: Future[T] = Future()

        def done(completed: Future[S]) -> None:
            if not future.set_running_or_notify_cancel():
                return  # cancelled by its holder
            error = completed.exception()
            if error is not None:
                future.set_exception(error)
                return
            try:
                future.set_result(convert(completed.result()))
            except BaseException as exc:
                future.set_exception(exc)

        source.add_done_callback(done)
        return CompletableFuture(future)

    def cancel(self) -> bool:
        return self._future.cancel()

    def cancelled(self) -> bool:
        return self._future.cancelled()

    def done(self) -> bool:
        return self._future.done()

    def result(self, timeout: float | None = None) -> T:
        """Wait up to ``timeout`` seconds (None: for ever); raises what the work raised,
        ``TimeoutError`` when the time is up, ``CancelledError`` when cancelled."""
        return self._future.result(timeout)

    def exception(self) -> BaseException | None:
        """The error the work ended with; None while it runs or when it succeeded."""
        if not self._future.done() or self._future.cancelled():
            return None
        return self._future.exception()

    def __repr__(self) -> str:
        state: Any = "cancelled" if self.cancelled() else "done" if self.done() else "running"
        return f"CompletableFuture[{state}]"
