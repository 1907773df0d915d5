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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lockgate.runtime.messages import host_protocol as protocol
from lockgate.runtime.messages import socket_directory
from lockgate.runtime.messages.channel_auth import (
    PeerRefused,
    authenticate_listener,
    check_peer_user,
    peer_credentials,
)
from lockgate.runtime.messages.host_protocol import (
    EpochDone,
    EpochStart,
    FrameKind,
    FrameReader,
    HostFailure,
    HostReleased,
    HostRequest,
    HostStarted,
    RunAccess,
)
from lockgate.runtime.messages.spark_items import ChannelItem, HostOutput, SourceSplit
from lockgate.runtime.sparktask.executor_identity import spark_host

START_TIMEOUT_S = 60.0  # for a new host to bind its socket (imports on a loaded machine)
RELEASE_TIMEOUT_S = 30.0  # for a host to close its subtask before it is killed
_KILL_WAIT_S = 10.0  # for a killed host to be gone
RELEASE_THREADS = 8  # hosts released at once on one executor
_BEGIN_TRIES = 5
_START_TRIES = 3
_CONTROL_LIMIT = 1 << 20  # the longest control frame a task accepts from a task manager


class SubtaskHostError(RuntimeError):
    """The subtask's host failed the epoch; the message carries the host's traceback."""


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
    what = "the task manager of this executor"
    manager = _connect_starting(
        socket_directory.task_manager_path(daemon_pid),
        lambda: _start_task_manager(daemon_pid),
        what,
    )
    with manager:
        check_peer_user(manager, what)
        manager.settimeout(START_TIMEOUT_S)
        protocol.send_record(manager, FrameKind.SPAWN, request)
        try:
            kind, payload = FrameReader(manager, _CONTROL_LIMIT).read()
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


def connect_host(access: RunAccess, vertex: int, index: int) -> socket.socket:
    """An authenticated connection to the subtask's host on this Spark host, started if
    there is none."""
    request = access.request(vertex, index, spark_host())
    what = f"the host of subtask {index} of task {vertex} (run {access.run})"
    path = socket_directory.host_path(access.run, request.location, vertex, index)
    retry = 0
    while True:
        sock = _connect_starting(path, lambda: _start_host(request), what)
        try:
            # No time limit: the host may be busy with an earlier attempt of this task.
            authenticate_listener(sock, access.key, what, timeout=None)
            return sock
        except ConnectionError:
            sock.close()
            # The host was exiting (released, its subtask closed, its last epoch failed):
            # a new one takes over once the name is free.
            retry += 1
            if retry == _BEGIN_TRIES:
                raise
            time.sleep(0.05 * retry)
        except BaseException:
            sock.close()
            raise


def _connect_starting(path: Path, start: Callable[[], None], what: str) -> socket.socket:
    """A connection to the socket at ``path``, after ``start()`` if nothing listens there.
    A start may find the name held by a listener that is just going (its run released, or
    a sweep clearing a dead one's files): then it starts again."""
    for _ in range(_START_TRIES):
        sock = socket_directory.connect(path)
        if sock is not None:
            return sock
        start()
        sock = socket_directory.connect(path)
        if sock is not None:
            return sock
        time.sleep(0.05)
    raise RuntimeError(f"{what} started but cannot be reached")


class HostSession:
    """One epoch of a subtask, run by its host: the task sends input, the host answers with
    output."""

    def __init__(self, access: RunAccess, vertex: int, index: int):
        self.where = f"subtask {index} of task {vertex} (run {access.run})"
        self.place = (access, vertex, index)
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


def release_hosts(access: RunAccess, timeout_s: float = RELEASE_TIMEOUT_S) -> list[str]:
    """Close the subtasks of ``access.run`` hosted on this machine and end their hosts, a few
    at once; a host that does not answer within ``timeout_s`` (a user function stuck in a
    call) is killed. Returns what went wrong, one line per host."""
    sockets = socket_directory.run_sockets(access.run)
    with ThreadPoolExecutor(max(1, min(RELEASE_THREADS, len(sockets)))) as pool:
        outcomes = list(pool.map(lambda path: _release(path, access.key, timeout_s), sockets))
    problems = [problem for problem in outcomes if problem is not None]
    socket_directory.remove_dead(access.run)
    problems += [
        f"{path}: still listening after the release"
        for path in socket_directory.run_sockets(access.run)
    ]
    return problems


def _release(path: Path, key: str, timeout_s: float) -> str | None:
    """Release the host at ``path``, and wait until its process is gone."""
    sock = socket_directory.connect(path)
    if sock is None:
        return None  # exited meanwhile, or killed (remove_dead clears its socket)
    with sock:
        try:
            # The very process, whatever becomes of its pid: a pid is reused once it exits.
            process = os.pidfd_open(peer_credentials(sock)[0])
        except ProcessLookupError:
            return None
        try:
            return _release_process(sock, process, key, path, timeout_s)
        finally:
            os.close(process)


def _release_process(
    sock: socket.socket, process: int, key: str, path: Path, timeout_s: float
) -> str | None:
    try:
        authenticate_listener(sock, key, f"the host at {path}", timeout=timeout_s)
        sock.settimeout(timeout_s)
        protocol.send(sock, FrameKind.RELEASE)
        kind, payload = FrameReader(sock, _CONTROL_LIMIT).read()
        if kind is not FrameKind.RELEASED:
            return f"{path}: answered a release with a {kind.name} frame"
        released = HostReleased.decode(payload, f"the release reported by {path}")
        if not select.select([process], [], [], timeout_s)[0]:
            raise TimeoutError
        if released.close_error is not None:
            return f"{path}: close() failed: {released.close_error}"
        return None
    except TimeoutError:  # a process of this user in the run's directory: the run's host
        signal.pidfd_send_signal(process, signal.SIGKILL)
        select.select([process], [], [], _KILL_WAIT_S)  # gone, and its name with it
        return f"{path}: did not close within {timeout_s:.0f} s; killed"
    except PeerRefused as exc:
        return f"{path}: not released: {exc}"
    except ConnectionError:
        return None  # it exited meanwhile


class ReleaseRun:
    """The task of the driver's release job, one on each executor: ``release_hosts`` there."""

    def __init__(self, access: RunAccess):
        self.access = access

    def __call__(self, _: Iterable[object]) -> list[str]:
        return release_hosts(self.access)
