"""The exactly-once JDBC sink's writer and committer against a real PostgreSQL
(``postgres_server``), without Spark: one transaction per subtask from checkpoint to
checkpoint, prepared at the checkpoint and committed by the driver; what losing attempts
prepared is rolled back, by the next instance of the subtask and by the driver."""

from __future__ import annotations

import threading
import uuid

import psycopg
import pytest

from lockgate.connectors.jdbc.committer import JdbcCommitter
from lockgate.connectors.jdbc.exactly_once_writer import JdbcExactlyOnceWriter
from lockgate.connectors.jdbc.prepared_transaction import (
    JdbcCommittable,
    parse_staged_url,
    staged_url,
    transaction_id,
)
from lockgate.connectors.jdbc.sink import ExactlyOnceSettings, JdbcSinkError, JdbcSinkSettings
from lockgate.core.fs.storage import Storage
from lockgate.core.two_phase_commit import CommitFailedError
from lockgate.runtime.messages.staged_files import StagedFiles
from lockgate.runtime.subtaskhost.context import RecordTimestamp
from lockgate.runtime.subtaskhost.operators import OperatorContext
from lockgate.runtime.subtaskhost.staging_log import StagingLog

UID = "jdbc-sink"


@pytest.fixture
def table(postgres_server):
    name = f"t_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server.conninfo, autocommit=True) as connection:
        connection.execute(f"CREATE TABLE {name} (k int PRIMARY KEY, n int)")
    yield name
    with psycopg.connect(postgres_server.conninfo, autocommit=True) as connection:
        for (gid,) in connection.execute("SELECT gid FROM pg_prepared_xacts").fetchall():
            connection.execute(f"ROLLBACK PREPARED '{gid}'")


def settings(server, table: str, port: int | None = None, attempts: int = 3) -> JdbcSinkSettings:
    return JdbcSinkSettings(
        f"jdbc:postgresql://127.0.0.1:{port or server.port}/postgres",
        "test",
        None,
        f"INSERT INTO {table} (k, n) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET n = excluded.n",
        batch_size=2,
        batch_interval_ms=0,
        max_retries=1,
        exactly_once=ExactlyOnceSettings(max_commit_attempts=attempts, recovered_and_rollback=True),
    )


class Subtask:
    """One instance of the writer, driven epoch by epoch as a subtask host drives it."""

    def __init__(self, sink: JdbcSinkSettings, staging: Storage, job: str, index: int = 0):
        self.staging = staging
        self.ctx = OperatorContext(
            "JdbcSink", UID, index, 2, None, None, [], RecordTimestamp(), job_id=job
        )
        self.writer = JdbcExactlyOnceWriter(self.ctx, sink)

    def epoch(self, epoch: int, rows, checkpoint: bool, attempt: str | None = None) -> dict:
        ctx = self.ctx
        ctx.epoch, ctx.checkpoint, ctx.commit_on_checkpoint = epoch, checkpoint, True
        ctx.attempt = attempt or f"e{epoch}-g0t{epoch}a{epoch}"
        ctx.staging = StagingLog(self.staging, epoch, 1, ctx.index, ctx.attempt)
        for row in rows:
            self.writer.process(row)
        self.writer.end_epoch()
        return self.writer.snapshot_state()


def rows_of(server, table: str) -> dict[int, int]:
    with psycopg.connect(server.conninfo) as connection:
        return dict(connection.execute(f"SELECT k, n FROM {table}").fetchall())


def test_rows_stay_invisible_until_the_driver_commits_the_checkpoint(
    postgres_server, table, tmp_path
):
    sink = settings(postgres_server, table)
    job = uuid.uuid4().hex
    subtask = Subtask(sink, Storage(str(tmp_path)), job)
    first = subtask.epoch(1, [(1, 1), (2, 1), (3, 1)], checkpoint=False)
    assert first == {"committables": [], "open_since": 1}
    second = subtask.epoch(2, [(1, 2)], checkpoint=True)
    assert second["open_since"] is None
    [committable] = second["committables"]
    gid = JdbcCommittable.read(committable).gid
    assert gid == transaction_id(job, UID, 0, "e2-g0t2a2")
    assert rows_of(postgres_server, table) == {}, "rows of an uncommitted checkpoint are visible"
    assert postgres_server.prepared_transactions() == [gid]
    record = StagedFiles.from_json(Storage(str(tmp_path)).read_json("e2/1-0-e2-g0t2a2.json"), "")
    assert record.files == (staged_url(sink.database, gid),), "recorded before it is prepared"

    committer = JdbcCommitter(sink)
    committer.commit(committable)
    committer.commit(committable)  # a restore commits its checkpoint again: nothing changes
    assert rows_of(postgres_server, table) == {1: 2, 2: 1, 3: 1}
    assert postgres_server.prepared_transactions() == []
    subtask.writer.notify_checkpoint_complete(2)
    assert subtask.writer.snapshot_state() == {"committables": [], "open_since": None}
    subtask.writer.close()


@pytest.mark.parametrize("retry", ["e2-g0t3a9", "e1-g1t3a9"])
def test_a_later_instance_rolls_back_what_losing_attempts_prepared_before_it(
    postgres_server, table, tmp_path, retry
):
    """An attempt that died after its PREPARE holds its rows' locks: an instance of the
    subtask in a later epoch, or after a restore, would wait on them, so it rolls that
    transaction back first; another subtask's is not its to touch."""
    sink = settings(postgres_server, table)
    job = uuid.uuid4().hex
    lost = Subtask(sink, Storage(str(tmp_path)), job)
    lost.epoch(1, [(7, 1)], checkpoint=True, attempt="e1-g0t1a1")
    lost.writer.connection.close()  # the attempt dies; its prepared transaction stays
    other_subtask = Subtask(sink, Storage(str(tmp_path)), job, index=1)
    other_subtask.epoch(1, [(8, 1)], checkpoint=True)
    assert len(postgres_server.prepared_transactions()) == 2

    later = Subtask(sink, Storage(str(tmp_path)), job)
    done = threading.Event()

    def run_later() -> None:
        later.epoch(int(retry[1]), [(7, 2)], checkpoint=True, attempt=retry)
        done.set()

    threading.Thread(target=run_later, daemon=True).start()
    assert done.wait(15), "the later instance waited on the lost attempt's row lock"
    gids = postgres_server.prepared_transactions()
    assert transaction_id(job, UID, 0, "e1-g0t1a1") not in gids
    assert transaction_id(job, UID, 0, retry) in gids
    assert transaction_id(job, UID, 1, "e1-g0t1a1") in gids, "another subtask's was touched"
    for instance in (later, other_subtask):
        instance.writer.close()


def test_another_attempt_of_the_same_epoch_is_left_to_the_driver_and_fails_clearly(
    postgres_server, table, tmp_path, monkeypatch
):
    """Which of two attempts of one epoch wins only the driver knows: a second attempt does
    not roll back the first's transaction; when its locks are in the way it fails, saying
    why, instead of waiting for ever."""
    monkeypatch.setattr("lockgate.connectors.jdbc.exactly_once_writer.LOCK_TIMEOUT_MS", 300)
    sink = settings(postgres_server, table)
    job = uuid.uuid4().hex
    first = Subtask(sink, Storage(str(tmp_path)), job)
    first.epoch(1, [(7, 1)], checkpoint=True, attempt="e1-g0t1a1")
    second = Subtask(sink, Storage(str(tmp_path)), job)
    with pytest.raises(JdbcSinkError, match="key_by the table's key") as failure:
        second.epoch(1, [(7, 1)], checkpoint=True, attempt="e1-g0t1a2")
    assert "uid 'jdbc-sink', subtask 0, epoch 1" in str(failure.value)
    assert postgres_server.prepared_transactions() == [transaction_id(job, UID, 0, "e1-g0t1a1")]
    for instance in (first, second):
        instance.writer.close()


def test_an_instance_rebuilt_from_an_open_transaction_fails_the_job_over(
    postgres_server, table, tmp_path
):
    sink = settings(postgres_server, table)
    subtask = Subtask(sink, Storage(str(tmp_path)), uuid.uuid4().hex, index=1)
    with pytest.raises(JdbcSinkError) as failure:
        subtask.writer.restore_state({"committables": [], "open_since": 4})
    message = str(failure.value)
    assert "uid 'jdbc-sink', subtask 1" in message and "since epoch 4" in message
    assert "fails over to its latest checkpoint" in message


def test_a_lost_connection_with_an_open_transaction_fails_naming_the_rows_it_held(
    postgres_server, table, tmp_path
):
    sink = settings(postgres_server, table)
    subtask = Subtask(sink, Storage(str(tmp_path)), uuid.uuid4().hex)
    subtask.epoch(1, [(1, 1), (2, 1)], checkpoint=False)
    with psycopg.connect(postgres_server.conninfo, autocommit=True) as admin:
        pid = subtask.writer.connection.info.backend_pid
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with pytest.raises(JdbcSinkError, match="rows since epoch 1 is rolled back"):
        subtask.epoch(2, [(3, 1), (4, 1)], checkpoint=True)
    subtask.writer.close()
    assert rows_of(postgres_server, table) == {} and postgres_server.prepared_transactions() == []


def test_the_driver_aborts_by_name_and_rolls_back_what_lingers_of_its_jobs(
    postgres_server, table, tmp_path
):
    sink = settings(postgres_server, table)
    committer = JdbcCommitter(sink)
    jobs = [uuid.uuid4().hex for _ in range(3)]
    states = [
        Subtask(sink, Storage(str(tmp_path / job)), job).epoch(1, [(i, i)], checkpoint=True)
        for i, job in enumerate(jobs)
    ]
    gids = [JdbcCommittable.read(state["committables"][0]).gid for state in states]
    kept = staged_url(sink.database, gids[0])
    assert committer.may_stage(kept) and parse_staged_url(kept) == (sink.database, gids[0])
    assert not committer.may_stage(kept.replace("/postgres#", "/other#"))
    assert not committer.may_stage(f"postgresql://{sink.database}#not-ours")

    committer.abort_lingering({jobs[0], jobs[1]}, keep={kept})
    assert sorted(postgres_server.prepared_transactions()) == sorted([gids[0], gids[2]]), (
        "a transaction the checkpoint holds, or one of another job, was rolled back"
    )
    committer.abort(staged_url(sink.database, gids[2]))
    committer.abort(staged_url(sink.database, gids[2]))  # gone already: nothing to do
    assert postgres_server.prepared_transactions() == [gids[0]]


def test_a_commit_the_database_cannot_take_now_fails_the_job_over(postgres_server, table):
    with socket_port() as closed:
        committer = JdbcCommitter(settings(postgres_server, table, port=closed, attempts=2))
        gid = transaction_id(uuid.uuid4().hex, UID, 0, "e1-g0t1a1")
        committable = JdbcCommittable(1, gid, "1000", f"127.0.0.1:{closed}/postgres").to_json()
        with pytest.raises(CommitFailedError, match="after 2 attempts"):
            committer.commit(committable)


def test_a_committable_that_names_no_lockgate_transaction_is_refused(postgres_server, table):
    committer = JdbcCommitter(settings(postgres_server, table))
    with pytest.raises(JdbcSinkError, match="not the name of a transaction lockgate prepares"):
        committer.commit(
            {"epoch": 1, "gid": "someone-elses", "xid": "1000", "database": committer.database}
        )


def test_a_committable_of_another_database_is_refused(postgres_server, table, tmp_path):
    sink = settings(postgres_server, table)
    state = Subtask(sink, Storage(str(tmp_path)), uuid.uuid4().hex).epoch(
        1, [(1, 1)], checkpoint=True
    )
    [committable] = state["committables"]
    with pytest.raises(JdbcSinkError, match="restore with the sink's URL"):
        JdbcCommitter(settings(postgres_server, table, port=1)).commit(committable)


def test_a_commit_of_a_transaction_rolled_back_behind_its_back_fails_naming_it(
    postgres_server, table, tmp_path
):
    """A checkpoint's transaction that someone rolled back is lost, not committed: the
    commit says so instead of going on as if its rows were written."""
    sink = settings(postgres_server, table)
    state = Subtask(sink, Storage(str(tmp_path)), uuid.uuid4().hex).epoch(
        1, [(1, 1)], checkpoint=True
    )
    [committable] = state["committables"]
    with psycopg.connect(postgres_server.conninfo, autocommit=True) as connection:
        connection.execute(f"ROLLBACK PREPARED '{committable['gid']}'")
    with pytest.raises(JdbcSinkError, match="was rolled back before its commit"):
        JdbcCommitter(sink).commit(committable)


def socket_port():
    """A port nothing listens on, for as long as the context lasts."""
    import contextlib
    import socket

    @contextlib.contextmanager
    def reserved():
        with socket.socket() as holder:
            holder.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
            yield holder.getsockname()[1]

    return reserved()
