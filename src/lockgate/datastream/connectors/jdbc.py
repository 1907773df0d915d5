"""The JDBC connector at PyFlink's path (``pyflink.datastream.connectors.jdbc``), writing to
PostgreSQL on psycopg (``pip install 'lockgate[postgres]'``): at least once, in batches
(``lockgate.connectors.jdbc``). Exactly-once (two-phase commit) is not there yet."""

from __future__ import annotations

from typing import Any

from lockgate.connectors.jdbc.sink import POSTGRES_DRIVER, JdbcSinkSettings, conninfo
from lockgate.connectors.jdbc.writer import jdbc_sink_writer
from lockgate.graph.operator_spec import OperatorKind, OperatorSpec


class JdbcConnectionOptions:
    """Where the sink connects: a ``jdbc:postgresql://host:port/database`` URL, a user and
    a password."""

    def __init__(self, url: str, driver_name: str | None, user: str | None, password: str | None):
        self._url = url
        self._driver_name = driver_name
        self._user = user
        self._password = password

    def get_db_url(self) -> str:
        return self._url

    def get_driver_name(self) -> str | None:
        return self._driver_name

    def get_user_name(self) -> str | None:
        return self._user

    def get_password(self) -> str | None:
        return self._password

    class JdbcConnectionOptionsBuilder:
        def __init__(self) -> None:
            self._url: str | None = None
            self._driver_name: str | None = None
            self._user: str | None = None
            self._password: str | None = None

        def with_url(self, url: str) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._url = url
            return self

        def with_driver_name(
            self, driver_name: str
        ) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            """Only PostgreSQL's driver name (``org.postgresql.Driver``): lockgate connects
            with psycopg, not through a JDBC driver."""
            if driver_name != POSTGRES_DRIVER:
                raise ValueError(
                    f"driver {driver_name!r}: lockgate's JDBC sink writes to PostgreSQL only "
                    f"({POSTGRES_DRIVER}, or leave the driver name out)"
                )
            self._driver_name = driver_name
            return self

        def with_user_name(
            self, user_name: str
        ) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._user = user_name
            return self

        def with_password(
            self, password: str
        ) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._password = password
            return self

        def build(self) -> JdbcConnectionOptions:
            if not self._url:
                raise ValueError("JdbcConnectionOptions needs with_url")
            conninfo(self._url, None, None)  # a URL that is not PostgreSQL's fails here
            return JdbcConnectionOptions(self._url, self._driver_name, self._user, self._password)


class JdbcExecutionOptions:
    """How records are batched: at most ``batch_size`` records (default 5000) or
    ``batch_interval_ms`` (default 0: no time limit) per batch, and every epoch ends its
    batch; a batch whose connection fails is tried again up to ``max_retries`` times
    (default 3), on a new connection."""

    def __init__(self, batch_size: int, batch_interval_ms: int, max_retries: int):
        self._batch_size = batch_size
        self._batch_interval_ms = batch_interval_ms
        self._max_retries = max_retries

    def get_batch_size(self) -> int:
        return self._batch_size

    def get_batch_interval_ms(self) -> int:
        return self._batch_interval_ms

    def get_max_retries(self) -> int:
        return self._max_retries

    @staticmethod
    def defaults() -> JdbcExecutionOptions:
        return JdbcExecutionOptions.builder().build()

    @staticmethod
    def builder() -> JdbcExecutionOptions.Builder:
        return JdbcExecutionOptions.Builder()

    class Builder:
        def __init__(self) -> None:
            self._size = 5000
            self._interval_ms = 0
            self._retries = 3

        def with_batch_size(self, size: int) -> JdbcExecutionOptions.Builder:
            self._size = _at_least(size, 1, "batch size")
            return self

        def with_batch_interval_ms(self, interval_ms: int) -> JdbcExecutionOptions.Builder:
            self._interval_ms = _at_least(interval_ms, 0, "batch interval")
            return self

        def with_max_retries(self, max_retries: int) -> JdbcExecutionOptions.Builder:
            self._retries = _at_least(max_retries, 0, "max retries")
            return self

        def build(self) -> JdbcExecutionOptions:
            return JdbcExecutionOptions(self._size, self._interval_ms, self._retries)


def _at_least(value: Any, least: int, what: str) -> int:
    if type(value) is not int or value < least:
        raise ValueError(f"the {what} must be an int of at least {least}, not {value!r}")
    return value


class JdbcSink:
    """Runs a statement per record on PostgreSQL, at least once; use with ``add_sink`` (or
    ``sink_to``). A record is a ``Row`` (or tuple) whose fields are the statement's ``?``
    parameters, in order."""

    name = "JdbcSink"

    def __init__(self, settings: JdbcSinkSettings):
        self._settings = settings

    @staticmethod
    def sink(
        sql: str,
        type_info: Any = None,
        jdbc_connection_options: JdbcConnectionOptions | None = None,
        jdbc_execution_options: JdbcExecutionOptions | None = None,
    ) -> JdbcSink:
        """``type_info`` (the records' ``RowTypeInfo``) is accepted as PyFlink's: psycopg
        sends each field as its Python type says."""
        if not isinstance(jdbc_connection_options, JdbcConnectionOptions):
            raise TypeError("JdbcSink.sink needs JdbcConnectionOptions")
        execution = jdbc_execution_options or JdbcExecutionOptions.defaults()
        connection = jdbc_connection_options
        return JdbcSink(
            JdbcSinkSettings(
                connection.get_db_url(),
                connection.get_user_name(),
                connection.get_password(),
                sql,
                execution.get_batch_size(),
                execution.get_batch_interval_ms(),
                execution.get_max_retries(),
            )
        )

    def operator_spec(self) -> OperatorSpec:
        return OperatorSpec(
            OperatorKind.FACTORY,
            jdbc_sink_writer(self._settings),
            validator=self._settings.validate,
        )


__all__ = ["JdbcConnectionOptions", "JdbcExecutionOptions", "JdbcSink"]
