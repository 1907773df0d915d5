"""Subtask host processes: one per subtask and machine, released by the driver, gone with
the executor's Python daemon, killed when they do not answer a release.

The hosts here are real processes started the way a Spark task starts them; no epoch runs
through them (the integration tests run every job through hosts).
"""

from __future__ import annotations

import os
import signal
import sys
import threading

import pytest
from host_processes import alive, host_pid, hosts_of, new_run, task_manager_pid, wait_until

from lockgate.runtime.messages import socket_directory
from lockgate.runtime.sparktask.host_client import connect_host, release_hosts


def test_tasks_that_start_the_same_host_at_once_share_one_host(run):
    pids: list[int] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            pids.append(host_pid(run, 3, 1))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert len(set(pids)) == 1
    assert hosts_of(run) == {socket_directory.host_path(run.run, "", 3, 1).name}


def test_a_release_ends_every_host_of_the_run_and_no_other(run):
    other = new_run()
    mine = [host_pid(run, vertex, index) for vertex in (0, 1) for index in (0, 1)]
    theirs = host_pid(other, 0, 0)

    assert release_hosts(run) == []

    assert wait_until(lambda: not any(alive(pid) for pid in mine))
    assert hosts_of(run) == set()
    assert alive(theirs)
    assert release_hosts(other) == []
    assert wait_until(lambda: not alive(theirs))


def test_a_host_that_does_not_answer_a_release_is_killed(run):
    pid = host_pid(run, 0, 0)
    os.kill(pid, signal.SIGSTOP)  # as stuck as a user function that never returns

    problems = release_hosts(run, timeout_s=1)

    assert len(problems) == 1 and "killed" in problems[0]
    assert wait_until(lambda: not alive(pid))


def test_hosts_and_their_task_manager_end_with_the_executors_python_daemon(run, daemon):
    """They watch the daemon's pid: killed with SIGKILL, the daemon cannot signal its
    process group."""
    hosts = [host_pid(run, 0, index) for index in (0, 1)]
    manager = task_manager_pid(daemon.pid)
    assert all(alive(pid) for pid in [*hosts, manager])

    daemon.kill()

    assert wait_until(lambda: not any(alive(pid) for pid in [*hosts, manager]))
    assert hosts_of(run) == set()


def test_one_task_manager_per_executor_starts_every_host(run, daemon):
    hosts = [host_pid(run, vertex, 0) for vertex in range(3)]
    manager = task_manager_pid(daemon.pid)

    assert all(parent_of(pid) == manager for pid in hosts)


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().split(") ", 1)[1].split()[1])


def test_a_host_that_cannot_start_says_why(run, monkeypatch):
    monkeypatch.setattr(sys, "executable", "/bin/false")

    with pytest.raises(
        RuntimeError, match=r"task manager .* did not start: it exited without a word"
    ):
        connect_host(run, 0, 0)


def test_a_sweep_removes_what_killed_listeners_left_and_nothing_live(run, daemon):
    """An executor's Python daemon ends its process group with a signal: the socket files of
    its task manager and hosts stay behind until the next task manager's sweep."""
    killed = [host_pid(run, 0, 0), task_manager_pid(daemon.pid)]
    other = new_run()
    live = host_pid(other, 0, 0)
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not any(alive(pid) for pid in killed))
    manager = socket_directory.task_manager_path(daemon.pid)
    assert manager.exists() and hosts_of(run)

    socket_directory.sweep()

    assert not manager.exists()
    assert not socket_directory.run_directory(run.run).exists()
    assert hosts_of(other) and alive(live)
    assert host_pid(other, 0, 0) == live
