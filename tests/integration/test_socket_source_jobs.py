"""socket_text_stream in a job on Spark: the lines a TCP server sends, read in a task,
until the server closes and no retries are left."""

from __future__ import annotations

import socket
import threading

import pytest


def serve(lines: list[str]) -> int:
    listener = socket.create_server(("127.0.0.1", 0))

    def run() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.sendall("".join(f"{line}\n" for line in lines).encode())
        listener.close()

    threading.Thread(target=run, daemon=True).start()
    return int(listener.getsockname()[1])


def test_a_socket_stream_reads_every_line_the_server_sends(make_env):
    lines = [f"line {i}" for i in range(500)]
    port = serve(lines)
    env = make_env(2, max_records_per_split=120)
    stream = env.socket_text_stream("127.0.0.1", port).map(str.upper)
    assert sorted(stream.execute_and_collect(limit=None)) == sorted(x.upper() for x in lines)


def test_a_parallel_socket_stream_fails_before_the_job(make_env):
    env = make_env(2)
    env.socket_text_stream("127.0.0.1", 9).set_parallelism(2).print()
    with pytest.raises(Exception, match="a socket source is not parallel"):
        env.execute("parallel socket")
