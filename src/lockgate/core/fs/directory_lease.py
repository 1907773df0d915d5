"""Leases on a job's local directories, and the sweep of directories whose job died.

A driver keeps its job's work directory, and every subtask host its job's RocksDB directory,
for as long as it runs; killed (``SIGKILL``, a lost machine), it leaves them behind, and
they grow with state. So each user of such a directory holds a shared lock on its ``.lease``
file, which the kernel drops with the process. The next job that starts on the machine
removes every sibling directory of a job whose lease nobody holds: orphans live until then.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import socket
import uuid
from pathlib import Path

from fsspec.implementations.local import LocalFileSystem

from lockgate.core.fs.private_directory import private_directory
from lockgate.core.fs.storage import Storage

LEASE = ".lease"
_JOB_DIRECTORY = re.compile(r"[0-9a-f]{32}")  # a job id (JobSettings.resolve)
_FLAGS = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW
_MACHINE = socket.gethostname().encode()
_TOMBSTONE = ".removed-"


class DirectoryLease:
    """A shared lock on ``<directory>/.lease``, held until ``release`` or the process ends.
    The file names the machine (a network file system may lock per machine only: another
    machine's leases are never swept)."""

    def __init__(self, directory: Path, descriptor: int):
        self.directory = directory
        self.descriptor = descriptor

    @classmethod
    def take(cls, directory: Path) -> DirectoryLease:
        """Lease ``directory``, creating it (0700, its parents too) if missing."""
        path = directory / LEASE
        while True:
            private_directory(directory, None)
            try:
                descriptor = os.open(path, _FLAGS | os.O_CREAT, 0o600)
            except FileNotFoundError:
                continue  # a sweep moved the directory away just now
            fcntl.flock(descriptor, fcntl.LOCK_SH)  # waits while a sweep holds it
            # A sweep that held it moved the directory away: a lease on that file holds
            # nothing, so take one on the directory made anew.
            try:
                current = os.stat(path).st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(descriptor).st_ino:
                os.pwrite(descriptor, _MACHINE, 0)
                os.ftruncate(descriptor, len(_MACHINE))
                return cls(directory, descriptor)
            os.close(descriptor)

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.descriptor)


def sweep_orphans(parent: Path, keep: str | None = None) -> list[Path]:
    """Remove the job directories in ``parent`` (but ``keep``) whose lease no live process
    on this machine holds; returns them. A directory without a lease file, or not named by
    a job id, is left alone."""
    try:
        names = os.listdir(parent)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []
    removed = []
    for name in names:
        if name.startswith(_TOMBSTONE):  # a sweep died while it removed it
            shutil.rmtree(parent / name, ignore_errors=True)
        elif name != keep and _JOB_DIRECTORY.fullmatch(name) and _remove_if_orphaned(parent, name):
            removed.append(parent / name)
    return removed


def _remove_if_orphaned(parent: Path, name: str) -> bool:
    lease = parent / name / LEASE
    try:
        descriptor = os.open(lease, _FLAGS)
    except OSError:
        return False  # no lease: not a directory lockgate leases, or being created
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.stat(lease).st_ino != os.fstat(descriptor).st_ino:
            return False  # swept and leased anew since it was opened
        if os.pread(descriptor, 256, 0) != _MACHINE:
            return False  # another machine's, or a lease being written
        # Out of the way first (atomically), so that a job taking the lease meanwhile makes
        # its directory anew rather than writing into one being removed.
        tombstone = parent / f"{_TOMBSTONE}{name}-{uuid.uuid4().hex[:8]}"
        os.rename(parent / name, tombstone)
    except OSError:  # held (BlockingIOError), or moved meanwhile
        return False
    finally:
        os.close(descriptor)
    shutil.rmtree(tombstone, ignore_errors=True)
    return True


def lease_job_directory(directory: Path) -> DirectoryLease:
    """Sweep the orphaned siblings of a job's ``directory``, then lease it."""
    sweep_orphans(directory.parent, keep=directory.name)
    return DirectoryLease.take(directory)


def lease_work_directory(work: Storage) -> DirectoryLease | None:
    """Lease a job's work directory where it is local (fsspec's other file systems have no
    locks: there the directory of a killed driver stays until someone removes it)."""
    if not isinstance(work.fs, LocalFileSystem):
        return None
    try:
        return lease_job_directory(Path(work.root))
    except OSError:
        return None  # cannot be made at all: the storage check says so, naming the setting
