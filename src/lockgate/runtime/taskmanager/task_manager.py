"""The task manager of an executor: ``python -m lockgate.runtime.taskmanager.task_manager``.

One per executor (Flink: the TaskManager), started by the first task that needs a subtask
host there. It imports lockgate and PySpark once and forks a host per subtask on request, so
that a job's subtasks start in milliseconds rather than in the second a fresh interpreter
takes. It lives as long as the executor's Python daemon, whose pid names it and which it
watches.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import logging
import os
import selectors
import signal
import socket
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

from lockgate.runtime.messages import host_protocol as protocol
from lockgate.runtime.messages.channel_auth import PeerRefused, check_peer_user
from lockgate.runtime.messages.host_protocol import FrameKind, HostRequest, HostStarted
from lockgate.runtime.messages.socket_directory import (
    ExclusiveListener,
    sweep,
    task_manager_path,
)
from lockgate.runtime.subtaskhost.host_process import run_host, watch_daemon

log = logging.getLogger(__name__)

# What every host imports when it unpickles its job (cloudpickle's helpers, the API classes a
# job is made of, which pull in PySpark's SQL modules, RocksDB), imported once here before
# any fork: preloaded by name, as a cache, not used here.
_PRELOAD = ("pyspark.cloudpickle", "lockgate.datastream", "lockgate.state.rocksdb")

REQUEST_TIMEOUT_S = 5.0  # for a caller to send its whole request
REQUEST_LIMIT = 1 << 16  # bytes of a request's frame
MAX_HOSTS = 4096  # on one executor, whatever the runs ask for
_HEADER = protocol.FRAME_HEADER_BYTES
_Place = tuple[str, int, int, str]  # run, task, subtask, Spark host


@dataclass
class _Caller:
    """A connection whose request is still arriving (read as it comes: no caller holds up
    another)."""

    sock: socket.socket
    deadline: float
    data: bytearray = field(default_factory=bytearray)

    def request(self) -> HostRequest | None:
        """The request, once all of it is here."""
        if len(self.data) < _HEADER:
            return None
        kind, length = protocol.frame_header(bytes(self.data[:_HEADER]))
        if kind is not FrameKind.SPAWN:
            raise ValueError(f"a {kind.name} frame instead of a request")
        if length > REQUEST_LIMIT:
            raise ValueError(f"a request of {length} bytes (at most {REQUEST_LIMIT})")
        if len(self.data) < _HEADER + length:
            return None
        payload = bytes(self.data[_HEADER : _HEADER + length])
        return HostRequest.decode(payload, "a request for a subtask host")


class TaskManager:
    """Accepts requests from the executor's tasks and forks their hosts, with a bound on the
    hosts of each run (its subtasks) and of the executor (``MAX_HOSTS``)."""

    def __init__(self, listener: ExclusiveListener, daemon: int, daemon_pid: int):
        self.listener = listener
        self.daemon = daemon
        self.daemon_pid = daemon_pid
        self.selector = selectors.DefaultSelector()
        self.selector.register(listener.socket, selectors.EVENT_READ)
        self.selector.register(daemon, selectors.EVENT_READ)
        self.callers: dict[socket.socket, _Caller] = {}
        self.hosts: dict[int, _Place] = {}  # pidfd of each live host -> its place
        self.places: Counter[_Place] = Counter()  # live hosts per place (briefly 2: "exists")

    def serve(self) -> None:
        while True:
            deadlines = [caller.deadline for caller in self.callers.values()]
            wait = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            for event, _ in self.selector.select(wait):
                if event.fileobj is self.daemon:
                    return
                if event.fileobj is self.listener.socket:
                    self._accept()
                elif isinstance(event.fileobj, socket.socket):
                    self._read(event.fileobj)
                else:
                    self._host_exited(int(event.fd))
            now = time.monotonic()
            for caller in [c for c in self.callers.values() if c.deadline <= now]:
                log.warning("a caller sent no complete request within %s s", REQUEST_TIMEOUT_S)
                self._drop(caller.sock)

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.socket.accept()
        except BlockingIOError:
            return
        try:
            check_peer_user(conn, "a caller of the task manager")
        except PeerRefused as exc:
            log.warning("refused a connection: %s", exc)
            conn.close()
            return
        conn.setblocking(False)
        self.callers[conn] = _Caller(conn, time.monotonic() + REQUEST_TIMEOUT_S)
        self.selector.register(conn, selectors.EVENT_READ)

    def _read(self, conn: socket.socket) -> None:
        caller = self.callers[conn]
        try:
            chunk = conn.recv(REQUEST_LIMIT)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(conn)
            return
        caller.data += chunk
        try:
            request = caller.request()
        except ValueError as exc:
            log.warning("refused a caller of the task manager: %s", exc)
            self._drop(conn)
            return
        if request is not None:
            self._forget(conn)
            conn.setblocking(True)
            with conn:
                self._start_host(conn, request)

    def _start_host(self, conn: socket.socket, request: HostRequest) -> None:
        """Fork the host a task asked for; the host answers the task itself."""
        place = (request.run, request.vertex, request.index, request.location)
        refusal = None
        held = {p for p in self.places if p[0] == request.run}
        if place not in held and len(held) >= request.subtasks:
            refusal = f"run {request.run} has its {request.subtasks} hosts here already"
        elif len(self.hosts) >= MAX_HOSTS:
            refusal = f"this executor runs {MAX_HOSTS} hosts, the most it may"
        if refusal is not None:
            with contextlib.suppress(OSError):
                protocol.send_record(conn, FrameKind.SPAWNED, HostStarted(f"refused: {refusal}"))
            return
        try:
            pid = os.fork()
        except OSError as exc:  # out of processes or memory: this request fails, not all
            with contextlib.suppress(OSError):
                protocol.send_record(conn, FrameKind.SPAWNED, HostStarted(f"cannot fork: {exc}"))
            return
        if pid == 0:
            try:
                self._become_child()
                run_host(conn, request, self.daemon_pid)
            except BaseException:
                log.exception("the host of %s failed", request)
            finally:
                os._exit(0)
        try:
            host = os.pidfd_open(pid)
        except OSError:  # gone already ("exists": another task's started it), or no fds left
            return
        self.hosts[host] = place
        self.places[place] += 1
        self.selector.register(host, selectors.EVENT_READ)

    def _become_child(self) -> None:
        """In a forked host: drop the task manager's name, callers and watches."""
        self.listener.forget()
        for sock in self.callers:
            sock.close()
        for host in self.hosts:
            os.close(host)
        os.close(self.daemon)  # the host watches the daemon itself
        self.selector.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # user code may wait for children

    def _host_exited(self, host: int) -> None:
        self.selector.unregister(host)
        os.close(host)
        place = self.hosts.pop(host)
        self.places[place] -= 1
        if not self.places[place]:
            del self.places[place]

    def _forget(self, conn: socket.socket) -> None:
        self.selector.unregister(conn)
        del self.callers[conn]

    def _drop(self, conn: socket.socket) -> None:
        self._forget(conn)
        conn.close()


def serve(listener: ExclusiveListener, daemon_pid: int) -> None:
    daemon = watch_daemon(daemon_pid)
    if daemon is None:
        return
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # hosts are reaped as they exit
    for module in _PRELOAD:
        importlib.import_module(module)
    gc.collect()
    gc.freeze()  # shared with the hosts, page for page, as long as nobody writes it
    listener.socket.setblocking(False)
    TaskManager(listener, daemon, daemon_pid).serve()


def _report(ready_fd: int, status: str) -> None:
    """Tell the starting task; a task killed meanwhile (a cancelled epoch) is not told, and
    the task manager serves the next one."""
    with contextlib.suppress(OSError):
        os.write(ready_fd, status.encode() + b"\n")
    os.close(ready_fd)


def main(argv: list[str]) -> None:
    daemon_pid, ready_fd = int(argv[0]), int(argv[1])
    # The task that starts the task manager waits for this process: leave at once and let
    # the task manager (the child) be adopted by init, so that no zombie stays behind.
    if os.fork() > 0:
        os._exit(0)
    # A daemon of the executor (and so are the hosts it forks), not a library in someone's
    # application: its warnings, lockgate's and the user functions', go to its stderr, the
    # executor's, which Spark keeps in the executor's log (in local mode, the driver's stderr).
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        listener = ExclusiveListener.claim(task_manager_path(daemon_pid))
    except OSError as exc:
        _report(ready_fd, f"cannot listen: {exc}")
        return
    if listener is None:
        _report(ready_fd, "exists")
        return
    _report(ready_fd, "ready")
    try:
        sweep()
        serve(listener, daemon_pid)
    finally:
        listener.close()


if __name__ == "__main__":
    main(sys.argv[1:])
