"""CPU time of a process tree, sampled from /proc (Linux), for the benchmarks' ``cores_busy``.

The tree is a root process (by default this one: the driver Python) and all its
descendants: with local Spark, the Spark JVM that PySpark started, the PySpark daemon the
JVM forked and the Python workers the daemon forked, and any process those start. It also
holds every process in the process group of a descendant that leads one: lockgate's task
manager and subtask hosts are adopted by init (they outlive the worker that starts them)
but stay in the group of the PySpark daemon that forked that worker.

The CPU time of the tree is the sum, over every process ever seen in it, of its own
``utime + stime`` (``/proc/<pid>/stat``) when last read: a process that exits keeps what it
used up to the last sample before its exit (at most one interval short). Children's times
(``cutime``) are not used: lockgate's task manager ignores SIGCHLD, so the times of the
hosts it forks are never added to its own when they exit.

``TreeCpu`` samples that total in a thread every ``interval_s`` (20 ms): it re-reads the
whole of /proc to find the tree's members every ``rescan_every`` samples (about 1 ms for 100
processes) and only the known members' stat files in between (microseconds), so that the
sampler itself costs little of the CPU time it measures (it runs in the root process, so its
own cost is counted). A process born between two rescans is counted, with all the CPU time
it used since it started, from the rescan that finds it. ``cpu_seconds(t0, t1)`` interpolates
linearly between the samples around ``t0`` and ``t1`` (``time.time()`` values); with 20 ms
samples and 10 ms clock ticks the error at each end is a few tens of CPU milliseconds.
"""

from __future__ import annotations

import bisect
import os
import re
import threading
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_LOCAL_MASTER = re.compile(r"^local(?:\[(\*|\d+)(?:,\s*\d+)?\])?$")


def session_cores(master: str, default_parallelism: int) -> int:
    """Cores a Spark session uses: N of ``local[N]`` or ``local[N,F]``, every core of the
    machine for ``local[*]``, 1 for ``local``; otherwise Spark's default parallelism (the
    executors' cores as the scheduler counts them)."""
    match = _LOCAL_MASTER.match(master.strip())
    if match is None:
        return max(1, default_parallelism)
    threads = match.group(1)
    if threads is None:
        return 1
    if threads == "*":
        return os.cpu_count() or 1
    return int(threads)


def _stat(pid: int) -> tuple[int, int, int, int] | None:
    """(parent pid, process group, start time, own CPU clock ticks) of a process, or None
    if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # after "pid (comm)": state ppid pgrp ... utime(11) stime(12) ... starttime(19)
    return int(fields[1]), int(fields[2]), int(fields[19]), int(fields[11]) + int(fields[12])


def tree_pids(root: int) -> list[int]:
    """``root``, all its descendants, and the members of the process groups they lead,
    from one pass over /proc."""
    children: dict[int, list[int]] = {}
    groups: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            pid = int(entry.name)
            stat = _stat(pid)
            if stat is not None:
                children.setdefault(stat[0], []).append(pid)
                groups.setdefault(stat[1], []).append(pid)
    found, pending = set(), [root]
    while pending:
        pid = pending.pop()
        if pid in found:
            continue
        found.add(pid)
        pending.extend(children.get(pid, ()))
        if pid != root:
            pending.extend(groups.get(pid, ()))  # the group this process leads, if any
    return sorted(found)


class _Ledger:
    """Each process's own CPU ticks when last read, by (pid, start time): a pid the kernel
    reuses is another process."""

    def __init__(self) -> None:
        self.ticks: dict[tuple[int, int], int] = {}

    def read(self, pids: list[int]) -> float:
        for pid in pids:
            stat = _stat(pid)
            if stat is not None:
                self.ticks[(pid, stat[2])] = stat[3]
        return sum(self.ticks.values()) / CLOCK_TICKS


class TreeCpu:
    """Samples the CPU time of a process tree in a thread while in a ``with`` block."""

    def __init__(self, root: int | None = None, interval_s: float = 0.02, rescan_every: int = 25):
        self.root = os.getpid() if root is None else root
        self.interval_s = interval_s
        self.rescan_every = rescan_every
        self.times: list[float] = []
        self.cpu: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.available = os.path.isdir(f"/proc/{self.root}")

    def _run(self) -> None:
        pids: list[int] = []
        ledger = _Ledger()
        sample = 0
        while True:
            if sample % self.rescan_every == 0:
                pids = tree_pids(self.root)
            cpu = ledger.read(pids)
            self.times.append(time.time())
            self.cpu.append(cpu)
            sample += 1
            if self._stop.wait(self.interval_s):
                break
        # a last full sample, so that a window ending now is covered
        self.times.append(time.time())
        self.cpu.append(ledger.read(tree_pids(self.root)))

    def __enter__(self) -> TreeCpu:
        if self.available:
            self._thread = threading.Thread(target=self._run, name="tree-cpu", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _at(self, when: float) -> float:
        times, cpu = self.times, self.cpu
        i = bisect.bisect_left(times, when)
        if i == 0:
            return cpu[0]
        if i >= len(times):
            return cpu[-1]
        t0, t1 = times[i - 1], times[i]
        if t1 <= t0:
            return cpu[i]
        return cpu[i - 1] + (cpu[i] - cpu[i - 1]) * (when - t0) / (t1 - t0)

    def cpu_seconds(self, start: float, end: float) -> float:
        """CPU seconds the tree used between two ``time.time()`` instants (nan when /proc
        is not there or the window is not inside the sampled time). A window that ended
        just now waits for the sample after it."""
        deadline = time.monotonic() + 10 * self.interval_s
        while self.times and end > self.times[-1] and not self._stop.is_set():
            if time.monotonic() > deadline:
                break
            time.sleep(self.interval_s)
        if len(self.times) < 2 or start < self.times[0] or end > self.times[-1]:
            return float("nan")
        return self._at(end) - self._at(start)

    def cores_busy(self, start: float, end: float, cores: int) -> float:
        """Fraction of ``cores`` the tree kept busy between ``start`` and ``end``."""
        if end <= start or cores <= 0:
            return float("nan")
        return self.cpu_seconds(start, end) / ((end - start) * cores)
