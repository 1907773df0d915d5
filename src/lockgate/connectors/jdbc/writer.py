"""The JDBC sink's writer in a subtask host, at least once: one connection per subtask for the
run, records run in batches of one transaction each."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from lockgate.connectors.jdbc.sink import (
    JdbcSinkError,
    JdbcSinkSettings,
    postgres_statement,
    psycopg,
)
from lockgate.runtime.subtaskhost.operators import Operator, OperatorContext


class JdbcSinkWriter(Operator):
    def __init__(self, ctx: OperatorContext, settings: JdbcSinkSettings):
        super().__init__(ctx)
        self.settings = settings
        self.statement, self.parameters = postgres_statement(settings.sql)
        self.connection: Any = None
        self.batch: list[tuple[Any, ...]] = []
        self.batch_started = 0.0

    def process(self, value: Any) -> None:
        try:
            row = tuple(value)
        except TypeError as exc:
            raise self.failure(exc, value, "the JdbcSink (a record is a Row or tuple)") from exc
        if len(row) != self.parameters:
            raise self.failure(
                ValueError(f"{len(row)} fields for the statement's {self.parameters} parameters"),
                value,
                "the JdbcSink",
            )
        if not self.batch:
            self.batch_started = time.monotonic()
        self.batch.append(row)
        interval = self.settings.batch_interval_ms
        if len(self.batch) >= self.settings.batch_size or (
            interval and (time.monotonic() - self.batch_started) * 1000 >= interval
        ):
            self._flush()

    def end_epoch(self) -> None:
        """At least once: the epoch's records are in the database before it is acknowledged."""
        self._flush()

    def _flush(self) -> None:
        """Run the batch; a lost connection is tried again on a new one, while that can
        change nothing else (``_may_retry``)."""
        if not self.batch:
            return
        pg = psycopg()
        for attempt in range(self.settings.max_retries + 1):
            try:
                self._run_batch()
                break
            except pg.OperationalError as exc:  # the connection: try again on a new one
                self._drop_connection()
                if attempt == self.settings.max_retries or not self._may_retry():
                    raise JdbcSinkError(f"{self._where()}: {exc}{self._lost()}") from exc
                time.sleep(min(1.0 * (attempt + 1), 5.0))
            except pg.Error as exc:  # the statement or the data: retrying would not help
                raise JdbcSinkError(
                    f"{self._where()}: {type(exc).__name__}: {exc}{self._lost()}"
                ) from exc
        self.batch = []
        self._flushed()

    def _run_batch(self) -> None:
        """At least once: the batch is one transaction of its own."""
        if self.connection is None or self.connection.closed:
            self.connection = self.settings.connect()
        with self.connection.transaction(), self.connection.cursor() as cursor:
            cursor.executemany(self.statement, self.batch)

    def _may_retry(self) -> bool:
        return True

    def _lost(self) -> str:
        """What a failure of the batch takes with it, besides the batch."""
        return ""

    def _flushed(self) -> None:
        """The batch is in the database."""

    def _where(self) -> str:
        ctx = self.ctx
        return (
            f"{self.settings.describe()}, operator '{ctx.name}' (uid '{ctx.uid}', subtask "
            f"{ctx.index}, epoch {ctx.epoch}): a batch of {len(self.batch)} records failed"
        )

    def _drop_connection(self) -> None:
        if self.connection is not None:
            try:
                self.connection.close()
            finally:
                self.connection = None

    def close(self) -> None:
        """Every epoch ends its batch (``end_epoch``): rows left here belong to an attempt
        that failed, whose epoch runs again; they are dropped, not written late."""
        self.batch = []
        self._drop_connection()


def jdbc_sink_writer(settings: JdbcSinkSettings) -> Callable[[OperatorContext], JdbcSinkWriter]:
    def create(ctx: OperatorContext) -> JdbcSinkWriter:
        return JdbcSinkWriter(ctx, settings)

    return create
