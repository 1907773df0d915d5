"""The socket source's reader and enumerator against a TCP server on 127.0.0.1, without
Spark: lines cut at the delimiter, the last one when the server closes, reconnects up to
``max_retry``, epochs that wait at most ``WAIT_S`` for a first line."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from lockgate.connectors.socket import (
    SPLIT,
    WAIT_S,
    SocketEnumerator,
    SocketTextSource,
)
from lockgate.core.source import SourceError, SplitAssignment


class LineServer:
    """Serves each connection one of ``sessions`` (bytes to send), then closes it."""

    def __init__(self, sessions: list[list[bytes]], pause_s: float = 0.0):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sessions = sessions
        self.pause_s = pause_s
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        for session in self.sessions:
            connection, _ = self.listener.accept()
            with connection:
                for chunk in session:
                    connection.sendall(chunk)
                    time.sleep(self.pause_s)
        self.listener.close()


def read_epoch(source, enumerator, max_records: int = 100) -> list[str]:
    [assignment] = enumerator.plan(max_records)[0]
    progress: dict = {}
    lines = list(source.read(assignment, None, progress))
    enumerator.acknowledge(progress)
    return lines


def read_all(source, enumerator) -> list[str]:
    lines: list[str] = []
    while not enumerator.is_finished():
        lines += read_epoch(source, enumerator)
    return lines


def test_lines_are_cut_at_the_delimiter_and_the_last_one_comes_when_the_server_closes():
    server = LineServer([[b"one\r\ntw", b"o\nthree\n", b"four"]])
    source = SocketTextSource("127.0.0.1", server.port)
    enumerator = SocketEnumerator()
    assert read_all(source, enumerator) == ["one", "two", "three", "four"]
    assert enumerator.snapshot()["lines"] == 4 and enumerator.plan(100) == {}


def test_an_epoch_takes_at_most_its_cap_and_the_rest_waits_for_the_next():
    server = LineServer([[b"".join(f"{i}|".encode() for i in range(10))]])
    source = SocketTextSource("127.0.0.1", server.port, delimiter="|")
    enumerator = SocketEnumerator()
    assert read_epoch(source, enumerator, max_records=4) == ["0", "1", "2", "3"]
    assert read_all(source, enumerator) == [str(i) for i in range(4, 10)]


def test_the_source_connects_again_up_to_max_retry_times():
    server = LineServer([[b"a\nb\n"], [b"c\n"], [b"never read\n"]])
    source = SocketTextSource("127.0.0.1", server.port, max_retry=1)
    assert read_all(source, SocketEnumerator()) == ["a", "b", "c"]


def test_an_epoch_without_input_waits_for_a_first_line_at_most_wait_s():
    server = LineServer([[b"", b"late\n"]], pause_s=WAIT_S * 3)  # quiet, then a line
    source = SocketTextSource("127.0.0.1", server.port)
    enumerator = SocketEnumerator()
    started = time.monotonic()
    assert read_epoch(source, enumerator) == []
    assert WAIT_S * 0.9 < time.monotonic() - started < WAIT_S * 2
    assert not enumerator.is_finished()
    assert read_all(source, enumerator) == ["late"]


def test_a_server_that_does_not_answer_fails_naming_it():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
        source = SocketTextSource("127.0.0.1", port)
        assignment = SplitAssignment(SPLIT, 0, 10, False)
        with pytest.raises(SourceError, match=rf"socket source 127.0.0.1:{port}: cannot connect"):
            list(source.read(assignment, None, {}))


def test_bad_arguments_and_parallelism_fail_clearly():
    with pytest.raises(ValueError, match="not a TCP port"):
        SocketTextSource("localhost", 70000)
    with pytest.raises(ValueError, match="max_retry"):
        SocketTextSource("localhost", 9999, max_retry=-2)
    with pytest.raises(SourceError, match="not parallel"):
        SocketTextSource("localhost", 9999).create_enumerator(2)
