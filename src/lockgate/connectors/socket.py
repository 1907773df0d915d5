"""``socket_text_stream``: lines read from a TCP server (Flink's ``socketTextStream``).

At most once, as the seeds' delivery table says of sockets: a socket cannot be replayed.
Its position in the checkpoint counts the lines read; after a failover the reader connects
anew and reads what the server sends from then on: lines that were in flight, or that the
failed run read after its last checkpoint, are not read again.

One subtask, as in Flink, reads in its subtask host, keeping the connection from epoch to
epoch. Each epoch it waits up to ``WAIT_S`` for a first line when it has none buffered,
then takes what has arrived, up to the epoch's cap. When the server closes the connection
the reader connects again up to ``max_retry`` times (-1: for ever), ``RETRY_DELAY_S``
apart, as Flink's; after that the stream ends, and with it a job of only this source.
"""

from __future__ import annotations

import socket
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from lockgate.common.records import Record
from lockgate.core.source import (
    Position,
    Source,
    SourceError,
    SplitAssignment,
    SplitEnumerator,
    SplitProgress,
)

SPLIT = "socket"
WAIT_S = 0.5
RETRY_DELAY_S = 0.5
CONNECT_TIMEOUT_S = 10.0
STATE_FORMAT = "lockgate-socket-source"
STATE_VERSION = 1


@dataclass(frozen=True)
class SocketSourceState(Record, format=STATE_FORMAT, version=STATE_VERSION):
    """The socket source in a checkpoint: lines read, and whether the stream ended."""

    lines: Position
    ended: bool


class SocketTextSource(Source):
    bounded = False
    default_parallelism = 1

    def __init__(self, host: str, port: int, delimiter: str = "\n", max_retry: int = 0):
        if not isinstance(host, str) or not host:
            raise ValueError(f"socket_text_stream needs a host name, not {host!r}")
        if type(port) is not int or not 0 < port < 65536:
            raise ValueError(f"socket_text_stream: port {port!r} is not a TCP port (1-65535)")
        if not isinstance(delimiter, str) or not delimiter:
            raise ValueError(f"socket_text_stream: delimiter {delimiter!r} must be a string")
        if type(max_retry) is not int or max_retry < -1:
            raise ValueError(
                f"socket_text_stream: max_retry {max_retry!r} must be -1 (for ever) or more"
            )
        self.host, self.port = host, port
        self.delimiter = delimiter.encode()
        self.max_retry = max_retry
        self._connection: socket.socket | None = None  # the reader's; never pickled
        self._lines: deque[bytes] = deque()  # received whole, not yet read
        self._partial = b""  # received after the last delimiter
        self._retries = 0
        self._ended = False

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_connection": None, "_lines": deque(), "_partial": b""}

    def describe(self) -> str:
        return f"socket source {self.host}:{self.port}"

    def create_enumerator(self, parallelism: int) -> SocketEnumerator:
        if parallelism != 1:
            raise SourceError(
                f"{self.describe()}: a socket source is not parallel (parallelism "
                f"{parallelism}): read it with parallelism 1 and rebalance() after it"
            )
        return SocketEnumerator()

    def read(
        self, assignment: SplitAssignment, payload: Any, progress: dict[str, SplitProgress]
    ) -> Iterator[str]:
        lines = 0
        deadline = time.monotonic() + WAIT_S
        while lines < assignment.max_records and not self._ended:
            line = self._next_line(deadline if lines == 0 else time.monotonic())
            if line is None:
                break
            yield line
            lines += 1
        progress[assignment.split] = SplitProgress(assignment.start + lines, self._ended)

    def _next_line(self, deadline: float) -> str | None:
        """The next line, waiting until ``deadline`` for it; None if none came."""
        while not self._lines:
            data = self._receive(max(0.0, deadline - time.monotonic()))
            if data is None:
                return None
            if data == b"":  # the server closed the connection: its last line, if any
                rest, self._partial = self._partial, b""
                if self._reconnect() and not rest:
                    continue
                return self._decode(rest) if rest else None
            # Cut each received chunk once: the lines it completes, and what is left over
            *complete, self._partial = (self._partial + data).split(self.delimiter)
            self._lines.extend(complete)
        return self._decode(self._lines.popleft())

    def _receive(self, wait_s: float) -> bytes | None:
        connection = self._connection or self._connect()
        connection.settimeout(wait_s if wait_s > 0 else 0.0)
        try:
            return connection.recv(65536)
        except (TimeoutError, BlockingIOError):
            return None
        except OSError:
            return b""  # reset by the server: as closed

    def _connect(self) -> socket.socket:
        try:
            self._connection = socket.create_connection(
                (self.host, self.port), timeout=CONNECT_TIMEOUT_S
            )
        except OSError as exc:
            raise SourceError(f"{self.describe()}: cannot connect: {exc}") from None
        return self._connection

    def _reconnect(self) -> bool:
        """After the server closed: connect again if retries are left (Flink's count);
        else the stream ends."""
        self.close()
        if self.max_retry != -1 and self._retries >= self.max_retry:
            self._ended = True
            return False
        self._retries += 1
        time.sleep(RETRY_DELAY_S)
        self._connect()
        return True

    def _decode(self, raw: bytes) -> str:
        if self.delimiter == b"\n" and raw.endswith(b"\r"):
            raw = raw[:-1]  # a line ended \r\n, as Flink reads it
        return raw.decode("utf-8", errors="replace")

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class SocketEnumerator(SplitEnumerator):
    """Plans the one split every epoch (the driver cannot know what the server sent)."""

    def __init__(self) -> None:
        self.lines = 0
        self.ended = False

    def plan(self, max_records_per_split: int) -> dict[int, list[SplitAssignment]]:
        if self.ended:
            return {}
        return {0: [SplitAssignment(SPLIT, self.lines, max_records_per_split, False)]}

    def acknowledge(self, progress: dict[str, SplitProgress]) -> None:
        report = progress.get(SPLIT)
        if report is not None:
            self.lines, self.ended = report.position, report.finished

    def is_finished(self) -> bool:
        return self.ended

    def snapshot(self) -> dict[str, Any]:
        state: dict[str, Any] = SocketSourceState(self.lines, self.ended).to_json()
        return state

    def restore(self, snapshot: Any, where: str) -> None:
        state = SocketSourceState.from_json(snapshot, where)
        self.lines, self.ended = state.lines, state.ended
