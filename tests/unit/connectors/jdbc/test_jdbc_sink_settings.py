"""The JDBC sink's settings: JDBC URLs and statements made PostgreSQL's, and the checks
before a job starts, against a real server (``postgres_server``)."""

from __future__ import annotations

import psycopg
import pytest

from lockgate.connectors.jdbc.sink import (
    JdbcSinkError,
    conninfo,
    numbered_statement,
    postgres_statement,
)
from lockgate.datastream.connectors.jdbc import (
    JdbcConnectionOptions,
    JdbcExecutionOptions,
    JdbcSink,
)


def test_jdbc_statements_get_postgres_parameters_outside_quotes():
    sql = "INSERT INTO t (a, b) VALUES (?, ?) ON CONFLICT (a) DO UPDATE SET b = '?%' || ?"
    statement, count = postgres_statement(sql)
    assert count == 3
    assert statement == (
        "INSERT INTO t (a, b) VALUES (%s, %s) ON CONFLICT (a) DO UPDATE SET b = '?%%' || %s"
    )
    assert numbered_statement(sql).endswith(
        "VALUES ($1, $2) ON CONFLICT (a) DO UPDATE SET b = '?%' || $3"
    )


@pytest.mark.parametrize(
    ("sql", "statement", "count"),
    [
        (
            "-- the account's total\nINSERT INTO t VALUES (?, ?)",
            "-- the account's total\nINSERT INTO t VALUES (%s, %s)",
            2,
        ),
        ("SELECT $$ it's ? $$, ?", "SELECT $$ it's ? $$, %s", 1),
        ("SELECT $q$ ? $q$, ?", "SELECT $q$ ? $q$, %s", 1),
        ("SELECT E'it\\'s ?', ?", "SELECT E'it\\'s ?', %s", 1),
        ("SELECT 'a''?', ? /* ? */", "SELECT 'a''?', %s /* ? */", 1),
        ("SELECT a ?? b, ?", "SELECT a ? b, %s", 1),  # ??: the ? operator, as in PgJDBC
    ],
)
def test_parameters_in_comments_quotes_and_doubled_are_not_parameters(sql, statement, count):
    assert postgres_statement(sql) == (statement, count)


def test_a_jdbc_url_becomes_connection_parameters():
    assert conninfo("jdbc:postgresql://db.example:6543/sales?sslmode=require", "u", "p") == {
        "host": "db.example",
        "port": 6543,
        "dbname": "sales",
        "sslmode": "require",
        "connect_timeout": 10,
        "user": "u",
        "password": "p",
    }
    with pytest.raises(JdbcSinkError, match=r"'jdbc:mysql://h/d' is not a PostgreSQL one"):
        conninfo("jdbc:mysql://h/d", None, None)
    with pytest.raises(ValueError, match=r"writes to PostgreSQL only"):
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_driver_name("com.mysql.Driver")
    with pytest.raises(ValueError, match=r"batch size must be an int of at least 1"):
        JdbcExecutionOptions.builder().with_batch_size(0)


def sink(url: str, sql: str) -> JdbcSink:
    options = (
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder()
        .with_url(url)
        .with_user_name("test")
        .build()
    )
    return JdbcSink.sink(sql, None, options)


def test_the_check_before_the_job_runs_nothing_of_the_statement(postgres_server):
    with psycopg.connect(postgres_server.conninfo, autocommit=True) as connection:
        connection.execute("CREATE TABLE IF NOT EXISTS kept (a int)")
        connection.execute("INSERT INTO kept VALUES (1)")
    two = sink(postgres_server.url, "INSERT INTO kept VALUES (?); DELETE FROM kept")
    with pytest.raises(JdbcSinkError, match=r"cannot insert multiple commands"):
        two._settings.validate()
    sink(
        postgres_server.url + "?connect_timeout=5", "INSERT INTO kept VALUES (?)"
    )._settings.validate()
    with psycopg.connect(postgres_server.conninfo) as connection:
        assert connection.execute("SELECT count(*) FROM kept").fetchone() == (1,)


def test_a_missing_table_and_an_unreachable_database_fail_before_the_job(postgres_server):
    missing = sink(postgres_server.url, "INSERT INTO no_such_table VALUES (?)")
    with pytest.raises(JdbcSinkError, match=r"statement .*no_such_table.* fails: .*does not exist"):
        missing._settings.validate()
    down = sink("jdbc:postgresql://127.0.0.1:1/postgres", "SELECT ?")
    with pytest.raises(JdbcSinkError, match=r"JdbcSink to 127.0.0.1:1/postgres: cannot connect"):
        down._settings.validate()
