"""The JDBC sink as the job graph holds it: a PostgreSQL database (from a JDBC URL), the
statement each record runs, and how records are batched. Its writer (``writer.py``) runs in
the subtask hosts, on psycopg (``pip install 'lockgate[postgres]'``).

At least once: a writer runs its records in batches, each one transaction, at the latest
at the end of every epoch, so an epoch is acknowledged only once its records are in the
database. A failed epoch runs again and runs its statements again: write upserts
(``INSERT ... ON CONFLICT ... DO UPDATE``) so that running one twice changes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

POSTGRES_DRIVER = "org.postgresql.Driver"
_URL = re.compile(r"jdbc:postgresql://(?P<rest>.*)", re.IGNORECASE)


class JdbcSinkError(RuntimeError):
    """A JDBC sink cannot write where it was told to."""


def psycopg() -> ModuleType:
    try:
        import psycopg as module
    except ImportError:
        raise JdbcSinkError(
            "the JDBC sink needs psycopg: pip install 'lockgate[postgres]'"
        ) from None
    return module


def conninfo(url: str, user: str | None, password: str | None) -> dict[str, Any]:
    """psycopg's connection parameters of a ``jdbc:postgresql://host[:port]/database[?...]``
    URL (its query parameters pass on: ``sslmode``, ``options``, ...)."""
    found = _URL.fullmatch(url)
    if found is None:
        raise JdbcSinkError(
            f"JDBC URL {url!r} is not a PostgreSQL one (jdbc:postgresql://host:port/database): "
            "lockgate's JDBC sink writes to PostgreSQL"
        )
    parts = urlsplit(f"postgresql://{found['rest']}")
    params: dict[str, Any] = {
        "host": parts.hostname or "localhost",
        "port": parts.port or 5432,
        "dbname": unquote(parts.path.lstrip("/")) or "postgres",
    }
    params.update(parse_qsl(parts.query))
    params.setdefault("connect_timeout", 10)
    if user is not None:
        params["user"] = user
    if password is not None:
        params["password"] = password
    return params


_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$")


def _segments(sql: str) -> list[str]:
    """A JDBC statement cut at its ``?`` parameters: those outside strings ('...', E'...'
    with its escapes, "identifiers", $tag$ quotes) and comments (-- and /* */); ``??`` is
    a literal ``?`` (an operator), as in PostgreSQL's JDBC driver."""
    segments = [""]
    i = 0
    while i < len(sql):
        char = sql[i]
        end = i + 1
        if char == "'" or char == '"':
            escapes = char == "'" and i > 0 and sql[i - 1] in "eE"
            while end < len(sql):
                if escapes and sql[end] == "\\":
                    end += 2
                    continue
                if sql[end] == char:
                    if end + 1 < len(sql) and sql[end + 1] == char:  # a doubled quote
                        end += 2
                        continue
                    end += 1
                    break
                end += 1
        elif sql.startswith("--", i):
            newline = sql.find("\n", i)
            end = len(sql) if newline < 0 else newline + 1
        elif sql.startswith("/*", i):
            close = sql.find("*/", i + 2)
            end = len(sql) if close < 0 else close + 2
        elif char == "$" and (tag := _DOLLAR_TAG.match(sql, i)) is not None:
            close = sql.find(tag.group(), tag.end())
            end = len(sql) if close < 0 else close + len(tag.group())
        elif sql.startswith("??", i):
            end = i + 2
            segments[-1] += "?"
            i = end
            continue
        elif char == "?":
            segments.append("")
            i = end
            continue
        segments[-1] += sql[i:end]
        i = end
    return segments


def postgres_statement(sql: str) -> tuple[str, int]:
    """A JDBC statement with psycopg's ``%s`` parameters; and its number of parameters."""
    segments = [segment.replace("%", "%%") for segment in _segments(sql)]
    return "%s".join(segments), len(segments) - 1


def numbered_statement(sql: str) -> str:
    """A JDBC statement with PostgreSQL's ``$1, $2, ...`` parameters (for PREPARE)."""
    segments = _segments(sql)
    return segments[0] + "".join(f"${n}{s}" for n, s in enumerate(segments[1:], start=1))


@dataclass(frozen=True)
class ExactlyOnceSettings:
    """Two-phase commit (``JdbcSink.exactly_once_sink``)."""

    max_commit_attempts: int  # tries of a COMMIT PREPARED before the job fails over
    recovered_and_rollback: bool  # restores roll back the job's prepared orphans


@dataclass(frozen=True)
class JdbcSinkSettings:
    url: str
    user: str | None
    password: str | None
    sql: str  # as given (JDBC's ? parameters)
    batch_size: int
    batch_interval_ms: int  # 0: no time-based flush, as in Flink
    max_retries: int
    exactly_once: ExactlyOnceSettings | None = None

    @property
    def database(self) -> str:
        """``host:port/dbname``."""
        parameters = conninfo(self.url, None, None)
        return f"{parameters['host']}:{parameters['port']}/{parameters['dbname']}"

    def describe(self) -> str:
        return f"JdbcSink to {self.database}"

    def connect(self, autocommit: bool = False) -> Any:
        return psycopg().connect(
            **conninfo(self.url, self.user, self.password), autocommit=autocommit
        )

    def validate(self) -> None:
        """Before the job starts: the database answers, the statement is valid there (one
        statement; its tables and columns exist), checked by parsing it on the server,
        which runs none of it; and for two-phase commit, the server allows prepared
        transactions."""
        pg = psycopg()
        try:
            connection = self.connect()
        except pg.Error as exc:
            raise JdbcSinkError(f"{self.describe()}: cannot connect: {exc}") from None
        with connection:
            parsed = connection.pgconn.prepare(b"", numbered_statement(self.sql).encode())
            if parsed.status != pg.pq.ExecStatus.COMMAND_OK:
                problem = parsed.error_message.decode(errors="replace").strip()
                raise JdbcSinkError(
                    f"{self.describe()}: the statement {self.sql!r} fails: {problem}"
                )
            if self.exactly_once is not None:
                row = connection.execute("SHOW max_prepared_transactions").fetchone()
                if row is None or int(row[0]) < 1:
                    raise JdbcSinkError(
                        f"{self.describe()}: the server's max_prepared_transactions is 0, so "
                        "the exactly-once sink cannot prepare transactions: set it to at "
                        "least the sink's parallelism (postgresql.conf; a restart applies it)"
                    )
