"""JdbcSink in jobs on Spark, against a real PostgreSQL (``postgres_server``): upserts at
least once, so a job that fails and restores ends with the table a run without failures
gives; records reach the database by the end of their epoch."""

from __future__ import annotations

import uuid

import psycopg
from exactly_once_job import KEYS, CountPerKey, Trap, checkpointed_env, record_in_epoch, records

from lockgate.common import Row
from lockgate.datastream.connectors.jdbc import (
    JdbcConnectionOptions,
    JdbcExecutionOptions,
    JdbcSink,
)

SPLITS = 2


def new_table(server) -> str:
    table = f"counts_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server.conninfo, autocommit=True) as connection:
        connection.execute(
            f"CREATE TABLE {table} (split int, k int, n int, PRIMARY KEY (split, k))"
        )
    return table


def jdbc_sink(server, table: str, batch_size: int = 7) -> JdbcSink:
    return JdbcSink.sink(
        f"INSERT INTO {table} (split, k, n) VALUES (?, ?, ?) "
        "ON CONFLICT (split, k) DO UPDATE SET n = GREATEST(excluded.n, " + table + ".n)",
        None,
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder()
        .with_url(server.url)
        .with_driver_name("org.postgresql.Driver")
        .with_user_name("test")
        .build(),
        JdbcExecutionOptions.builder().with_batch_size(batch_size).build(),
    )


def table_rows(server, table: str) -> dict[tuple[int, int], int]:
    with psycopg.connect(server.conninfo) as connection:
        rows = connection.execute(f"SELECT split, k, n FROM {table}").fetchall()
    return {(split, k): n for split, k, n in rows}


def test_upserts_at_least_once_end_with_the_table_of_a_run_without_failures(
    make_env, tmp_path, postgres_server
):
    table = new_table(postgres_server)
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 2)
    trap = Trap(record_in_epoch(3, split=1), tmp_path / "markers", times=2)
    (
        env.from_collection(records(SPLITS))
        .set_parallelism(SPLITS)
        .key_by(lambda r: (r[0], r[1] % KEYS))
        .process(CountPerKey(trap))
        .uid("count")
        .map(lambda line: Row(*(int(x) for x in line.split(","))))
        .map(lambda r: Row(r[0], r[1] % KEYS, r[2]))
        .add_sink(jdbc_sink(postgres_server, table))
    )
    result = env.execute("jdbc at least once")
    assert trap.fired() == 2 and result.restarts >= 1
    expected: dict[tuple[int, int], int] = {}
    for split, i in records(SPLITS):
        key = (split, i % KEYS)
        expected[key] = expected.get(key, 0) + 1
    assert table_rows(postgres_server, table) == expected
