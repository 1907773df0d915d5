"""The JDBC connector at PyFlink's path (``pyflink.datastream.connectors.jdbc``), writing to
PostgreSQL on psycopg (``pip install 'lockgate[postgres]'``): at least once, in batches, or
exactly once, by two-phase commit (``lockgate.connectors.jdbc``)."""

from __future__ import annotations

from typing import Any

from lockgate.connectors.jdbc.committer import JdbcCommitter
from lockgate.connectors.jdbc.exactly_once_writer import jdbc_exactly_once_writer
from lockgate.connectors.jdbc.sink import (
    POSTGRES_DRIVER,
    ExactlyOnceSettings,
    JdbcSinkSettings,
    conninfo,
)
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


class JdbcExactlyOnceOptions:
    """Two-phase commit: a COMMIT PREPARED is tried ``max_commit_attempts`` times (default
    3) before the job fails over and commits again; ``recovered_and_rollback`` (default
    true): a restore rolls back the job's prepared transactions that its checkpoint does
    not hold, found in ``pg_prepared_xacts``."""

    def __init__(self, recovered_and_rollback: bool, max_commit_attempts: int):
        self._recovered_and_rollback = recovered_and_rollback
        self._max_commit_attempts = max_commit_attempts

    def is_recovered_and_rollback(self) -> bool:
        return self._recovered_and_rollback

    def get_max_commit_attempts(self) -> int:
        return self._max_commit_attempts

    def is_allow_out_of_order_commits(self) -> bool:
        return False

    def get_timeout_sec(self) -> int | None:
        return None

    def is_transaction_per_connection(self) -> bool:
        return True

    @staticmethod
    def defaults() -> JdbcExactlyOnceOptions:
        return JdbcExactlyOnceOptions.builder().build()

    @staticmethod
    def builder() -> JdbcExactlyOnceOptions.JDBCExactlyOnceOptionsBuilder:
        return JdbcExactlyOnceOptions.JDBCExactlyOnceOptionsBuilder()

    class JDBCExactlyOnceOptionsBuilder:
        def __init__(self) -> None:
            self._recovered_and_rollback = True
            self._max_commit_attempts = 3

        def with_recovered_and_rollback(
            self, recovered_and_rollback: bool
        ) -> JdbcExactlyOnceOptions.JDBCExactlyOnceOptionsBuilder:
            if type(recovered_and_rollback) is not bool:
                raise TypeError(f"recovered_and_rollback is a bool: {recovered_and_rollback!r}")
            self._recovered_and_rollback = recovered_and_rollback
            return self

        def with_max_commit_attempts(
            self, max_commit_attempts: int
        ) -> JdbcExactlyOnceOptions.JDBCExactlyOnceOptionsBuilder:
            self._max_commit_attempts = _at_least(max_commit_attempts, 1, "max commit attempts")
            return self

        def with_allow_out_of_order_commits(
            self, allow: bool
        ) -> JdbcExactlyOnceOptions.JDBCExactlyOnceOptionsBuilder:
            if allow:
                raise ValueError(
                    "allow_out_of_order_commits: lockgate commits a sink's transactions in "
                    "checkpoint order, on the driver; out-of-order commits are not offered"
                )
            return self

        def with_timeout_sec(
            self, timeout_sec: int
        ) -> JdbcExactlyOnceOptions.JDBCExactlyOnceOptionsBuilder:
            raise ValueError(
                "timeout_sec: PostgreSQL has no timeout for prepared transactions (its XA "
                "driver ignores one too); lockgate rolls back what no checkpoint holds at "
                "every restore and when the job ends"
            )

        def with_transaction_per_connection(
            self, transaction_per_connection: bool
        ) -> JdbcExactlyOnceOptions.JDBCExactlyOnceOptionsBuilder:
            if not transaction_per_connection:
                raise ValueError(
                    "transaction_per_connection=False: on PostgreSQL each subtask's "
                    "connection holds one transaction at a time, as Flink requires there"
                )
            return self

        def build(self) -> JdbcExactlyOnceOptions:
            return JdbcExactlyOnceOptions(self._recovered_and_rollback, self._max_commit_attempts)


def _at_least(value: Any, least: int, what: str) -> int:
    if type(value) is not int or value < least:
        raise ValueError(f"the {what} must be an int of at least {least}, not {value!r}")
    return value


class JdbcSink:
    """Runs a statement per record on PostgreSQL; use with ``add_sink`` (or ``sink_to``). A
    record is a ``Row`` (or tuple) whose fields are the statement's ``?`` parameters, in
    order. ``sink``: at least once; ``exactly_once_sink``: by two-phase commit."""

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
        return JdbcSink(_settings(sql, jdbc_connection_options, jdbc_execution_options, None))

    @staticmethod
    def exactly_once_sink(
        sql: str,
        type_info: Any = None,
        jdbc_connection_options: JdbcConnectionOptions | None = None,
        jdbc_execution_options: JdbcExecutionOptions | None = None,
        jdbc_exactly_once_options: JdbcExactlyOnceOptions | None = None,
    ) -> JdbcSink:
        """Flink's ``JdbcSink.exactlyOnceSink`` on PostgreSQL's two-phase commit: each
        subtask's rows since the last checkpoint are one transaction, prepared at the
        checkpoint and committed when it completes. Needs checkpointing in EXACTLY_ONCE mode
        and a server with ``max_prepared_transactions`` > 0. Unlike Flink's, batches whose
        connection fails before the transaction holds any row are retried
        (``max_retries``): that cannot duplicate them."""
        exactly_once = jdbc_exactly_once_options or JdbcExactlyOnceOptions.defaults()
        if not isinstance(exactly_once, JdbcExactlyOnceOptions):
            raise TypeError("JdbcSink.exactly_once_sink takes JdbcExactlyOnceOptions")
        return JdbcSink(
            _settings(
                sql,
                jdbc_connection_options,
                jdbc_execution_options,
                ExactlyOnceSettings(
                    exactly_once.get_max_commit_attempts(),
                    exactly_once.is_recovered_and_rollback(),
                ),
            )
        )

    def operator_spec(self) -> OperatorSpec:
        settings = self._settings
        if settings.exactly_once is None:
            return OperatorSpec(
                OperatorKind.FACTORY, jdbc_sink_writer(settings), validator=settings.validate
            )
        return OperatorSpec(
            OperatorKind.FACTORY,
            jdbc_exactly_once_writer(settings),
            validator=settings.validate,
            committer=JdbcCommitter(settings),
            exactly_once=True,
        )


def _settings(
    sql: str,
    connection: JdbcConnectionOptions | None,
    execution: JdbcExecutionOptions | None,
    exactly_once: ExactlyOnceSettings | None,
) -> JdbcSinkSettings:
    if not isinstance(connection, JdbcConnectionOptions):
        raise TypeError("JdbcSink needs JdbcConnectionOptions")
    execution = execution or JdbcExecutionOptions.defaults()
    return JdbcSinkSettings(
        connection.get_db_url(),
        connection.get_user_name(),
        connection.get_password(),
        sql,
        execution.get_batch_size(),
        execution.get_batch_interval_ms(),
        execution.get_max_retries(),
        exactly_once,
    )


__all__ = ["JdbcConnectionOptions", "JdbcExactlyOnceOptions", "JdbcExecutionOptions", "JdbcSink"]
