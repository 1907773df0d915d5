"""Where the task manager and the subtask hosts of this machine listen.

Their sockets are files in ``/tmp/lockgate-<uid>/sockets``, a directory only this user
can enter (``private_directory``): another local user can neither connect to them nor bind a
name first. A run's hosts share a directory named after the run, which its release lists.

A socket file outlives a process that is killed, so a listener claims its name with a lock
file next to it: whoever holds the lock owns the name, and the lock goes with its process. Two
processes that start the same listener at once end up with one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import os
import socket
import time
from pathlib import Path

from lockgate.core.fs.private_directory import private_directory

MACHINE_TEMP = Path("/tmp")
_MAX_PATH = 107  # sun_path holds 108 bytes with the terminating NUL
LOCK_SUFFIX = ".lock"
_FLAGS = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW
_CLAIM_TRIES = 200  # 1 s of waiting for a held name without a socket


def sockets_directory() -> Path:
    """``/tmp/lockgate-<uid>/sockets``: the same for every executor of the machine, whatever
    its TMPDIR (YARN gives each container its own), as the Spark host in a host's name is."""
    return private_directory(MACHINE_TEMP / f"lockgate-{os.getuid()}" / "sockets", None)


def task_manager_path(daemon_pid: int) -> Path:
    """The socket of the task manager of the executor whose Python daemon (the parent of its
    Python workers) has pid ``daemon_pid``."""
    return _checked(sockets_directory() / f"taskmanager-{daemon_pid}")


def run_directory(run: str) -> Path:
    """The directory of ``run``'s host sockets (a digest of the run's name: paths of Unix
    sockets are short)."""
    return sockets_directory() / f"run-{hashlib.sha256(run.encode()).hexdigest()[:16]}"


def host_path(run: str, location: str, vertex: int, index: int) -> Path:
    """The socket of a subtask's host: one per Spark host and subtask of a run. The Spark
    host is in the name so that a host serves only the tasks Spark placed on its Spark host,
    the place the driver then asks for (two Spark hosts on one machine share the directory)."""
    place = hashlib.sha256(location.encode()).hexdigest()[:8]
    return _checked(run_directory(run) / f"{vertex}.{index}.{place}")


def _checked(path: Path) -> Path:
    if len(os.fsencode(path)) > _MAX_PATH:
        raise RuntimeError(
            f"the socket path {path} is longer than the {_MAX_PATH} bytes Linux allows"
        )
    return path


def run_sockets(run: str) -> list[Path]:
    """The sockets of ``run``'s hosts on this machine (some may belong to dead hosts)."""
    directory = run_directory(run)
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(directory / name for name in names if not name.endswith(LOCK_SUFFIX))


def connect(path: Path) -> socket.socket | None:
    """A connection to the listener at ``path``; None if nobody listens there."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.connect(os.fspath(path))
    except (ConnectionRefusedError, FileNotFoundError):
        sock.close()
        return None
    return sock


class ExclusiveListener:
    """A listening socket at a path that this process alone holds, until ``close``."""

    def __init__(self, path: Path, lock: int, sock: socket.socket):
        self.path = path
        self.lock = lock
        self.socket = sock

    @classmethod
    def claim(cls, path: Path, backlog: int = 64) -> ExclusiveListener | None:
        """Listen at ``path``; None if a live process holds it."""
        lock_path = path.with_name(path.name + LOCK_SUFFIX)
        for tries in itertools.count(1):
            private_directory(path.parent, None)
            try:
                lock = os.open(lock_path, _FLAGS | os.O_CREAT, 0o600)
            except FileNotFoundError:
                continue  # a sweep removed the run's directory while it was empty
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(lock)
                # Held without a socket: a listener about to bind, or a sweep removing a
                # dead one's files (socket first); only the first keeps the name.
                if os.path.lexists(path) or tries >= _CLAIM_TRIES:
                    return None
                time.sleep(0.005)
                continue
            # The holder before may have removed the lock file after this opened it: a lock
            # on a file no longer at the path holds nothing.
            try:
                current = os.stat(lock_path).st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(lock).st_ino:
                break
            os.close(lock)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # the socket of a killed holder
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            sock.bind(os.fspath(path))
            sock.listen(backlog)
        except OSError:
            sock.close()
            os.close(lock)
            raise
        return cls(path, lock, sock)

    def close(self) -> None:
        """Give the name up: the socket file first, so that nobody connects to a listener
        about to go, then the lock file."""
        for name in (self.path, self.path.with_name(self.path.name + LOCK_SUFFIX)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)
        self.forget()

    def forget(self) -> None:
        """Close this process's handles without giving the name up (a forked child of the
        holder, which must not keep the holder's lock)."""
        self.socket.close()
        with contextlib.suppress(OSError):
            os.close(self.lock)


def remove_dead(run: str) -> None:
    """Remove what hosts of ``run`` that died without closing left in its directory, and the
    directory once it is empty (after the run's release)."""
    _remove_dead_in(run_directory(run))


def sweep() -> None:
    """Remove what dead task managers and hosts on this machine left (an executor's Python
    daemon ends its process group with a signal, which leaves the socket files): run at each
    task manager's start, so the directory holds no more than the live listeners and one
    executor's worth of dead ones."""
    directory = sockets_directory()
    for name in os.listdir(directory):
        path = directory / name
        if name.startswith("run-"):
            _remove_dead_in(path)
        elif name.startswith("taskmanager-") and not name.endswith(LOCK_SUFFIX):
            _remove_if_dead(path)


def _remove_dead_in(directory: Path) -> None:
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return
    for name in names:
        if not name.endswith(LOCK_SUFFIX):
            _remove_if_dead(directory / name)
    with contextlib.suppress(OSError):  # not empty: a live host, or one starting
        os.rmdir(directory)


def _remove_if_dead(path: Path) -> None:
    """Remove the socket at ``path`` and its lock if no live process holds the lock."""
    lock_path = path.with_name(path.name + LOCK_SUFFIX)
    try:
        lock = os.open(lock_path, _FLAGS)
    except FileNotFoundError:
        return  # a listener removing its files, or one about to claim the name: not ours
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # Another sweep may have removed this lock file, and a listener claimed the name
        # anew, since it was opened: only a lock on the file at the path is the name's.
        if os.stat(lock_path).st_ino != os.fstat(lock).st_ino:
            return
        for name in (path, lock_path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)
    except (BlockingIOError, FileNotFoundError):
        return  # held: alive; or removed meanwhile
    finally:
        os.close(lock)
