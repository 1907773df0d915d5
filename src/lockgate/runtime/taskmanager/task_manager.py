"""The task manager of an executor: ``python -m lockgate.runtime.taskmanager.task_manager``.

One per executor (Flink: the TaskManager), started by the first task that needs a subtask
host there. It imports lockgate and PySpark once and forks a host per subtask on request, so
that a job's subtasks start in milliseconds rather than in the second a fresh interpreter
takes. It lives as long as the executor's Python daemon, whose pid names it and which it
watches.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import importlib
import logging
import os
import selectors
import signal
import socket
import sys

from lockgate.runtime.messages import host_protocol as protocol
from lockgate.runtime.messages.host_protocol import FrameKind, FrameReader, HostRequest
from lockgate.runtime.subtaskhost.host_process import run_host, watch_daemon

log = logging.getLogger("lockgate")

# What every host imports when it unpickles its job (cloudpickle's helpers, the API classes a
# job is made of, which pull in PySpark's SQL modules, RocksDB), imported once here before
# any fork: preloaded by name, as a cache, not used here.
_PRELOAD = ("pyspark.cloudpickle", "lockgate.datastream", "lockgate.state.rocksdb")


def _start_host(conn: socket.socket, listener: socket.socket, daemon_pid: int) -> None:
    """Fork the host a task asked for; the host answers the task itself."""
    kind, payload = FrameReader(conn).read()
    if kind is not FrameKind.SPAWN:
        raise RuntimeError(f"a task sent the task manager a {kind.name} frame")
    request = HostRequest.decode(payload, "a request for a subtask host")
    if os.fork() == 0:
        try:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # user code may wait for children
            run_host(conn, request, daemon_pid)
        except BaseException:
            log.exception("the host of %s failed", request)
        finally:
            os._exit(0)


def serve(listener: socket.socket, daemon_pid: int) -> None:
    daemon = watch_daemon(daemon_pid)
    if daemon is None:
        return
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(daemon, selectors.EVENT_READ)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # hosts are reaped as they exit
    for module in _PRELOAD:
        importlib.import_module(module)
    gc.collect()
    gc.freeze()  # shared with the hosts, page for page, as long as nobody writes it
    while True:
        for key, _ in selector.select():
            if key.fileobj is daemon:
                return
            conn, _ = listener.accept()
            try:
                _start_host(conn, listener, daemon_pid)
            except Exception:
                log.exception("could not start a subtask host")
            finally:
                conn.close()


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
    logging.basicConfig(stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(protocol.task_manager_name(daemon_pid))
    except OSError as exc:
        _report(ready_fd, "exists" if exc.errno == errno.EADDRINUSE else f"cannot listen: {exc}")
        return
    listener.listen(64)
    _report(ready_fd, "ready")
    try:
        serve(listener, daemon_pid)
    finally:
        listener.close()


if __name__ == "__main__":
    main(sys.argv[1:])
