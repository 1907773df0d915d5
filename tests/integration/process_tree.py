"""This test process's descendants, found in /proc, for tests that kill parts of Spark's
Python side (not a test module)."""

from __future__ import annotations

import os


def processes() -> tuple[dict[int, str], dict[int, int]]:
    """Command lines and parent pids of every process this user can see."""
    commands, parents = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                commands[int(entry)] = cmdline.read().replace(b"\0", b" ").decode()
            with open(f"/proc/{entry}/stat") as stat:
                parents[int(entry)] = int(stat.read().split(") ", 1)[1].split()[1])
        except OSError:
            continue
    return commands, parents


def descends_from_us(pid: int, parents: dict[int, int]) -> bool:
    while pid > 1:
        pid = parents.get(pid, 0)
        if pid == os.getpid():
            return True
    return False


def subtask_hosts() -> list[int]:
    """The subtask hosts of this session's executor: processes forked by its task manager
    (they keep its command line). The task manager leaves its parent for init; the pid of
    the Python daemon it serves, which descends from this process, is its argument."""
    module = "lockgate.runtime.taskmanager.task_manager"
    commands, parents = processes()
    managers = set()
    for pid, command in commands.items():
        words = command.split()
        if module in words and module not in commands.get(parents[pid], ""):
            daemon = words[words.index(module) + 1]
            if daemon.isdigit() and descends_from_us(int(daemon), parents):
                managers.add(pid)
    return [pid for pid, parent in parents.items() if parent in managers]
