"""JdbcSink.exactly_once_sink in jobs on Spark, against a real PostgreSQL
(``postgres_server``): plain INSERTs (no key to make a repeat harmless) of the exactly-once
count job's lines, so a row lost or written twice shows in the table, read back with SQL.
Failures strike in a user function, between the snapshot and its acknowledgement, between a
checkpoint's completion and its commit and in the middle of its commits; a retried task
finds the transaction of its subtask gone. No prepared transaction is left behind."""

from __future__ import annotations

import os
import signal
import time

import driver_kill_job
import pytest
from exactly_once_job import (
    KEYS,
    CountPerKey,
    Trap,
    assert_same_lines,
    checkpointed_env,
    on_checkpoint,
    record_in_epoch,
    records,
    reference,
)
from lockgate_it_support import BACKENDS
from process_tree import subtask_hosts
from sink_readback import new_lines_table, table_lines

from lockgate.common import RestartStrategies, Row
from lockgate.common.config_options import ConfigurationError
from lockgate.datastream.connectors.jdbc import (
    JdbcConnectionOptions,
    JdbcExactlyOnceOptions,
    JdbcExecutionOptions,
    JdbcSink,
)

SPLITS = 2


def exactly_once_sink(server, table: str) -> JdbcSink:
    return JdbcSink.exactly_once_sink(
        f"INSERT INTO {table} (split, i, n) VALUES (?, ?, ?)",
        None,
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder()
        .with_url(server.url)
        .with_user_name("test")
        .build(),
        JdbcExecutionOptions.builder().with_batch_size(7).build(),
        JdbcExactlyOnceOptions.builder().with_max_commit_attempts(2).build(),
    )


def build(env, server, table: str, trap: Trap | None) -> None:
    (
        env.from_collection(records(SPLITS))
        .set_parallelism(SPLITS)
        .uid("numbers")
        .key_by(lambda r: (r[0], r[1] % KEYS))
        .process(CountPerKey(trap))
        .uid("count")
        .map(lambda line: Row(*(int(x) for x in line.split(","))))
        .uid("to-row")
        .add_sink(exactly_once_sink(server, table))
        .uid("jdbc")
    )


@BACKENDS
def test_failures_at_every_step_leave_each_row_exactly_once(make_env, tmp_path, postgres_server):
    table = new_lines_table(postgres_server)
    inject = "after-snapshot-before-ack@2,after-metadata-before-commit@3,mid-commit@4"
    env = checkpointed_env(
        make_env,
        tmp_path / "checkpoints",
        SPLITS,
        settings={"lockgate.testing.inject-failure": inject},
        restart=RestartStrategies.fixed_delay_restart(6, 10),
    )
    trap = Trap(record_in_epoch(5, split=1), tmp_path / "markers", times=2)
    build(env, postgres_server, table, trap)
    result = env.execute("jdbc exactly once")
    assert trap.fired() == 2 and result.restarts >= 4, result.restarts
    assert_same_lines(table_lines(postgres_server, table), reference(SPLITS))
    assert postgres_server.prepared_transactions() == []


def test_a_retried_task_without_its_open_transaction_fails_the_job_over(
    make_env, tmp_path, postgres_server
):
    """Checkpoints far apart: each subtask's transaction holds several epochs. A task that
    fails once is retried by Spark in a new instance, which cannot have that transaction:
    the job fails over to the start and writes everything once."""
    table = new_lines_table(postgres_server)
    env = checkpointed_env(make_env, tmp_path / "checkpoints", SPLITS, interval_ms=600_000)
    trap = Trap(record_in_epoch(3, split=0), tmp_path / "markers", times=1)
    build(env, postgres_server, table, trap)
    result = env.execute("jdbc exactly once, open transaction lost")
    assert trap.fired() == 1 and result.restarts == 1, result.restarts
    completed = [c for c in result.checkpoints if c.status == "COMPLETED"]
    assert len(completed) == 1, "only the final checkpoint: transactions spanned epochs"
    assert_same_lines(table_lines(postgres_server, table), reference(SPLITS))
    assert postgres_server.prepared_transactions() == []


def test_exactly_once_sink_without_exactly_once_checkpoints_fails_before_the_job(
    make_env, postgres_server
):
    env = make_env(SPLITS)
    table = new_lines_table(postgres_server)
    env.from_collection([Row(0, 1, 1)]).add_sink(exactly_once_sink(postgres_server, table)).uid(
        "orders-out"
    )
    with pytest.raises(ConfigurationError, match=r"uid 'orders-out'.*enable_checkpointing"):
        env.execute("no checkpoints")


def test_database_crash_and_restart_mid_run_leaves_each_row_exactly_once(
    make_env, tmp_path, postgres_server
):
    """PostgreSQL stops without a clean shutdown (``immediate``) once two checkpoints are
    complete, and comes back a second later: open transactions are gone, prepared ones
    survive; the job retries or fails over until it can write and commit again."""
    server = postgres_server
    table = new_lines_table(server)
    checkpoints = tmp_path / "checkpoints"
    env = checkpointed_env(
        make_env, checkpoints, SPLITS, restart=RestartStrategies.fixed_delay_restart(20, 500)
    )
    (
        driver_kill_job.counted_lines(env, SPLITS)
        .map(lambda line: Row(*(int(x) for x in line.split(","))))
        .add_sink(exactly_once_sink(server, table))
        .uid("jdbc")
    )
    restarted: list[float] = []

    def crash_and_restart() -> None:
        server.stop("immediate")
        time.sleep(1)
        server.start()
        restarted.append(time.monotonic())

    crasher = on_checkpoint(checkpoints, 2, crash_and_restart)
    env.execute("jdbc exactly once, database crash")
    ended = time.monotonic()
    crasher.join(timeout=60)
    assert crasher.done.is_set() and restarted[0] < ended, "the database was not down mid-run"
    # Whether the job failed over (result.restarts) depends on what the crash interrupted:
    # a batch retried on a new connection, a commit tried again, or a transaction lost
    assert_same_lines(table_lines(server, table), driver_kill_job.reference(SPLITS))
    assert server.prepared_transactions() == []


def test_subtask_hosts_killed_mid_run_leave_each_row_exactly_once(
    make_env, tmp_path, postgres_server
):
    """The executor's subtask hosts (where the sink's connections and open transactions
    live) are SIGKILLed mid-run, with checkpoints several epochs apart."""
    server = postgres_server
    table = new_lines_table(server)
    checkpoints = tmp_path / "checkpoints"
    env = checkpointed_env(
        make_env, checkpoints, SPLITS, interval_ms=2000,
        restart=RestartStrategies.fixed_delay_restart(10, 100),
    )  # fmt: skip
    (
        driver_kill_job.counted_lines(env, SPLITS)
        .map(lambda line: Row(*(int(x) for x in line.split(","))))
        .add_sink(exactly_once_sink(server, table))
        .uid("jdbc")
    )
    killed: list[int] = []
    killer = on_checkpoint(
        checkpoints, 2, lambda: killed.extend(kill(pid) for pid in subtask_hosts())
    )
    env.execute("jdbc exactly once, hosts killed")
    killer.join(timeout=60)
    assert killer.done.is_set() and killed, "no subtask host was killed"
    # Spark retries a task whose host died; a transaction lost with its host fails the job
    # over (result.restarts), which depends on where the kill fell
    assert_same_lines(table_lines(server, table), driver_kill_job.reference(SPLITS))
    assert server.prepared_transactions() == []


def kill(pid: int) -> int:
    os.kill(pid, signal.SIGKILL)
    return pid
