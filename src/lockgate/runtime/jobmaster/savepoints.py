"""Savepoints asked for while a job runs: each is taken at the next epoch boundary.

A request comes from any thread (a ``JobClient``); the JobMaster's loop takes it before
planning an epoch, which then writes every keyed subtask's state in canonical form into
the savepoint's directory; once the epoch is accepted, the savepoint's ``_metadata`` is
written and the request's future gets its path. A stop ends the job with that epoch (with
``drain``, after the end of event time fired every timer and window).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field

from lockgate.checkpoint.metadata import CheckpointMetadata
from lockgate.checkpoint.savepoint import complete_savepoint, new_savepoint_directory
from lockgate.checkpoint.signing_key import CheckpointSigningKey
from lockgate.core.fs.storage import Storage
from lockgate.runtime.jobmaster.job_state import JobState
from lockgate.runtime.messages.acknowledgement import SubtaskAck

log = logging.getLogger(__name__)


class SavepointError(RuntimeError):
    """A savepoint that cannot be taken: no directory, the job ended, the epoch failed."""


@dataclass
class SavepointRequest:
    target: str  # the directory the savepoint goes under
    stop: bool  # the job ends with the savepoint's epoch
    drain: bool  # a stop that first advances event time to its end
    future: Future[str] = field(default_factory=Future)
    directory: Storage | None = None  # the savepoint's own, once its epoch is planned


class PendingSavepoints:
    """Requests from any thread, taken one at a time by the JobMaster's loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[SavepointRequest] = []
        self._closed: str | None = None  # why no request is taken any more

    def add(self, request: SavepointRequest) -> Future[str]:
        with self._lock:
            if self._closed is not None:
                request.future.set_exception(SavepointError(self._closed))
            else:
                self._pending.append(request)
        return request.future

    def take(self) -> SavepointRequest | None:
        with self._lock:
            return self._pending.pop(0) if self._pending else None

    def close(self, reason: str) -> None:
        """No more savepoints: those waiting fail with ``reason``."""
        with self._lock:
            self._closed = reason
            pending, self._pending = self._pending, []
        for request in pending:
            request.future.set_exception(SavepointError(reason))


def begin(request: SavepointRequest, job_id: str) -> Storage:
    request.directory = new_savepoint_directory(request.target, job_id)
    return request.directory


def complete(
    request: SavepointRequest,
    state: JobState,
    acks: list[SubtaskAck],
    job_id: str,
    checkpoint_id: int,
    epoch: int,
    signing_key: CheckpointSigningKey | None,
) -> bool:
    """Write the savepoint of the accepted ``epoch`` (signed with ``signing_key``) and
    resolve the request; whether the savepoint was taken."""
    assert request.directory is not None
    errors = [a.savepoint_error for a in acks if a.savepoint_error is not None]
    if errors:
        fail(request, SavepointError(errors[0]))
        return False
    keyed = {(a.vertex, a.subtask): a.savepoint for a in acks if a.savepoint is not None}
    managed = {(a.vertex, a.subtask): a.savepoint_managed for a in acks}
    operators = state.checkpoint_operators(keyed, managed)
    body = CheckpointMetadata(job_id, checkpoint_id, epoch, operators)
    try:
        url = complete_savepoint(request.directory, body, signing_key)
    except OSError as exc:  # the epoch stands: only the savepoint fails
        fail(request, SavepointError(f"its _metadata could not be written: {exc}"))
        return False
    log.info("job %s: savepoint of epoch %d completed at %s", job_id, epoch, url)
    request.future.set_result(url)
    return True


def fail(request: SavepointRequest, error: SavepointError) -> None:
    """The savepoint failed (``error`` says why): remove what it wrote and fail the
    request."""
    if request.directory is not None and not request.future.done():  # not one taken
        try:
            request.directory.remove("")
        except OSError as exc:
            log.warning("could not remove the failed savepoint %s: %s", request.directory.url, exc)
    if not request.future.done():
        request.future.set_exception(error)
