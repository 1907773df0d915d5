"""``driver_kill_job``'s counting job writing to PostgreSQL exactly once, run as its own
driver process by ``test_jdbc_exactly_once_jobs.py`` (not a test).

    python jdbc_kill_job.py JDBC_URL TABLE CHECKPOINTS WORK PARALLELISM KILL SLEEP_S [RECOVERY]

Each ``split,i,count`` line is a plain INSERT into TABLE (split, i, n): a row written twice
stays twice. KILL is ``lockgate.testing.kill-driver`` ('' for none); SLEEP_S slows each
record down (0 when the job is not killed from outside).
"""

from __future__ import annotations

import sys

from driver_kill_job import counted_lines, environment, print_result

from lockgate.common import Row
from lockgate.datastream.connectors.jdbc import (
    JdbcConnectionOptions,
    JdbcExecutionOptions,
    JdbcSink,
)


def main(argv: list[str]) -> None:
    url, table, checkpoints, work, parallelism, kill, sleep_s = argv[:7]
    recovery = argv[7] if len(argv) > 7 else ""
    splits = int(parallelism)
    settings = {"lockgate.testing.kill-driver": kill} if kill else {}
    env = environment(checkpoints, work, splits, "hashmap", recovery, settings)
    sink = JdbcSink.exactly_once_sink(
        f"INSERT INTO {table} (split, i, n) VALUES (?, ?, ?)",
        None,
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder()
        .with_url(url)
        .with_user_name("test")
        .build(),
        JdbcExecutionOptions.builder().with_batch_size(50).build(),
    )
    (
        counted_lines(env, splits, float(sleep_s))
        .map(lambda line: Row(*(int(x) for x in line.split(","))))
        .uid("to-row")
        .add_sink(sink)
        .uid("jdbc")
    )
    print_result(env.execute("jdbc driver kill"))


if __name__ == "__main__":
    main(sys.argv[1:])
