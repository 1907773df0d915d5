"""Errors raised while a job runs, with the context a user needs to find the cause."""

from __future__ import annotations

import reprlib
from typing import Any

_preview = reprlib.Repr()
_preview.maxstring = 120
_preview.maxother = 120
_preview.maxlevel = 3


def preview(record: Any) -> str:
    """A short, single-line repr of a record for error messages."""
    return _preview.repr(record).replace("\n", "\\n")


class JobExecutionError(RuntimeError):
    """A job failed; the message says where (operator, uid, subtask, epoch) and why."""


class UserFunctionError(RuntimeError):
    """A user function raised while processing a record inside a Spark task.

    The message is one line so that the driver can lift it out of Spark's wrapped
    traceback (see ``runtime.spark_errors``).
    """


class InjectedFailure(RuntimeError):
    """A failure injected at a named point by lockgate's own fault-tolerance tests."""


class InjectedStorageFailure(OSError):
    """A storage failure injected by lockgate's own fault-tolerance tests (an ``OSError``,
    so it takes the path of a real one)."""


class JobCancellationError(JobExecutionError):
    """The result of a job that was cancelled (Flink's JobCancellationException)."""
