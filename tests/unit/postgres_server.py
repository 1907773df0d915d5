"""A PostgreSQL server for the tests: Debian's ``postgresql`` package, started on 127.0.0.1
on a free port with its own data and socket directory, and ``max_prepared_transactions`` for
two-phase commits. ``initdb`` refuses root: as root the server runs as the ``postgres``
user, in a directory that user owns."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def _binaries() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL is not installed: apt-get install postgresql (make test)")
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    def __init__(self) -> None:
        self.bin = _binaries()
        self.dir = Path(tempfile.mkdtemp(prefix="lockgate-postgres-"))
        self.port = _free_port()
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            shutil.chown(self.dir, "postgres", "postgres")

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_postgres else []
        done = subprocess.run(
            [*prefix, *command], capture_output=True, text=True, timeout=60, cwd=self.dir
        )
        if done.returncode != 0:
            raise RuntimeError(f"{command[0]} failed: {done.stdout}{done.stderr}")

    def start(self) -> PostgresServer:
        data = self.dir / "data"
        if not data.exists():
            self._run(str(self.bin / "initdb"), "-D", str(data), "-U", "test", "-A", "trust",
                      "-E", "UTF8", "--no-sync")  # fmt: skip
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
            "-c max_prepared_transactions=20 -c fsync=off"
        )
        self._run(str(self.bin / "pg_ctl"), "-D", str(data), "-l", str(self.dir / "log"),
                  "-w", "-o", options, "start")  # fmt: skip
        return self

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"), "-m", mode, "stop")

    def close(self) -> None:
        with contextlib.suppress(RuntimeError):  # not running
            self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def url(self) -> str:
        """The JDBC URL of its ``postgres`` database."""
        return f"jdbc:postgresql://127.0.0.1:{self.port}/postgres"

    @property
    def conninfo(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=test dbname=postgres"

    def execute(self, sql: str) -> None:
        """Run one statement and commit it."""
        import psycopg

        with psycopg.connect(self.conninfo, autocommit=True) as connection:
            connection.execute(sql)

    def query(self, sql: str) -> list[tuple]:
        """The rows of one statement, run in a transaction of its own."""
        import psycopg

        with psycopg.connect(self.conninfo) as connection:
            return connection.execute(sql).fetchall()

    def prepared_transactions(self) -> list[str]:
        """The gids of the server's prepared transactions."""
        return [gid for (gid,) in self.query("SELECT gid FROM pg_prepared_xacts")]
