"""``daemon`` and ``run``: real subtask hosts for a test (see host_processes)."""

from __future__ import annotations

import subprocess

import pytest
from host_processes import new_run

from lockgate.runtime.sparktask import host_client
from lockgate.runtime.sparktask.host_client import release_hosts


@pytest.fixture
def daemon(monkeypatch):
    """Stands for the executor's Python daemon, the parent of the worker that starts hosts
    (here the test process): the task manager and the hosts end with it."""
    process = subprocess.Popen(["sleep", "600"])
    monkeypatch.setattr(host_client.os, "getppid", lambda: process.pid)
    yield process
    process.kill()
    process.wait()


@pytest.fixture
def run(daemon):
    access = new_run()
    yield access
    release_hosts(access, timeout_s=5)
