"""Both ends of a channel between a Spark task, the task manager and a subtask host prove who
they are before the first frame.

Each end checks the other's uid, which the kernel reports for a Unix socket
(``SO_PEERCRED``) and nobody can forge. Between a task and a subtask host, the two then prove
that they hold the run's key, which the driver hands its tasks through Spark (and a task hands
the host it starts): each sends a fresh nonce, and each answers the other's with an HMAC of
both under the key, so the key never crosses the socket and an answer cannot be replayed or
reflected. It costs two round trips per connection, nothing per record.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
import struct

MAGIC = b"lockgate-channel-1\n"  # what a caller sends first: the handshake's version
NONCE_BYTES = 32
HANDSHAKE_TIMEOUT_S = 10.0  # for a peer to answer: a silent peer never holds the other
_CREDENTIALS = struct.Struct("3i")  # pid, uid, gid (SO_PEERCRED)


class PeerRefused(RuntimeError):
    """The process at the other end of a channel failed a check: nothing it sent is used."""


class HandshakeTimeout(PeerRefused, TimeoutError):
    """The peer did not answer the handshake in time (stuck, or not lockgate's)."""


class HandshakeClosed(PeerRefused, ConnectionError):
    """The peer closed the connection during the handshake (a host that is exiting)."""


def peer_credentials(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a connected Unix socket."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CREDENTIALS.size)
    pid, uid, _ = _CREDENTIALS.unpack(raw)
    return int(pid), int(uid)


def check_peer_user(sock: socket.socket, what: str) -> int:
    """The pid of the peer, if it runs as this user; else PeerRefused naming ``what``."""
    pid, uid = peer_credentials(sock)
    if uid != os.getuid():
        raise PeerRefused(
            f"{what} is a process of uid {uid} (pid {pid}), not of this user (uid {os.getuid()})"
        )
    return pid


def authenticate_listener(
    sock: socket.socket, key: str, what: str, timeout: float | None = HANDSHAKE_TIMEOUT_S
) -> int:
    """The caller's side: check the listener ``what`` holds ``key`` (waiting ``timeout``
    seconds at most for its answer); returns its pid."""
    pid = check_peer_user(sock, what)
    secret = bytes.fromhex(key)
    before = sock.gettimeout()
    sock.settimeout(timeout)
    try:
        mine = os.urandom(NONCE_BYTES)
        sock.sendall(MAGIC + mine)
        answer = _receive(sock, 2 * NONCE_BYTES, what, timeout)
        theirs, proof = answer[:NONCE_BYTES], answer[NONCE_BYTES:]
        if not hmac.compare_digest(proof, _proof(secret, b"listener", mine, theirs)):
            raise PeerRefused(f"{what} does not hold this run's key")
        sock.sendall(_proof(secret, b"caller", theirs, mine))
    finally:
        sock.settimeout(before)
    return pid


def authenticate_caller(sock: socket.socket, key: str, what: str) -> int:
    """The listener's side: check the caller ``what`` holds ``key``; returns its pid."""
    pid = check_peer_user(sock, what)
    secret = bytes.fromhex(key)
    before = sock.gettimeout()
    sock.settimeout(HANDSHAKE_TIMEOUT_S)
    try:
        hello = _receive(sock, len(MAGIC) + NONCE_BYTES, what, HANDSHAKE_TIMEOUT_S)
        if not hello.startswith(MAGIC):
            raise PeerRefused(f"{what} did not open with lockgate's handshake")
        theirs, mine = hello[len(MAGIC) :], os.urandom(NONCE_BYTES)
        sock.sendall(mine + _proof(secret, b"listener", theirs, mine))
        proof = _receive(sock, NONCE_BYTES, what, HANDSHAKE_TIMEOUT_S)
        if not hmac.compare_digest(proof, _proof(secret, b"caller", mine, theirs)):
            raise PeerRefused(f"{what} does not hold this run's key")
    finally:
        sock.settimeout(before)
    return pid


def _proof(secret: bytes, role: bytes, challenge: bytes, response: bytes) -> bytes:
    return hmac.new(secret, role + challenge + response, hashlib.sha256).digest()


def _receive(sock: socket.socket, size: int, what: str, timeout: float | None) -> bytes:
    data = b""
    try:
        while len(data) < size:
            chunk = sock.recv(size - len(data))
            if not chunk:
                raise HandshakeClosed(f"{what} closed the connection during the handshake")
            data += chunk
    except TimeoutError:
        raise HandshakeTimeout(
            f"{what} did not answer the handshake within {timeout:.0f} s"
        ) from None
    return data
