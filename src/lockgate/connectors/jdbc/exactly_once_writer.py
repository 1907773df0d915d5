"""The JDBC sink's writer for two-phase commit (``JdbcSink.exactly_once_sink``).

Each subtask writes into one open transaction from one checkpoint to the next: its batches
run in it as they fill, and the end of an epoch that ends with a checkpoint prepares it
(``PREPARE TRANSACTION``: durable, invisible, its locks held) as a committable the driver
commits once the checkpoint completes (``committer.py``).

Why not prepare at the end of every epoch, as the FileSink rolls its parts: a prepared
transaction keeps its row locks until the checkpoint commits it, so the next epoch's
upsert of the same key would wait for a commit that waits for that epoch: a deadlock.

The open transaction lives only in this instance's connection. An instance rebuilt from
the state of a non-checkpoint epoch (its task failed, or moved to another host) cannot
have it: its rows are gone, and the job fails over to its latest checkpoint, which holds
no open transaction, and replays them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from lockgate.connectors.jdbc.prepared_transaction import (
    JdbcCommittable,
    attempt_epoch,
    staged_url,
    subtask_prefix,
    transaction_id,
)
from lockgate.connectors.jdbc.sink import JdbcSinkError, JdbcSinkSettings, psycopg
from lockgate.connectors.jdbc.writer import JdbcSinkWriter
from lockgate.runtime.subtaskhost.operators import OperatorContext

#: how long a write waits for a row another transaction holds: longer than the driver
#: takes to commit a completed checkpoint; a transaction that holds it longer is another
#: writer's (see ``_locked``)
LOCK_TIMEOUT_MS = 20_000


class JdbcExactlyOnceWriter(JdbcSinkWriter):
    def __init__(self, ctx: OperatorContext, settings: JdbcSinkSettings):
        super().__init__(ctx, settings)
        #: the first epoch whose rows the open transaction holds (None: none open)
        self.open_since: int | None = None
        #: prepared transactions no completed checkpoint has committed yet
        self.pending: list[JdbcCommittable] = []

    def snapshot_state(self) -> dict[str, Any]:
        return {
            "committables": [c.to_json() for c in self.pending],
            "open_since": self.open_since,
        }

    def restore_state(self, state: dict[str, Any]) -> None:
        self.pending = [JdbcCommittable.read(raw) for raw in state.get("committables", ())]
        lost = state.get("open_since")
        if lost is not None:
            raise JdbcSinkError(
                f"{self._subtask(self.ctx.restored_epoch)}: the open transaction holding its "
                f"rows since epoch {lost} was lost with the subtask's previous instance (its "
                "task failed or moved to another host); the job fails over to its latest "
                "checkpoint and writes them again"
            )

    def notify_checkpoint_complete(self, epoch: int) -> None:
        self.pending = [c for c in self.pending if c.epoch > epoch]

    def _run_batch(self) -> None:
        """Into the open transaction (begun by the first batch since a checkpoint)."""
        if self.connection is None:
            self.connection = self._connect()
        try:
            with self.connection.cursor() as cursor:
                cursor.executemany(self.statement, self.batch)
        except psycopg().errors.LockNotAvailable as exc:
            raise JdbcSinkError(f"{self._where()}: {exc}{self._locked()}") from exc

    def _may_retry(self) -> bool:
        """Only a transaction that held nothing yet can start again elsewhere."""
        return self.open_since is None

    def _flushed(self) -> None:
        if self.open_since is None:
            self.open_since = self.ctx.epoch

    def end_epoch(self) -> None:
        """Flush; at a checkpoint, prepare the open transaction (the pre-commit)."""
        self._flush()
        ctx = self.ctx
        if not ctx.checkpoint or self.open_since is None:
            return
        staging = ctx.staging
        if staging is None:
            raise RuntimeError("a JdbcSink transaction prepared outside an epoch (no staging log)")
        gid = transaction_id(ctx.job_id, ctx.uid, ctx.index, ctx.attempt)
        staging.stage(staged_url(self.settings.database, gid))  # recorded before it exists
        sql = psycopg().sql
        try:
            [xid] = self.connection.execute("SELECT pg_current_xact_id()::text").fetchone()
            self.connection.execute(sql.SQL("PREPARE TRANSACTION {}").format(sql.Literal(gid)))
        except psycopg().Error as exc:
            raise JdbcSinkError(
                f"{self._subtask()}: PREPARE TRANSACTION failed: {exc}{self._lost()}"
            ) from exc
        self.pending.append(JdbcCommittable(ctx.epoch, gid, xid, self.settings.database))
        self.open_since = None

    def _connect(self) -> Any:
        """A connection for a new transaction, once this subtask's strays are rolled back:
        transactions it prepared in attempts of earlier epochs or restores that lost (a task
        that died after its PREPARE), whose row locks it would otherwise wait on. Another
        attempt of this very epoch is left to the driver, which alone knows which one wins;
        if its locks are in the way, ``lock_timeout`` fails this attempt clearly."""
        pg = psycopg()
        connection = self.settings.connect(autocommit=True)
        try:
            ctx = self.ctx
            connection.execute(
                pg.sql.SQL("SET lock_timeout = {}").format(pg.sql.Literal(LOCK_TIMEOUT_MS))
            )
            prefix = subtask_prefix(ctx.job_id, ctx.uid, ctx.index)
            this = attempt_epoch(ctx.attempt)
            keep = {c.gid for c in self.pending}
            strays = connection.execute(
                "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() "
                "AND starts_with(gid, %s)",
                (prefix,),
            ).fetchall()
            for (gid,) in strays:
                if gid in keep or this is None:
                    continue
                stray = attempt_epoch(gid.removeprefix(prefix))
                if stray is None:
                    continue
                (stray_epoch, stray_generation), (epoch, generation) = stray, this
                if stray_generation < generation or (
                    stray_generation == generation and stray_epoch < epoch
                ):
                    with contextlib.suppress(pg.errors.UndefinedObject):  # the driver's now
                        connection.execute(
                            pg.sql.SQL("ROLLBACK PREPARED {}").format(pg.sql.Literal(gid))
                        )
            connection.autocommit = False
        except BaseException:
            connection.close()
            raise
        return connection

    def _locked(self) -> str:
        return (
            f"; a row it writes was held for {LOCK_TIMEOUT_MS // 1000} s by another "
            "transaction: another subtask's or sink's open or prepared transaction of this "
            "job (rows must have one writer between two checkpoints: key_by the table's key "
            "before the sink), a losing attempt of this epoch, or another session; the job "
            "fails over to its latest checkpoint"
        )

    def _lost(self) -> str:
        if self.open_since is None:
            return ""
        return (
            f"; its open transaction with the rows since epoch {self.open_since} is rolled "
            "back, and the job fails over to its latest checkpoint"
        )

    def _subtask(self, epoch: int | None = None) -> str:
        ctx = self.ctx
        return (
            f"{self.settings.describe()}, operator '{ctx.name}' (uid '{ctx.uid}', subtask "
            f"{ctx.index}, epoch {ctx.epoch if epoch is None else epoch})"
        )

    def close(self) -> None:
        """Closing the connection rolls the open transaction back (an attempt that failed);
        what it prepared stays for the driver, which commits or aborts it."""
        super().close()
        self.open_since = None


def jdbc_exactly_once_writer(
    settings: JdbcSinkSettings,
) -> Callable[[OperatorContext], JdbcExactlyOnceWriter]:
    def create(ctx: OperatorContext) -> JdbcExactlyOnceWriter:
        return JdbcExactlyOnceWriter(ctx, settings)

    return create
