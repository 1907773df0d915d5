"""Which Spark executor, on which Spark host, runs this process's Python code.

PySpark tells its Python workers neither; the executor's JVM has both on its command line
(``--executor-id N --hostname H``, as the cluster manager launched it). A Python worker is a
child of PySpark's daemon, itself a child of that JVM; in local mode the JVM is the
driver's. Linux only (``/proc``), like the subtask hosts' sockets.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _java_args(pid: int) -> list[bytes] | None:
    args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return args if os.path.basename(args[0]) == b"java" else None


def executor_jvm(pid: int | None = None) -> tuple[int, list[bytes]] | None:
    """The pid and command line of the JVM whose Python code this process runs: its nearest
    Java ancestor (worker, PySpark's daemon, the JVM), or else the parent of the daemon,
    which leads the process group (a process that left the daemon's tree, such as a subtask
    host, stays in its group). None where ``/proc`` cannot tell (not Linux)."""
    start = os.getpid() if pid is None else pid
    try:
        ancestor = start
        for _ in range(4):
            ancestor = _parent(ancestor)
            if ancestor <= 1:
                break
            args = _java_args(ancestor)
            if args is not None:
                return ancestor, args
        leader_parent = _parent(os.getpgid(start))
        args = _java_args(leader_parent) if leader_parent > 1 else None
        return (leader_parent, args) if args is not None else None
    except (OSError, ValueError, IndexError):
        return None


def executor_id(pid: int | None = None) -> str | None:
    """The id of the executor whose Python code this process runs, from its JVM's command
    line (``--executor-id N`` on a cluster); ``driver`` when that JVM is the driver's (local
    mode). None where ``/proc`` cannot tell."""
    jvm = executor_jvm(pid)
    if jvm is None:
        return None
    args = jvm[1]
    if b"--executor-id" in args[:-1]:
        return args[args.index(b"--executor-id") + 1].decode()
    return "driver"


@functools.cache
def spark_host() -> str:
    """The host this process's executor registered with Spark (what Spark's preferred
    locations name), "" in local mode or where ``/proc`` cannot tell. Cached: a Python
    worker stays with its executor."""
    jvm = executor_jvm()
    if jvm is None or b"--hostname" not in jvm[1][:-1]:
        return ""
    args = jvm[1]
    return args[args.index(b"--hostname") + 1].decode()
