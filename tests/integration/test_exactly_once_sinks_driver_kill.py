"""The driver of a job with exactly-once sinks to PostgreSQL, Kafka and Parquet files is
SIGKILLed, then the job resumes from its latest checkpoint (``sinks_kill_job.py`` in a process
of its own, see ``driver_process``): read back with SQL, by a read_committed consumer and by
pyarrow, every line is there exactly once, and no prepared transaction is left."""

from __future__ import annotations

import time
from pathlib import Path

import driver_kill_job
import pytest
from driver_process import completed_checkpoints, kill_group, log_tail, start_driver
from exactly_once_job import assert_same_lines
from lockgate_it_support import FULL
from sink_readback import delta_lines, new_lines_table, parquet_lines, table_lines, topic_lines

SCRIPT = Path(__file__).with_name("sinks_kill_job.py")
SPLITS = 2


@pytest.mark.parametrize(
    "kill",
    [
        "after-metadata-before-commit@3",
        pytest.param("", marks=FULL),  # SIGKILLed from outside, after two checkpoints
    ],
)
def test_killed_driver_resumes_with_each_line_exactly_once_in_every_sink(
    tmp_path, postgres_server, kafka_broker, kill
):
    """With ``after-metadata-before-commit@3`` the driver dies once checkpoint 3 is complete
    and before its commits: its PostgreSQL transactions stay prepared, its Kafka records
    staged, its Parquet parts pending and its Delta data files out of the table's log, none
    of it visible; the resumed job, restoring checkpoint 3, commits them."""
    server = postgres_server
    table = new_lines_table(server)
    topic = kafka_broker.create_topic(2)
    checkpoints = tmp_path / "checkpoints"
    parquet = tmp_path / "parquet"
    delta = tmp_path / "delta"

    def args(kill: str, sleep_s: float, *recovery: Path) -> list[str]:
        return [server.url, table, kafka_broker.bootstrap_servers, topic, str(parquet),
                str(delta), str(checkpoints), str(tmp_path / "work"), str(SPLITS), kill,
                str(sleep_s), *map(str, recovery)]  # fmt: skip

    sleep_s = 0 if kill else driver_kill_job.SLEEP_S  # slow enough to be killed mid-run
    first, first_log = start_driver(tmp_path, "first", SCRIPT, args(kill, sleep_s))
    try:
        if kill:
            assert first.wait(timeout=120) == -9, log_tail(tmp_path, "first")
        else:
            deadline = time.monotonic() + 120
            while len(list(checkpoints.glob("*/chk-*/_metadata"))) < 2:
                assert first.poll() is None, log_tail(tmp_path, "first")
                assert time.monotonic() < deadline, log_tail(tmp_path, "first")
                time.sleep(0.05)
    finally:
        kill_group(first)
        first_log.close()
    [job_dir] = [p for p in checkpoints.iterdir() if p.is_dir()]
    latest = completed_checkpoints(job_dir)[-1]
    expected = driver_kill_job.reference(SPLITS)
    outputs = (
        table_lines(server, table),
        topic_lines(kafka_broker, topic, 2),
        parquet_lines(parquet),
        delta_lines(delta),
    )
    for before in outputs:
        assert sum(before.values()) < sum(expected.values()) and not before - expected
    if kill:
        assert latest.name == "chk-3"
        assert server.prepared_transactions(), "checkpoint 3's transactions were not prepared"
        assert list(job_dir.rglob("*.records")), "checkpoint 3's records were not staged"
        assert list(parquet.glob(".part-*.parquet.inprogress.*")), "no Parquet part is pending"

    second, second_log = start_driver(tmp_path, "second", SCRIPT, args("", 0, latest))
    try:
        assert second.wait(timeout=180) == 0, log_tail(tmp_path, "second")
    finally:
        kill_group(second)
        second_log.close()
    assert_same_lines(table_lines(server, table), expected)
    assert_same_lines(topic_lines(kafka_broker, topic, 2), expected)
    assert_same_lines(parquet_lines(parquet), expected)
    assert_same_lines(delta_lines(delta), expected)
    assert not list(parquet.glob(".*")), "a Parquet part was left hidden"
    assert server.prepared_transactions() == []
