"""Subtask host processes: one per subtask and machine, released by the driver, gone with
the executor's Python daemon, killed when they do not answer a release.

The hosts here are real processes started the way a Spark task starts them; no epoch runs
through them (the integration tests run every job through hosts).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

import pytest

from lockgate.runtime.messages import host_protocol as protocol
from lockgate.runtime.sparktask import host_client
from lockgate.runtime.sparktask.host_client import (
    _listening_names,
    connect_host,
    release_hosts,
)


def new_run() -> str:
    return f"{uuid.uuid4().hex}#0"


def hosts_of(run: str) -> set[str]:
    return _listening_names(protocol.run_prefix(run))


def host_pid(run: str, vertex: int, index: int) -> int:
    sock = connect_host(run, vertex, index)
    with sock:
        return protocol.peer_credentials(sock)[0]


def wait_until(condition, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # reaped since the kill(0), or mid-read
        return False


@pytest.fixture(autouse=True)
def daemon(monkeypatch):
    """Stands for the executor's Python daemon, the parent of the worker that starts hosts
    (here the test process): the task manager and the hosts end with it."""
    process = subprocess.Popen(["sleep", "600"])
    monkeypatch.setattr(host_client.os, "getppid", lambda: process.pid)
    yield process
    process.kill()
    process.wait()


@pytest.fixture
def run():
    name = new_run()
    yield name
    release_hosts(name, timeout_s=5)


def task_manager_pid(daemon) -> int:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with sock:
        sock.connect(protocol.task_manager_name(daemon.pid))
        return protocol.peer_credentials(sock)[0]


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
    assert hosts_of(run) == {protocol.socket_name(protocol.HostRequest(run, 3, 1, ""))}


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
    manager = task_manager_pid(daemon)
    assert all(alive(pid) for pid in [*hosts, manager])

    daemon.kill()

    assert wait_until(lambda: not any(alive(pid) for pid in [*hosts, manager]))
    assert hosts_of(run) == set()


def test_one_task_manager_per_executor_starts_every_host(run, daemon):
    hosts = [host_pid(run, vertex, 0) for vertex in range(3)]
    manager = task_manager_pid(daemon)

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
