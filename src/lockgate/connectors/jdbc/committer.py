"""The exactly-once JDBC sink's committer on the driver: ``COMMIT PREPARED`` of the
transactions a completed checkpoint holds, ``ROLLBACK PREPARED`` of what losing attempts
and undone epochs prepared.

A transaction that is no longer prepared was committed before (a restore commits its
checkpoint again), unless PostgreSQL says its id was aborted: then its rows are lost and
the job fails, naming it, rather than going on as if they were written.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from lockgate.connectors.jdbc.prepared_transaction import (
    JdbcCommittable,
    job_prefix,
    parse_staged_url,
    staged_url,
)
from lockgate.connectors.jdbc.sink import JdbcSinkError, JdbcSinkSettings, psycopg
from lockgate.core.two_phase_commit import CommitFailedError, Committer

log = logging.getLogger(__name__)


class JdbcCommitter(Committer):
    locks_until_committed = True

    def __init__(self, settings: JdbcSinkSettings):
        assert settings.exactly_once is not None
        self.settings = settings
        self.attempts = settings.exactly_once.max_commit_attempts
        self.database = settings.database

    def commit(self, committable: Any) -> None:
        transaction = self._read(committable)
        if self._finish("COMMIT", transaction.gid):
            return
        [status] = self._run(
            lambda c: c.execute("SELECT pg_xact_status(%s::xid8)", (transaction.xid,)).fetchone(),
            f"look up transaction {transaction.xid}",
        )
        if status == "aborted":
            raise JdbcSinkError(
                f"{self.settings.describe()}: transaction {transaction.gid} (xid "
                f"{transaction.xid}), which a completed checkpoint holds for the rows of its "
                f"subtask up to epoch {transaction.epoch}, was rolled back before its commit: "
                "those rows are lost. Did a session or another job run ROLLBACK PREPARED?"
            )

    def may_stage(self, url: str) -> bool:
        parsed = parse_staged_url(url)
        return parsed is not None and parsed[0] == self.database

    def staged_files(self, committable: Any) -> list[str]:
        return [staged_url(self.database, self._read(committable).gid)]

    def _read(self, committable: Any) -> JdbcCommittable:
        """The committable; one prepared in another database (a restore whose sink has
        another URL) is refused: there its name would be missing, and taken as committed."""
        transaction = JdbcCommittable.read(committable)
        if transaction.database != self.database:
            raise JdbcSinkError(
                f"{self.settings.describe()}: the checkpoint holds transaction "
                f"{transaction.gid} prepared in {transaction.database}: restore with the "
                "sink's URL the checkpoint was taken with"
            )
        return transaction

    def abort(self, url: str) -> None:
        parsed = parse_staged_url(url)
        assert parsed is not None  # the driver aborts only what may_stage accepts
        self._finish("ROLLBACK", parsed[1])

    def abort_lingering(self, job_ids: set[str], keep: set[str]) -> None:
        """Roll back the jobs' prepared transactions that ``keep`` does not hold (as
        Flink's exactly-once JDBC sink does with ``recovered_and_rollback``)."""
        assert self.settings.exactly_once is not None
        if not self.settings.exactly_once.recovered_and_rollback:
            return
        held = {parsed[1] for url in keep if (parsed := parse_staged_url(url)) is not None}
        found = self._run(
            lambda connection: [
                gid
                for (gid,) in connection.execute(
                    "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()"
                ).fetchall()
                if any(gid.startswith(job_prefix(job_id)) for job_id in job_ids)
            ],
            "list its prepared transactions",
        )
        for gid in found:
            if gid not in held:
                log.warning("%s: rolling back lingering transaction %s", self.database, gid)
                self._finish("ROLLBACK", gid)

    def _finish(self, verb: str, gid: str) -> bool:
        """``COMMIT`` or ``ROLLBACK`` the prepared transaction ``gid``, if it still is;
        whether it was."""
        pg = psycopg()
        statement = pg.sql.SQL(f"{verb} PREPARED {{}}").format(pg.sql.Literal(gid))

        def finish(connection: Any) -> bool:
            try:
                connection.execute(statement)
            except pg.errors.UndefinedObject:  # not prepared (any more)
                return False
            return True

        return bool(self._run(finish, f"{verb} PREPARED {gid}"))

    def _run(self, action: Any, what: str) -> Any:
        """``action(connection)`` on a new connection, tried ``max_commit_attempts`` times
        while the database cannot be reached; then the job fails over."""
        pg = psycopg()
        attempt = 1
        while True:
            try:
                with self.settings.connect(autocommit=True) as connection:
                    return action(connection)
            except pg.OperationalError as exc:
                if attempt >= self.attempts:
                    raise CommitFailedError(
                        f"{self.settings.describe()}: cannot {what} after {attempt} attempts: {exc}"
                    ) from exc
            except pg.Error as exc:
                raise CommitFailedError(
                    f"{self.settings.describe()}: cannot {what}: {type(exc).__name__}: {exc}"
                ) from exc
            time.sleep(min(0.5 * attempt, 5.0))
            attempt += 1
