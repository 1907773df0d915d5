"""Real subtask hosts and task managers for tests, started the way a Spark task starts them:
a stand-in for the executor's Python daemon, runs with their keys, and what to ask of them."""

from __future__ import annotations

import os
import secrets
import time
import uuid

from lockgate.runtime.messages import socket_directory
from lockgate.runtime.messages.channel_auth import peer_credentials
from lockgate.runtime.messages.host_protocol import RunAccess
from lockgate.runtime.sparktask.host_client import connect_host


def new_run(subtasks: int = 16) -> RunAccess:
    return RunAccess(f"{uuid.uuid4().hex}#0", subtasks, secrets.token_hex(32))


def hosts_of(run: RunAccess) -> set[str]:
    return {path.name for path in socket_directory.run_sockets(run.run)}


def host_pid(run: RunAccess, vertex: int, index: int) -> int:
    sock = connect_host(run, vertex, index)
    with sock:
        return peer_credentials(sock)[0]


def task_manager_pid(daemon_pid: int) -> int:
    sock = socket_directory.connect(socket_directory.task_manager_path(daemon_pid))
    assert sock is not None
    with sock:
        return peer_credentials(sock)[0]


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
