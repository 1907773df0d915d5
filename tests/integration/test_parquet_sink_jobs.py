"""FileSink.for_bulk_format with ParquetBulkWriters: the counting job of ``exactly_once_job``
writes its ``(split, i, count)`` rows as Parquet, exactly once across a failed task that
restores a checkpoint and a crash between a checkpoint and its commits; pyarrow and Spark read
the directory back, also while the job runs (they see committed parts only)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from exactly_once_job import (
    KEYS,
    CountPerKey,
    Trap,
    assert_same_lines,
    checkpointed_env,
    record_in_epoch,
    records,
    reference,
)
from lockgate_it_support import BACKENDS, matrix

from lockgate.common import Configuration, RestartStrategies, Row, Types
from lockgate.connectors.parquet.footers import ParquetOutputError
from lockgate.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    OutputFileConfig,
)
from lockgate.datastream.formats.parquet import ParquetBulkWriters
from lockgate.runtime.errors import JobExecutionError

ROW_TYPE = Types.ROW_NAMED(["split", "i", "n"], [Types.INT(), Types.LONG(), Types.LONG()])
SPARK_SCHEMA = "split INT, i BIGINT, n BIGINT"


def to_row(line: str) -> Row:
    split, i, n = (int(x) for x in line.split(","))
    return Row(split=split, i=i, n=n)


def parquet_sink(out: Path, output: OutputFileConfig | None = None) -> FileSink:
    config = Configuration()
    config.set_string("parquet.compression", "ZSTD")
    builder = FileSink.for_bulk_format(
        str(out), ParquetBulkWriters.for_row_type(ROW_TYPE, config)
    ).with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
    if output is not None:
        builder = builder.with_output_file_config(output)
    return builder.build()


def build_job(env, out: Path, splits: int, trap: Trap | None = None) -> None:
    (
        env.from_collection(records(splits))
        .set_parallelism(splits)
        .uid("numbers")
        .key_by(lambda r: (r[0], r[1] % KEYS))
        .process(CountPerKey(trap))
        .uid("count-per-key")
        .map(to_row, output_type=ROW_TYPE)
        .uid("to-row")
        .sink_to(parquet_sink(out))
        .uid("parquet")
    )


def lines(rows) -> Counter:
    return Counter(f"{r['split']},{r['i']},{r['n']}" for r in rows)


def pyarrow_lines(out: Path) -> Counter:
    return lines(pq.read_table(out).to_pylist())


def spark_lines(spark, out: Path) -> Counter:
    frame = spark.read.schema(SPARK_SCHEMA).parquet(str(out))
    return lines(row.asDict() for row in frame.collect())


@BACKENDS
@matrix("parallelism", [3, 1])
def test_parquet_written_exactly_once_across_a_restore_and_an_interrupted_commit(
    make_env, spark, tmp_path, parallelism
):
    """A trap raising twice on a record of epoch 4 exhausts Spark's task retry: the job
    restores its latest checkpoint. The driver fails once after checkpoint 2's metadata,
    before its commits: the restore commits its pending Parquet parts again."""
    out = tmp_path / "out"
    trap = Trap(record_in_epoch(4, split=parallelism - 1), tmp_path / "markers", times=2)
    env = checkpointed_env(
        make_env,
        tmp_path / "checkpoints",
        parallelism,
        settings={"lockgate.testing.inject-failure": "after-metadata-before-commit@2"},
    )
    build_job(env, out, parallelism, trap)
    result = env.execute("parquet exactly once")
    assert trap.fired() == 2 and result.restarts == 2
    expected = reference(parallelism)
    assert_same_lines(pyarrow_lines(out), expected)
    assert_same_lines(spark_lines(spark, out), expected)
    names = [p.name for p in out.iterdir()]
    assert names and all(n.startswith("part-") and n.endswith(".parquet") for n in names), names
    footer = pq.ParquetFile(next(out.iterdir())).metadata
    assert footer.row_group(0).column(0).compression == "ZSTD"


class Slow:
    def __init__(self, seconds: float):
        self.seconds = seconds

    def __call__(self, line: str) -> Row:
        time.sleep(self.seconds)
        return to_row(line)


def test_readers_of_a_running_job_see_committed_parts_only(make_env, spark, tmp_path):
    """While the job runs, pyarrow and Spark read the directory again and again: never an
    error (a hidden in-progress or pending file, or a half-written one, would be one), and
    always whole epochs of rows, exactly once."""
    out = tmp_path / "out"
    out.mkdir()
    splits = 2
    env = checkpointed_env(make_env, tmp_path / "checkpoints", splits)
    (
        env.from_collection(records(splits))
        .set_parallelism(splits)
        .key_by(lambda r: (r[0], r[1] % KEYS))
        .process(CountPerKey())
        .map(Slow(0.002), output_type=ROW_TYPE)
        .sink_to(parquet_sink(out))
    )
    done = threading.Event()
    seen: list[Counter] = []

    def run() -> None:
        try:
            env.execute("parquet while running")
        finally:
            done.set()

    job = threading.Thread(target=run, daemon=True)
    job.start()
    expected = reference(splits)
    while not done.is_set():
        seen.append(pyarrow_lines(out))
        if len(seen) % 10 == 1:
            seen.append(spark_lines(spark, out))
    job.join()
    assert_same_lines(pyarrow_lines(out), expected)
    partial = [s for s in seen if 0 < sum(s.values()) < sum(expected.values())]
    assert partial, "no read saw the job mid-run"
    for lines_seen in seen:
        assert not lines_seen - expected, "a reader saw a row twice or a row not committed"


class AsRow:
    """The stream's records as Rows, one of them with a string where the type has a LONG;
    the map declares no output type, so the Parquet writer is the first to check."""

    def __call__(self, value: int) -> Row:
        return Row(split=0, i="seven" if value == 7 else value, n=1)


def test_a_record_not_matching_the_row_type_fails_the_job_naming_it(make_env, tmp_path):
    env = make_env(parallelism=1)
    env.set_restart_strategy(RestartStrategies.no_restart())
    env.from_collection(list(range(20))).map(AsRow()).sink_to(parquet_sink(tmp_path / "out")).uid(
        "parquet-sink"
    )
    with pytest.raises(JobExecutionError) as info:
        env.execute("bad record")
    message = str(info.value)
    for part in ("uid 'parquet-sink'", "subtask 0/1", "epoch 1", "'seven'", "Long"):
        assert part in message, message


def test_existing_files_of_another_schema_fail_the_job_before_its_first_epoch(
    make_env, spark, tmp_path
):
    out = tmp_path / "out"
    spark.createDataFrame([("a", 1)], "split STRING, i BIGINT").write.parquet(str(out))
    env = make_env(parallelism=1)
    env.from_collection([1]).map(AsRow(), output_type=ROW_TYPE).sink_to(parquet_sink(out))
    # Spark wrote a part per partition of the DataFrame; either may be checked first
    with pytest.raises(ParquetOutputError, match=r"part-0000\d-.*\.parquet.*column 'split'"):
        env.execute("existing files")


def test_spark_reads_the_buckets_of_the_default_assigner_recursively(make_env, spark, tmp_path):
    """The default date-time buckets are plain directories under the base path: Spark finds
    no file in the base itself, and reads the buckets with ``recursiveFileLookup``."""
    out = tmp_path / "out"
    env = make_env(parallelism=1)
    sink = FileSink.for_bulk_format(str(out), ParquetBulkWriters.for_row_type(ROW_TYPE)).build()
    env.from_collection([Row(split=0, i=i, n=1) for i in range(3)], type_info=ROW_TYPE).sink_to(
        sink
    )
    env.execute("date-time buckets")
    assert [p.name for p in out.iterdir() if not p.name.startswith((".", "_"))], "no bucket"
    assert all(p.is_dir() for p in out.iterdir())
    with pytest.raises(Exception, match="UNABLE_TO_INFER_SCHEMA"):
        spark.read.parquet(str(out))
    frame = spark.read.option("recursiveFileLookup", "true").parquet(str(out))
    assert sorted(row["i"] for row in frame.collect()) == [0, 1, 2]
