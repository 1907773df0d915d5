"""What a Spark task and the subtask host it drives say to each other over their socket.

A frame is one byte of kind, four of length, then the payload. Control frames carry typed
JSON records; data frames carry a small binary header and the records' bytes, pickled once
by the subtask that produced them (they pass through the task untouched).

The task speaks first (``START``); the host answers every frame of the task with the output
it produced and then ``READY``, ``DONE`` or ``FAILED``, so neither side ever waits on a
full socket buffer while the other does.
"""

from __future__ import annotations

import json
import socket
import struct
from dataclasses import dataclass
from typing import Any

from lockgate.common.records import RecordFormatError, envelope, field, open_envelope

VERSION = 3

# Task -> host
START = 1  # EpochStart
GRAPH = 2  # the cloudpickled job graph, when the host asked for it
SOURCE = 3  # one split assignment: JSON length, assignment JSON, pickled payload
BATCH = 4  # one shuffled batch: BATCH_HEADER, the sending attempt, the pickled batch
FINISH = 5  # the epoch's input is complete
RELEASE = 6  # close the subtask and exit (the run ended)
# Task -> task manager
SPAWN = 7  # HostRequest
# Task manager (or the host it started) -> task
SPAWNED = 17  # HostStarted
# Host -> task
NEED_GRAPH = 11
OUTPUT = 12  # OUTPUT_HEADER and the pickled batch (an end-of-epoch marker: its ChannelEnd)
READY = 13  # the last frame is consumed; send the next one
DONE = 14  # EpochDone
FAILED = 15  # HostFailure
RELEASED = 16  # HostReleased

_FRAME = struct.Struct(">BI")
BATCH_HEADER = struct.Struct(">iiiH")  # edge, sender, sequence, length of the attempt
OUTPUT_HEADER = struct.Struct(">iii")  # target, edge, sequence
_SOURCE_HEADER = struct.Struct(">I")

START_FORMAT = "lockgate-epoch-start"
DONE_FORMAT = "lockgate-epoch-done"
FAILURE_FORMAT = "lockgate-host-failure"
RELEASED_FORMAT = "lockgate-host-released"
REQUEST_FORMAT = "lockgate-host-request"
STARTED_FORMAT = "lockgate-host-started"


class HostConnectionLost(ConnectionError):
    """The other side of a task-host connection went away mid-conversation."""


def socket_name(request: HostRequest) -> str:
    """The abstract Unix socket of a subtask's host: one per Spark host and subtask of a
    run.

    Abstract names (Linux) vanish with the process that bound them, and binding one is
    atomic, so two tasks that start the same host at once end up with one host. The Spark
    host is in the name so that a host serves only the tasks Spark placed on its Spark host,
    the place the driver then asks for (two Spark hosts on one machine share the namespace).
    """
    return f"{run_prefix(request.run)}{request.location}/{request.vertex}/{request.index}"


def task_manager_name(daemon_pid: int) -> str:
    """The abstract Unix socket of the task manager of the executor whose Python daemon
    (the parent of its Python workers) has pid ``daemon_pid``."""
    return f"\0lockgate/taskmanager/{daemon_pid}"


_PEER_CREDENTIALS = struct.Struct("3i")  # pid, uid, gid (SO_PEERCRED)


def peer_credentials(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a connected Unix socket."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEER_CREDENTIALS.size)
    pid, uid, _ = _PEER_CREDENTIALS.unpack(raw)
    return int(pid), int(uid)


def run_prefix(run: str) -> str:
    return f"\0lockgate/{run}/"


# Frames ------------------------------------------------------------------------------------


def send(sock: socket.socket, kind: int, *parts: bytes) -> None:
    length = sum(len(part) for part in parts)
    header = _FRAME.pack(kind, length)
    sent = sock.sendmsg([header, *parts])  # no copy of the parts into one buffer
    if sent < len(header) + length:  # a signal cut the send short
        sock.sendall(b"".join([header, *parts])[sent:])


def send_record(sock: socket.socket, kind: int, record: Any) -> None:
    """Send a control record (a dataclass with ``to_json``) as a JSON frame."""
    send(sock, kind, json.dumps(record.to_json(), separators=(",", ":")).encode())


class FrameReader:
    """Reads frames from a socket through a buffer (few system calls for small frames)."""

    def __init__(self, sock: socket.socket):
        self.stream = sock.makefile("rb", buffering=1 << 16)

    def read(self) -> tuple[int, bytes]:
        header = self.stream.read(_FRAME.size)
        if len(header) < _FRAME.size:
            raise HostConnectionLost("the connection closed between frames")
        kind, length = _FRAME.unpack(header)
        payload = self.stream.read(length)
        if len(payload) < length:
            raise HostConnectionLost(f"the connection closed inside a frame of kind {kind}")
        return kind, payload

    def close(self) -> None:
        self.stream.close()


def load_json(payload: bytes, what: str) -> Any:
    try:
        return json.loads(payload)
    except ValueError:
        raise RecordFormatError(f"{what} is not JSON ({len(payload)} bytes)") from None


def source_frame(assignment: bytes, payload: bytes) -> tuple[bytes, bytes, bytes]:
    return _SOURCE_HEADER.pack(len(assignment)), assignment, payload


def split_source_frame(frame: bytes) -> tuple[bytes, bytes]:
    (length,) = _SOURCE_HEADER.unpack_from(frame)
    start = _SOURCE_HEADER.size
    return frame[start : start + length], frame[start + length :]


# Control records ---------------------------------------------------------------------------


@dataclass(frozen=True)
class EpochStart:
    """A task hands its subtask's host one epoch: the task's descriptor, the subtask's
    restore (used when the host lacks that very version) and the attempt's names."""

    descriptor: str  # TaskDeploymentDescriptor JSON
    python_path: list[str]  # the task's sys.path: Spark adds a job's --py-files to it
    restore: str  # SubtaskRestore JSON
    index: int
    attempt: str  # this attempt's name: its files, and the version it leaves behind
    attempt_number: int  # Spark's attempt number of the task (RuntimeContext)

    def to_json(self) -> dict[str, Any]:
        return envelope(
            START_FORMAT,
            VERSION,
            {
                "descriptor": self.descriptor,
                "python_path": self.python_path,
                "restore": self.restore,
                "index": self.index,
                "attempt": self.attempt,
                "attempt_number": self.attempt_number,
            },
        )

    @staticmethod
    def from_json(raw: Any) -> EpochStart:
        where = "the start of an epoch sent to a subtask host"
        body = open_envelope(raw, START_FORMAT, VERSION, where)
        python_path = field(body, "python_path", list, where)
        if not all(isinstance(entry, str) for entry in python_path):
            raise RecordFormatError(f"{where}: field 'python_path' must list directories")
        return EpochStart(
            descriptor=field(body, "descriptor", str, where),
            python_path=python_path,
            restore=field(body, "restore", str, where),
            index=field(body, "index", int, where),
            attempt=field(body, "attempt", str, where),
            attempt_number=field(body, "attempt_number", int, where),
        )


@dataclass(frozen=True)
class EpochDone:
    """The host finished the epoch: its ack is written (which reports the rest)."""

    closed: bool  # end of input: the subtask is closed and the host exits

    def to_json(self) -> dict[str, Any]:
        return envelope(DONE_FORMAT, VERSION, {"closed": self.closed})

    @staticmethod
    def from_json(raw: Any) -> EpochDone:
        where = "the end of an epoch reported by a subtask host"
        body = open_envelope(raw, DONE_FORMAT, VERSION, where)
        return EpochDone(field(body, "closed", bool, where))


@dataclass(frozen=True)
class HostFailure:
    """The epoch failed in the host; ``report`` is the error's traceback, which the task
    raises again so that Spark's error names the cause."""

    report: str

    def to_json(self) -> dict[str, Any]:
        return envelope(FAILURE_FORMAT, VERSION, {"report": self.report})

    @staticmethod
    def from_json(raw: Any) -> HostFailure:
        where = "a failure reported by a subtask host"
        body = open_envelope(raw, FAILURE_FORMAT, VERSION, where)
        return HostFailure(field(body, "report", str, where))


@dataclass(frozen=True)
class HostReleased:
    """The host closed its subtask (``close_error`` if the user's close() raised) and exits."""

    held_subtask: bool
    close_error: str | None

    def to_json(self) -> dict[str, Any]:
        return envelope(
            RELEASED_FORMAT,
            VERSION,
            {"held_subtask": self.held_subtask, "close_error": self.close_error},
        )

    @staticmethod
    def from_json(raw: Any) -> HostReleased:
        where = "the release reported by a subtask host"
        body = open_envelope(raw, RELEASED_FORMAT, VERSION, where)
        return HostReleased(
            field(body, "held_subtask", bool, where),
            field(body, "close_error", (str, type(None)), where),
        )


@dataclass(frozen=True)
class HostRequest:
    """A task asks its executor's task manager for the host of a subtask."""

    run: str
    vertex: int
    index: int
    location: str  # the executor's Spark host ("" in local mode)

    def to_json(self) -> dict[str, Any]:
        body = {
            "run": self.run,
            "vertex": self.vertex,
            "index": self.index,
            "location": self.location,
        }
        return envelope(REQUEST_FORMAT, VERSION, body)

    @staticmethod
    def from_json(raw: Any) -> HostRequest:
        where = "a request for a subtask host"
        body = open_envelope(raw, REQUEST_FORMAT, VERSION, where)
        return HostRequest(
            field(body, "run", str, where),
            field(body, "vertex", int, where),
            field(body, "index", int, where),
            field(body, "location", str, where),
        )


@dataclass(frozen=True)
class HostStarted:
    """The answer to a HostRequest: "ready" (listening), "exists" (another task's request
    started it first), or what went wrong."""

    status: str

    def to_json(self) -> dict[str, Any]:
        return envelope(STARTED_FORMAT, VERSION, {"status": self.status})

    @staticmethod
    def from_json(raw: Any) -> HostStarted:
        where = "the answer to a request for a subtask host"
        body = open_envelope(raw, STARTED_FORMAT, VERSION, where)
        return HostStarted(field(body, "status", str, where))
