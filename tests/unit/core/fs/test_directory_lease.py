"""Leases on job directories: a sweep removes the directories of jobs whose processes died
(killed with SIGKILL, so no cleanup ran) and nothing a live process holds, nor anything
that is not a leased job directory."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

from lockgate.core.fs.directory_lease import LEASE, DirectoryLease, sweep_orphans

HOLD = """
import sys, time
from pathlib import Path
from lockgate.core.fs.directory_lease import DirectoryLease
DirectoryLease.take(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(600)
"""


def job_dir(parent: Path) -> Path:
    return parent / uuid.uuid4().hex


def killed_holder(directory) -> None:
    """A process that leased ``directory`` and was killed."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(directory)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "held"
    process.send_signal(signal.SIGKILL)
    process.wait()


def test_a_sweep_removes_directories_of_dead_jobs_only(tmp_path):
    dead, alive = job_dir(tmp_path), job_dir(tmp_path)
    killed_holder(dead)
    (dead / "state").mkdir()
    lease = DirectoryLease.take(alive)
    unleased = job_dir(tmp_path)
    unleased.mkdir()  # no lease file: made by something else, or being made
    other = tmp_path / "not-a-job"
    other.mkdir()
    (other / LEASE).write_text("")

    assert sweep_orphans(tmp_path) == [dead]

    assert not dead.exists()
    assert alive.is_dir() and unleased.is_dir() and other.is_dir()
    lease.release()
    assert sweep_orphans(tmp_path) == [alive]


def test_a_lease_taken_while_a_sweep_removes_the_directory_holds_a_new_one(tmp_path):
    """The sweep locks, the taker waits, the sweep removes the directory: the taker leases
    the directory made anew, which the next sweep leaves alone."""
    directory = job_dir(tmp_path)
    killed_holder(directory)
    sweeper = os.open(directory / LEASE, os.O_RDWR)
    fcntl.flock(sweeper, fcntl.LOCK_EX)  # as sweep_orphans holds it while it removes
    taken: list[DirectoryLease] = []
    taker = threading.Thread(target=lambda: taken.append(DirectoryLease.take(directory)))
    taker.start()
    taker.join(0.3)
    assert taker.is_alive(), "the lease waits while the sweep holds the lock"
    shutil.rmtree(directory)
    os.close(sweeper)
    taker.join(10)

    assert taken and (directory / LEASE).exists()
    assert sweep_orphans(tmp_path) == []
    taken[0].release()


def test_a_sweep_leaves_its_callers_own_directory_and_other_machines_leases(tmp_path):
    """A job between two runs holds no lease on its own directory; on a network file
    system, a lease of another machine's process is not this machine's to judge."""
    own, elsewhere = job_dir(tmp_path), job_dir(tmp_path)
    for directory in (own, elsewhere):
        killed_holder(directory)
    (elsewhere / LEASE).write_bytes(b"another-machine")

    assert sweep_orphans(tmp_path, keep=own.name) == []
    assert own.is_dir() and elsewhere.is_dir()
