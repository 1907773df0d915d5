"""What a Spark task and the subtask host it drives say to each other over their socket.

A frame is one byte of kind (``FrameKind``), four of length, then the payload. Control
frames carry typed JSON records; data frames carry a small binary header and the records'
bytes, pickled once by the subtask that produced them (they pass through the task
untouched): a BATCH frame carries a ``ChannelItem``, an OUTPUT frame a ``HostOutput``, a
SOURCE frame a ``SourceSplit``.

The task speaks first (``START``); the host answers every frame of the task with the output
it produced and then ``READY``, ``DONE`` or ``FAILED``, so neither side ever waits on a
full socket buffer while the other does.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from enum import IntEnum

from lockgate.common.records import Record
from lockgate.runtime.messages.spark_items import ChannelItem, HostOutput, ItemKind, SourceSplit
from lockgate.runtime.messages.task_deployment import SubtaskRestore, TaskDeploymentDescriptor

VERSION = 4


class FrameKind(IntEnum):
    # Task -> host
    START = 1  # EpochStart
    GRAPH = 2  # the cloudpickled job graph, when the host asked for it
    SOURCE = 3  # one SourceSplit of the task's input (source_frame)
    BATCH = 4  # one ChannelItem of the task's input (batch_frame)
    FINISH = 5  # the epoch's input is complete
    RELEASE = 6  # close the subtask and exit (the run ended)
    # Task -> task manager
    SPAWN = 7  # HostRequest
    # Host -> task
    NEED_GRAPH = 11
    OUTPUT = 12  # one HostOutput (output_frame)
    READY = 13  # the last frame is consumed; send the next one
    DONE = 14  # EpochDone
    FAILED = 15  # HostFailure
    RELEASED = 16  # HostReleased
    # Task manager (or the host it started) -> task
    SPAWNED = 17  # HostStarted


_FRAME = struct.Struct(">BI")  # kind, length of the payload
_FRAME_KINDS = {kind.value: kind for kind in FrameKind}
_ITEM_KINDS = {kind.value: kind for kind in ItemKind}
# The fixed head of the data frames (the rest of a frame follows it):
_BATCH_HEAD = struct.Struct(">BiiiH")  # kind, edge, sender, sequence, length of the attempt
_OUTPUT_HEAD = struct.Struct(">Biii")  # kind, target, edge, sequence
_SOURCE_HEAD = struct.Struct(">I")  # length of the assignment's JSON

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


def send(sock: socket.socket, kind: FrameKind, *parts: bytes) -> None:
    length = sum(len(part) for part in parts)
    header = _FRAME.pack(kind, length)
    sent = sock.sendmsg([header, *parts])  # no copy of the parts into one buffer
    if sent < len(header) + length:  # a signal cut the send short
        sock.sendall(b"".join([header, *parts])[sent:])


def send_record(sock: socket.socket, kind: FrameKind, record: Record) -> None:
    """Send a control record as a JSON frame."""
    send(sock, kind, record.encode())


class FrameReader:
    """Reads frames from a socket through a buffer (few system calls for small frames)."""

    def __init__(self, sock: socket.socket):
        self.stream = sock.makefile("rb", buffering=1 << 16)

    def read(self) -> tuple[FrameKind, bytes]:
        header = self.stream.read(_FRAME.size)
        if len(header) < _FRAME.size:
            raise HostConnectionLost("the connection closed between frames")
        kind, length = _FRAME.unpack(header)
        payload = self.stream.read(length)
        if len(payload) < length:
            raise HostConnectionLost(f"the connection closed inside a frame of kind {kind}")
        try:
            return _FRAME_KINDS[kind], payload
        except KeyError:
            raise RuntimeError(f"a frame of unknown kind {kind}") from None

    def close(self) -> None:
        self.stream.close()


def batch_frame(item: ChannelItem) -> tuple[bytes, bytes, bytes]:
    """The parts of the BATCH frame of ``item``: its head, its attempt, its payload."""
    attempt = item.attempt.encode()
    head = _BATCH_HEAD.pack(item.kind, item.edge, item.sender, item.sequence, len(attempt))
    return head, attempt, item.payload


def read_batch_frame(frame: bytes) -> ChannelItem:
    kind, edge, sender, sequence, length = _BATCH_HEAD.unpack_from(frame)
    start = _BATCH_HEAD.size
    attempt = frame[start : start + length].decode()
    return ChannelItem(_item_kind(kind), edge, sender, attempt, sequence, frame[start + length :])


def output_frame(output: HostOutput) -> tuple[bytes, bytes]:
    """The parts of the OUTPUT frame of ``output``: its head and its payload."""
    head = _OUTPUT_HEAD.pack(output.kind, output.target, output.edge, output.sequence)
    return head, output.payload


def read_output_frame(frame: bytes) -> HostOutput:
    kind, target, edge, sequence = _OUTPUT_HEAD.unpack_from(frame)
    return HostOutput(_item_kind(kind), target, edge, sequence, frame[_OUTPUT_HEAD.size :])


def _item_kind(value: int) -> ItemKind:
    try:
        return _ITEM_KINDS[value]
    except KeyError:
        raise RuntimeError(f"a data frame of unknown item kind {value}") from None


def source_frame(split: SourceSplit) -> tuple[bytes, bytes, bytes]:
    """The parts of the SOURCE frame of ``split``: its head, its assignment, its payload."""
    return _SOURCE_HEAD.pack(len(split.assignment)), split.assignment, split.payload


def read_source_frame(frame: bytes) -> SourceSplit:
    (length,) = _SOURCE_HEAD.unpack_from(frame)
    start = _SOURCE_HEAD.size
    return SourceSplit(frame[start : start + length], frame[start + length :])


# Control records ---------------------------------------------------------------------------


@dataclass(frozen=True)
class EpochStart(Record, format=START_FORMAT, version=VERSION):
    """A task hands its subtask's host one epoch: the task's descriptor, the subtask's
    restore (used when the host lacks that very version) and the attempt's names."""

    descriptor: TaskDeploymentDescriptor  # with the executor's local directories
    python_path: list[str]  # the task's sys.path: Spark adds a job's --py-files to it
    restore: SubtaskRestore
    index: int
    attempt: str  # this attempt's name: its files, and the version it leaves behind
    attempt_number: int  # Spark's attempt number of the task (RuntimeContext)


@dataclass(frozen=True)
class EpochDone(Record, format=DONE_FORMAT, version=VERSION):
    """The host finished the epoch: its ack is written (which reports the rest)."""

    closed: bool  # end of input: the subtask is closed and the host exits


@dataclass(frozen=True)
class HostFailure(Record, format=FAILURE_FORMAT, version=VERSION):
    """The epoch failed in the host; ``report`` is the error's traceback, which the task
    raises again so that Spark's error names the cause."""

    report: str


@dataclass(frozen=True)
class HostReleased(Record, format=RELEASED_FORMAT, version=VERSION):
    """The host closed its subtask (``close_error`` if the user's close() raised) and exits."""

    held_subtask: bool
    close_error: str | None


@dataclass(frozen=True)
class HostRequest(Record, format=REQUEST_FORMAT, version=VERSION):
    """A task asks its executor's task manager for the host of a subtask."""

    run: str
    vertex: int
    index: int
    location: str  # the executor's Spark host ("" in local mode)


@dataclass(frozen=True)
class HostStarted(Record, format=STARTED_FORMAT, version=VERSION):
    """The answer to a HostRequest: "ready" (listening), "exists" (another task's request
    started it first), or what went wrong."""

    status: str
