"""The process of one subtask host, forked by its executor's task manager.

The host serves the tasks of its subtask one at a time over a Unix socket named by run, task
and subtask (``socket_directory``), to callers that hold the run's key, and lives until the
run ends for it: end of input, a release by the driver, or the end of the executor's Python
daemon (the host is in the daemon's process group, which the daemon signals when it stops,
and it watches the daemon's pid in case the daemon itself is killed).
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import socket
import sys
import traceback

from lockgate.runtime.messages import host_protocol as protocol
from lockgate.runtime.messages.channel_auth import PeerRefused, authenticate_caller
from lockgate.runtime.messages.host_protocol import (
    EpochStart,
    FrameKind,
    FrameReader,
    HostFailure,
    HostReleased,
    HostRequest,
    HostStarted,
)
from lockgate.runtime.messages.socket_directory import ExclusiveListener, host_path
from lockgate.runtime.messages.spark_items import HostOutput
from lockgate.runtime.subtaskhost.cancellation import CancelWatch, TaskGone
from lockgate.runtime.subtaskhost.subtask_host import SubtaskHost

log = logging.getLogger(__name__)


def _send_outputs(conn: socket.socket, outputs: list[HostOutput]) -> None:
    send, frame = protocol.send, protocol.output_frame
    for output in outputs:
        send(conn, FrameKind.OUTPUT, *frame(output))


class _Connection:
    """One task's conversation with the host: an epoch, or a release."""

    def __init__(self, conn: socket.socket, host: SubtaskHost):
        self.conn = conn
        self.reader = FrameReader(conn)
        self.host = host
        self.watch = CancelWatch(conn)

    def serve(self) -> bool:
        """Serve the task; True when the host must exit: its subtask is closed, at the end
        of the input or after a failed epoch (a retry starts a fresh host, so no host is
        left without a subtask)."""
        try:
            return self._serve()
        finally:
            self.watch.close()

    def _serve(self) -> bool:
        try:
            kind, payload = self.reader.read()
        except OSError:  # the task left before it said anything (HostConnectionLost)
            return False
        if kind is FrameKind.RELEASE:
            held = self.host.subtask is not None
            close_error = self.host.release()
            self._reply(FrameKind.RELEASED, HostReleased(held, close_error))
            return True
        try:
            if kind is not FrameKind.START:
                raise RuntimeError(f"a task opened with a {kind.name} frame, not START")
            start = EpochStart.decode(payload, "an epoch start sent to a subtask host")
            _extend_path(start.python_path)
            with self.watch.working():
                self.host.begin(start, self._graph)
            protocol.send(self.conn, FrameKind.READY)
            return self._epoch()
        except (TaskGone, ConnectionError):
            self.host.abort()  # the task is gone (killed or cancelled)
            return True
        except Exception:
            self.host.abort()
            self._reply(FrameKind.FAILED, HostFailure(traceback.format_exc()))
            return True

    def _epoch(self) -> bool:
        conn, host, working = self.conn, self.host, self.watch.working
        while True:
            kind, payload = self.reader.read()
            if kind is FrameKind.BATCH:
                item = protocol.read_batch_frame(payload)
                with working():
                    outputs = host.batch(item)
                _send_outputs(conn, outputs)
            elif kind is FrameKind.SOURCE:
                with working():
                    outputs = host.source(protocol.read_source_frame(payload))
                _send_outputs(conn, outputs)
            elif kind is FrameKind.FINISH:
                with working():
                    outputs, done = host.finish()
                _send_outputs(conn, outputs)
                protocol.send_record(conn, FrameKind.DONE, done)
                return done.closed
            else:
                raise RuntimeError(f"unexpected {kind.name} frame inside an epoch")
            protocol.send(conn, FrameKind.READY)

    def _graph(self) -> bytes:
        protocol.send(self.conn, FrameKind.NEED_GRAPH)
        kind, payload = self.reader.read()
        if kind is not FrameKind.GRAPH:
            raise RuntimeError(f"asked for the job graph, the task sent a {kind.name} frame")
        return payload

    def _reply(self, kind: FrameKind, record: HostFailure | HostReleased) -> None:
        with contextlib.suppress(OSError):  # the task is gone; nobody is left to tell
            protocol.send_record(self.conn, kind, record)


def _extend_path(python_path: list[str]) -> None:
    """Make the task's modules importable here (the host may outlive the job that started
    it: a later job can bring other --py-files)."""
    known = set(sys.path)
    sys.path.extend(entry for entry in python_path if entry not in known)


def watch_daemon(daemon_pid: int) -> int | None:
    """A file descriptor that becomes readable when the daemon exits (None: already gone)."""
    try:
        return os.pidfd_open(daemon_pid)
    except ProcessLookupError:
        return None


def serve(listener: socket.socket, host: SubtaskHost, key: str, daemon_pid: int) -> None:
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    daemon = watch_daemon(daemon_pid)
    if daemon is None:
        return
    selector.register(daemon, selectors.EVENT_READ)
    where = f"a caller of the host of subtask {host.index} of task {host.vertex} ({host.run})"
    while True:
        for event, _ in selector.select():
            if event.fileobj is daemon:
                return  # the executor's Python daemon is gone, and with it the executor
            conn, _ = listener.accept()
            with conn:
                try:
                    authenticate_caller(conn, key, where)
                except (PeerRefused, OSError) as exc:
                    log.warning("refused a connection: %s", exc)
                    continue
                if _Connection(conn, host).serve():
                    return


def run_host(requester: socket.socket, request: HostRequest, daemon_pid: int) -> None:
    """Become the host of ``request`` (in a process the task manager just forked): claim its
    socket, tell the requesting task, and serve until the run ends for the subtask."""
    path = host_path(request.run, request.location, request.vertex, request.index)
    try:
        listener = ExclusiveListener.claim(path)
    except OSError as exc:
        _answer(requester, f"cannot listen at {path}: {exc}")
        return
    if listener is None:
        _answer(requester, "exists")
        return
    _answer(requester, "ready")
    # A process user code forks (a pool) must not keep the name after the host is gone.
    os.register_at_fork(after_in_child=listener.forget)
    host = SubtaskHost(request)
    try:
        serve(listener.socket, host, request.key, daemon_pid)
    finally:
        listener.close()
        host.discard()


def _answer(requester: socket.socket, status: str) -> None:
    with requester, contextlib.suppress(OSError):  # gone: the next task finds the host by name
        protocol.send_record(requester, FrameKind.SPAWNED, HostStarted(status))
