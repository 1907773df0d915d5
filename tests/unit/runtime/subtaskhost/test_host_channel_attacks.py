"""Attacks on the channels between tasks, the task manager and subtask hosts.

Another local user (``nobody``) can neither reach the sockets nor take their names; a listener
that does not hold the run's key never sees a frame of the task; the task manager reads every
caller as it comes, with a deadline and a size cap, and starts no more hosts than a run has
subtasks. The hosts are real processes (see host_processes).
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import threading
import time

import pytest
from host_processes import host_pid, new_run
from local_attacker import NOBODY, as_nobody, needs_another_user, start_as_nobody

from lockgate.core.fs.private_directory import UnsafeDirectoryError
from lockgate.runtime.messages import socket_directory
from lockgate.runtime.messages.channel_auth import (
    MAGIC,
    NONCE_BYTES,
    PeerRefused,
    authenticate_listener,
)
from lockgate.runtime.messages.host_protocol import FrameKind
from lockgate.runtime.messages.socket_directory import ExclusiveListener
from lockgate.runtime.sparktask.host_client import connect_host
from lockgate.runtime.taskmanager import task_manager

TRY_CONNECT = """
import socket, sys
for path in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        print("connected", path)
    except OSError as exc:
        print("refused", path, exc.errno)
"""


@needs_another_user
def test_another_user_can_neither_connect_nor_bind_a_name(run, daemon):
    host_pid(run, 0, 0)
    host = socket_directory.host_path(run.run, "", 0, 0)
    manager = socket_directory.task_manager_path(daemon.pid)
    squat = socket_directory.host_path(run.run, "", 0, 1)

    connected = as_nobody(TRY_CONNECT, str(host), str(manager))
    bound = as_nobody(
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n    s.bind(sys.argv[1]); s.listen(); print('bound')\n"
        "except OSError as exc:\n    print('refused', exc.errno)\n",
        str(squat),
    )

    assert connected.stdout.split("\n")[:2] == [
        f"refused {host} 13",  # EACCES: the directory is this user's alone
        f"refused {manager} 13",
    ], connected.stderr
    assert bound.stdout.strip() == "refused 13", bound.stderr
    assert host_pid(run, 0, 1) > 0  # the name was free for the host


@needs_another_user
def test_a_listener_of_another_user_is_refused_before_anything_is_sent(open_dir):
    """Where a socket could be reached (a directory nobody made), the peer's uid decides."""
    path = open_dir / "host"
    listener = as_nobody_listener(path)
    try:
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(str(path))
        with sock, pytest.raises(PeerRefused, match=f"uid {NOBODY}"):
            authenticate_listener(sock, new_run().key, "the host at " + str(path))
        received = listener.communicate(timeout=10)[0]
    finally:
        listener.kill()
    assert received.strip() == "0 bytes"  # the task sent it nothing, not even its nonce


def as_nobody_listener(path):
    """A listener of nobody's at ``path`` that prints how many bytes its first caller sent."""
    process = start_as_nobody(
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen()\n"
        "print('ready', flush=True)\n"
        "c, _ = s.accept(); c.settimeout(2)\n"
        "data = b''\n"
        "try:\n"
        "    while chunk := c.recv(4096): data += chunk\n"
        "except OSError: pass\n"
        "print(len(data), 'bytes', flush=True)\n",
        str(path),
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready", process.stderr
    return process


def test_a_listener_without_the_runs_key_sees_no_frame(run, daemon):
    """A process that took a host's name (here: this user's, the only one who can) answers
    the handshake without the key: the task refuses it and sends it nothing else."""
    path = socket_directory.host_path(run.run, "", 2, 0)
    squatter = ExclusiveListener.claim(path)
    assert squatter is not None
    received: list[bytes] = []

    def answer() -> None:
        conn, _ = squatter.socket.accept()
        with conn:
            conn.settimeout(5)
            data = conn.recv(len(MAGIC) + NONCE_BYTES)
            conn.sendall(os.urandom(2 * NONCE_BYTES))  # a nonce, and a proof it cannot make
            time.sleep(0.5)
            received.append(data + conn.recv(1 << 16))

    thread = threading.Thread(target=answer)
    thread.start()
    try:
        with pytest.raises(PeerRefused, match="does not hold this run's key"):
            connect_host(run, 2, 0)
        thread.join(10)
    finally:
        squatter.close()
    assert received[0].startswith(MAGIC)
    assert len(received[0]) == len(MAGIC) + NONCE_BYTES  # then nothing: no START, no graph


def test_a_host_refuses_a_caller_without_the_runs_key(run):
    pid = host_pid(run, 0, 0)
    path = socket_directory.host_path(run.run, "", 0, 0)
    sock = socket_directory.connect(path)
    assert sock is not None
    with sock:
        sock.settimeout(10)
        sock.sendall(MAGIC + os.urandom(NONCE_BYTES))
        assert len(sock.recv(2 * NONCE_BYTES, socket.MSG_WAITALL)) == 2 * NONCE_BYTES
        sock.sendall(os.urandom(NONCE_BYTES))  # a wrong proof, then a release
        with contextlib.suppress(BrokenPipeError):
            sock.sendall(struct.pack(">BQ", FrameKind.RELEASE, 0))
        assert closed(sock)  # without an answer

    assert host_pid(run, 0, 0) == pid  # not released: it still serves the run's tasks


def closed(sock: socket.socket) -> bool:
    """The peer closed ``sock`` (a reset: it left what was sent unread)."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_a_silent_caller_does_not_hold_up_the_task_manager(run, daemon, monkeypatch):
    host_pid(run, 0, 0)  # the task manager is up
    path = socket_directory.task_manager_path(daemon.pid)
    idle = [socket_directory.connect(path) for _ in range(20)]
    half = socket_directory.connect(path)
    assert half is not None
    half.sendall(struct.pack(">BQ", FrameKind.SPAWN, 100) + b"{")  # and never the rest
    try:
        started = time.monotonic()
        assert host_pid(run, 1, 0) > 0
        assert time.monotonic() - started < task_manager.REQUEST_TIMEOUT_S
        # every one of them is dropped at its deadline
        for sock in [*idle, half]:
            assert sock is not None
            sock.settimeout(task_manager.REQUEST_TIMEOUT_S + 10)
            assert closed(sock)
    finally:
        for sock in [*idle, half]:
            if sock is not None:
                sock.close()


def test_the_task_manager_drops_a_request_larger_than_its_cap(run, daemon):
    host_pid(run, 0, 0)
    sock = socket_directory.connect(socket_directory.task_manager_path(daemon.pid))
    assert sock is not None
    with sock:
        sock.settimeout(10)
        sock.sendall(struct.pack(">BQ", FrameKind.SPAWN, 1 << 40))  # a terabyte, it says
        assert closed(sock)
    assert host_pid(run, 0, 1) > 0


def test_a_run_gets_no_more_hosts_than_it_has_subtasks(daemon):
    run = new_run(subtasks=2)
    assert host_pid(run, 0, 0) and host_pid(run, 0, 1)

    with pytest.raises(RuntimeError, match=r"refused: run .* has its 2 hosts here already"):
        connect_host(run, 1, 0)
    assert host_pid(run, 0, 1)  # the ones it has still serve it


@needs_another_user
def test_a_sockets_directory_another_user_made_first_is_refused(open_dir, monkeypatch):
    shared = open_dir
    made = as_nobody(
        "import os, sys; os.mkdir(sys.argv[1], 0o777); os.chmod(sys.argv[1], 0o777)",
        str(shared / f"lockgate-{os.getuid()}"),
    )
    assert made.returncode == 0, made.stderr
    monkeypatch.setattr(socket_directory, "MACHINE_TEMP", shared)

    with pytest.raises(UnsafeDirectoryError, match=f"belongs to uid {NOBODY}"):
        connect_host(new_run(), 0, 0)
