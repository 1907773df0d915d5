"""The Delta sink: a checkpoint's rows appear in the table as one Delta commit, every row
exactly once across failures (read back by delta-rs and pandas), in the table's partitions;
tables the sink cannot append to and rows that do not fit the row type are refused."""

from __future__ import annotations

import duckdb
import pytest
from exactly_once_job import (
    KEYS,
    PARALLELISMS,
    PER_SPLIT,
    CountPerKey,
    Trap,
    assert_same_lines,
    checkpointed_env,
    record_in_epoch,
    records,
    reference,
)
from lockgate_it_support import BACKENDS
from sink_readback import LINE_ROW, delta_lines, line_row

from lockgate.common import Row
from lockgate.connectors.delta.table import DeltaTableError
from lockgate.datastream.connectors.delta import DeltaSink
from lockgate.runtime.errors import JobExecutionError


def delta_sink(path, partitioned: bool = True) -> DeltaSink:
    builder = DeltaSink.for_row_data(str(path), LINE_ROW)
    if partitioned:
        builder = builder.with_partition_columns("split")
    return builder.build()


@BACKENDS
@PARALLELISMS
def test_delta_table_holds_each_row_once_across_failures(make_env, tmp_path, parallelism):
    trap = Trap(record_in_epoch(3, split=parallelism - 1), tmp_path / "markers", times=2)
    env = checkpointed_env(
        make_env,
        tmp_path / "checkpoints",
        parallelism,
        settings={"lockgate.testing.inject-failure": "after-metadata-before-commit@2"},
    )
    (
        env.from_collection(records(parallelism))
        .set_parallelism(parallelism)
        .uid("numbers")
        .key_by(lambda r: (r[0], r[1] % KEYS))
        .process(CountPerKey(trap))
        .uid("count-per-key")
        .map(line_row, output_type=LINE_ROW)
        .sink_to(delta_sink(tmp_path / "table"))
        .uid("delta-sink")
    )
    result = env.execute("delta failures")
    assert result.restarts == 2
    assert_same_lines(delta_lines(tmp_path / "table"), reference(parallelism))

    from deltalake import DeltaTable

    table = DeltaTable(str(tmp_path / "table"))
    assert table.metadata().partition_columns == ["split"]
    frame = table.to_pandas()
    assert len(frame) == parallelism * PER_SPLIT
    # DuckDB through delta-rs's dataset (its own delta extension downloads at run time)
    dataset = table.to_pyarrow_dataset()  # noqa: F841 - DuckDB finds it by its name
    assert duckdb.sql("SELECT count(*), count(DISTINCT (split, i)) FROM dataset").fetchall() == [
        (parallelism * PER_SPLIT, parallelism * PER_SPLIT)
    ]
    # one commit per completed checkpoint that had rows, none for a redone commit
    commits = [c for c in table.history() if c.get("operation") != "CREATE TABLE"]
    assert len(commits) <= len(result.checkpoints) + 1


def test_tables_and_rows_that_do_not_fit_are_refused(make_env, tmp_path):
    env = make_env(parallelism=1)
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "notes.txt").write_text("not a table")
    env.from_collection([Row(split=1, i=1, n=1)]).sink_to(delta_sink(tmp_path / "plain"))
    with pytest.raises(DeltaTableError, match="holds files and is not a Delta table"):
        env.execute("into a plain directory")

    env = make_env(parallelism=1)
    (
        env.from_collection([Row(split=1, i=2, n=3), Row(split=1, i=2, n="three")])
        .sink_to(delta_sink(tmp_path / "table", partitioned=False))
        .uid("delta-sink")
    )
    with pytest.raises(JobExecutionError, match=r"(?s)delta-sink.*subtask 0.*'three'"):
        env.execute("a string for a LONG")
