"""What a Spark task and the subtask host it drives say to each other over their socket.

Before the first frame, each end checks the other (``channel_auth``: its uid, and between a
task and a host, the run's key). A frame is one byte of kind (``FrameKind``), eight of
length, then the payload. Control
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
from dataclasses import dataclass, field
from enum import IntEnum

from lockgate.common.records import Record
from lockgate.runtime.messages.spark_items import ChannelItem, HostOutput, ItemKind, SourceSplit
from lockgate.runtime.messages.task_deployment import SubtaskRestore, TaskDeploymentDescriptor

VERSION = 5


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


_FRAME = struct.Struct(">BQ")  # kind, length of the payload
FRAME_HEADER_BYTES = _FRAME.size
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


def frame_header(header: bytes) -> tuple[FrameKind, int]:
    """The kind and payload length of the frame that starts with ``header``."""
    kind, length = _FRAME.unpack(header)
    try:
        return _FRAME_KINDS[kind], length
    except KeyError:
        raise ValueError(f"a frame of unknown kind {kind}") from None


class FrameTooLarge(ValueError):
    """A peer announced a frame larger than the reader accepts."""


class FrameReader:
    """Reads frames from a socket through a buffer (few system calls for small frames), none
    longer than ``limit`` bytes (a peer cannot make the reader allocate what it likes)."""

    def __init__(self, sock: socket.socket, limit: int | None = None):
        self.stream = sock.makefile("rb", buffering=1 << 16)
        self.limit = limit

    def read(self) -> tuple[FrameKind, bytes]:
        header = self.stream.read(_FRAME.size)
        if len(header) < _FRAME.size:
            raise HostConnectionLost("the connection closed between frames")
        kind, length = frame_header(header)
        if self.limit is not None and length > self.limit:
            raise FrameTooLarge(f"a frame of {length} bytes (at most {self.limit} accepted)")
        payload = self.stream.read(length)
        if len(payload) < length:
            raise HostConnectionLost(f"the connection closed inside a frame of kind {kind}")
        return kind, payload

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
class RunAccess:
    """What a task needs to reach its run's hosts, handed by the driver with the task (Spark
    ships it in the task's closure, never on a command line or in a file)."""

    run: str
    subtasks: int  # of the run's job: the most hosts the run can have on one executor
    key: str = field(repr=False)  # the run's key (channel_auth)

    def request(self, vertex: int, index: int, location: str) -> HostRequest:
        return HostRequest(self.run, vertex, index, location, self.subtasks, self.key)


@dataclass(frozen=True)
class HostRequest(Record, format=REQUEST_FORMAT, version=VERSION):
    """A task asks its executor's task manager for the host of a subtask."""

    run: str
    vertex: int
    index: int
    location: str  # the executor's Spark host ("" in local mode)
    subtasks: int  # of the run's job: the most hosts the run can have on one executor
    key: str = field(repr=False)  # the run's (channel_auth): the host checks its tasks with it


@dataclass(frozen=True)
class HostStarted(Record, format=STARTED_FORMAT, version=VERSION):
    """The answer to a HostRequest: "ready" (listening), "exists" (another task's request
    started it first), or what went wrong."""

    status: str
