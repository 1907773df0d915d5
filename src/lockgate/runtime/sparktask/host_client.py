"""A Spark task's side of its subtask's host: find it on this machine or start it, then drive
one epoch through it (``host_process`` is the other side).

Also the driver's release of a run's hosts, which a small Spark job runs on every executor.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator

from lockgate.runtime.messages import host_protocol as protocol
from lockgate.runtime.messages.host_protocol import (
    EpochDone,
    EpochStart,
    FrameKind,
    FrameReader,
    HostFailure,
    HostReleased,
    HostRequest,
    HostStarted,
)
from lockgate.runtime.messages.spark_items import ChannelItem, HostOutput, SourceSplit
from lockgate.runtime.sparktask.executor_identity import spark_host

START_TIMEOUT_S = 60.0  # for a new host to bind its socket (imports on a loaded machine)
RELEASE_TIMEOUT_S = 30.0  # for a host to close its subtask before it is killed
_BEGIN_TRIES = 5


class SubtaskHostError(RuntimeError):
    """The subtask's host failed the epoch; the message carries the host's traceback."""


def _connect(name: str) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(name)
    except (ConnectionRefusedError, FileNotFoundError):
        sock.close()
        return None
    return sock


def _start_task_manager(daemon_pid: int) -> None:
    """Start this executor's task manager and wait until it listens (or another task's
    does)."""
    ready_read, ready_write = os.pipe()
    # It runs the worker's interpreter with the worker's path and inherits the worker's
    # process group: the executor's Python daemon's (see host_process).
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    command = [
        sys.executable,
        "-m",
        "lockgate.runtime.taskmanager.task_manager",
        str(daemon_pid),
        str(ready_write),
    ]
    try:
        launcher = subprocess.Popen(
            command, pass_fds=(ready_write,), stdin=subprocess.DEVNULL, env=env
        )
    finally:
        os.close(ready_write)
    try:
        launcher.wait(START_TIMEOUT_S)  # it forks the task manager and exits
        status = _read_status(ready_read, START_TIMEOUT_S)
    finally:
        os.close(ready_read)
    if status not in ("ready", "exists"):
        raise RuntimeError(
            f"the task manager of this executor did not start: "
            f"{status or 'it exited without a word'} (see the executor's stderr)"
        )


def _read_status(fd: int, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    data = b""
    while not data.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return f"no answer within {timeout:.0f} s"
        chunk = os.read(fd, 512)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace").strip()


def _start_host(request: HostRequest) -> None:
    """Have this executor's task manager start the subtask's host (the task manager first,
    if the executor has none yet)."""
    daemon_pid = os.getppid()  # the executor's Python daemon forked this worker
    manager = _connect_starting(
        protocol.task_manager_name(daemon_pid),
        lambda: _start_task_manager(daemon_pid),
        "the task manager of this executor",
    )
    with manager:
        manager.settimeout(START_TIMEOUT_S)
        protocol.send_record(manager, FrameKind.SPAWN, request)
        try:
            kind, payload = FrameReader(manager).read()
        except (ConnectionError, TimeoutError) as exc:
            status = f"the task manager did not answer ({exc})"
        else:
            if kind is not FrameKind.SPAWNED:
                status = f"the task manager answered with a {kind.name} frame"
            else:
                where = "the answer to a request for a subtask host"
                status = HostStarted.decode(payload, where).status
    if status not in ("ready", "exists"):
        raise RuntimeError(
            f"the host of subtask {request.index} of task {request.vertex} (run {request.run}) "
            f"did not start: {status} (see the executor's stderr)"
        )


def connect_host(run: str, vertex: int, index: int) -> socket.socket:
    """A connection to the subtask's host on this Spark host, started if there is none."""
    request = HostRequest(run, vertex, index, spark_host())
    return _connect_starting(
        protocol.socket_name(request),
        lambda: _start_host(request),
        f"the host of subtask {index} of task {vertex} (run {run})",
    )


def _connect_starting(name: str, start: Callable[[], None], what: str) -> socket.socket:
    """A connection to the socket ``name``, after ``start()`` if nothing listens there."""
    sock = _connect(name)
    if sock is None:
        start()
        sock = _connect(name)
    if sock is None:
        raise RuntimeError(f"{what} started but cannot be reached")
    return sock


class HostSession:
    """One epoch of a subtask, run by its host: the task sends input, the host answers with
    output."""

    def __init__(self, run: str, vertex: int, index: int):
        self.where = f"subtask {index} of task {vertex} (run {run})"
        self.place = (run, vertex, index)
        self.sock = connect_host(*self.place)
        self.reader = FrameReader(self.sock)

    def begin(self, start: EpochStart, graph: Callable[[], bytes]) -> None:
        for retry in range(_BEGIN_TRIES):
            try:
                self._begin(start, graph)
                return
            except ConnectionError:
                # The host was exiting (released, its subtask closed, its last epoch failed)
                # when this task reached it: a new one takes over once the name is free.
                if retry == _BEGIN_TRIES - 1:
                    raise
                self.close()
                time.sleep(0.05 * (retry + 1))
                self.sock = connect_host(*self.place)
                self.reader = FrameReader(self.sock)

    def _begin(self, start: EpochStart, graph: Callable[[], bytes]) -> None:
        protocol.send_record(self.sock, FrameKind.START, start)
        kind, payload = self.reader.read()
        if kind is FrameKind.NEED_GRAPH:
            protocol.send(self.sock, FrameKind.GRAPH, graph())
            kind, payload = self.reader.read()
        self._expect_ready(kind, payload)

    def source(self, split: SourceSplit) -> Iterator[HostOutput]:
        protocol.send(self.sock, FrameKind.SOURCE, *protocol.source_frame(split))
        return self._outputs()

    def batch(self, item: ChannelItem) -> Iterator[HostOutput]:
        protocol.send(self.sock, FrameKind.BATCH, *protocol.batch_frame(item))
        return self._outputs()

    def finish(self) -> Iterator[HostOutput]:
        protocol.send(self.sock, FrameKind.FINISH)
        return self._outputs()

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def _outputs(self) -> Iterator[HostOutput]:
        read, output = self.reader.read, protocol.read_output_frame
        while True:
            kind, payload = read()
            if kind is FrameKind.OUTPUT:
                yield output(payload)
            elif kind is FrameKind.DONE:
                EpochDone.decode(payload, f"the end of an epoch of {self.where}")  # checked
                return
            else:
                self._expect_ready(kind, payload)
                return

    def _expect_ready(self, kind: FrameKind, payload: bytes) -> None:
        if kind is FrameKind.READY:
            return
        if kind is FrameKind.FAILED:
            failure = HostFailure.decode(payload, f"a failure reported by the host of {self.where}")
            raise SubtaskHostError(f"{self.where} failed in its host:\n{failure.report}")
        raise RuntimeError(f"{self.where}: its host sent a {kind.name} frame")


# Release ----------------------------------------------------------------------------------


def _listening_names(prefix: str) -> set[str]:
    """Abstract socket names on this machine that start with ``prefix`` (/proc/net/unix
    shows the leading NUL as '@')."""
    shown = "@" + prefix[1:]
    names = set()
    with open("/proc/net/unix") as table:
        next(table)
        for line in table:
            fields = line.split()
            if len(fields) >= 8 and fields[7].startswith(shown):
                names.add("\0" + fields[7][1:])
    return names


def release_hosts(run: str, timeout_s: float = RELEASE_TIMEOUT_S) -> list[str]:
    """Close the subtasks of ``run`` hosted on this machine and end their hosts; a host that
    does not answer within ``timeout_s`` (a user function stuck in a call) is killed.
    Returns what went wrong, one line per host."""
    problems = []
    for name in sorted(_listening_names(protocol.run_prefix(run))):
        sock = _connect(name)
        if sock is None:
            continue  # exited meanwhile
        shown = name[1:]
        try:
            pid = protocol.peer_credentials(sock)[0]
            sock.settimeout(timeout_s)
            protocol.send(sock, FrameKind.RELEASE)
            kind, payload = FrameReader(sock).read()
            if kind is not FrameKind.RELEASED:
                problems.append(f"{shown}: answered a release with a {kind.name} frame")
                continue
            released = HostReleased.decode(payload, f"the release reported by {shown}")
            if released.close_error is not None:
                problems.append(f"{shown}: close() failed: {released.close_error}")
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            problems.append(f"{shown}: did not close within {timeout_s:.0f} s; killed")
        except ConnectionError:
            continue  # it exited meanwhile
        finally:
            sock.close()
    return problems


class ReleaseRun:
    """The task of the driver's release job, one on each executor: ``release_hosts`` there."""

    def __init__(self, run: str):
        self.run = run

    def __call__(self, _: Iterable[object]) -> list[str]:
        return release_hosts(self.run)
