"""Rows/s of DataFrames, CSV, JSON lines and Parquet in, Parquet and Delta out, beside Spark.

lockgate and Spark (Structured Streaming, or batch for the DataFrame) in one Spark session
on ``local[2]``.

The rows (written beforehand by Spark, deterministically, from ``spark.range``): ``id``
(LONG), ``k = id % --keys`` (INT), ``v = id * 0.5`` (DOUBLE) and ``s = 'user-' || k``
(STRING), in ``--files`` files per format. Every lockgate job checkpoints every
``--checkpoint-ms`` (1 s) in ``EXACTLY_ONCE`` mode, at parallelism 2. Each case runs
lockgate and then its Spark peer, ``--runs`` times in turn (default 1, which keeps the
default run near 10 minutes on 2 cores; each run is printed); rows/s = rows / wall time,
the median of the runs. The Spark session is warmed up first (a small job of each kind),
and the data is written before any case is timed (the DataFrame case's when it starts).

Cases (``case=...``):

- ``dataframe``: ``env.from_dataframe(spark.read.parquet(dir))`` of ``--dataframe-rows``
  rows (default 10M) -> ``key_by(k)`` -> a count per key in ``ValueState``, every update
  emitted -> ``DiscardingSink``. The time is that of ``env.execute()``: the staging job
  (the DataFrame read and written as Arrow files into the work directory), every epoch,
  the checkpoints and the end of the job. Spark's peer is what a Spark user runs on a
  DataFrame: the batch ``spark.read.parquet(dir).groupBy("k").count().write.parquet(out)``
  (no state store, no checkpoints); its time is that of the write.
- ``csv``, ``json``, ``parquet``: ``FileSource`` with ``CsvReaderFormat.for_schema``,
  ``JsonLinesReaderFormat.for_row_type`` or ``ParquetColumnarRowInputFormat`` over
  ``--rows`` rows (default 1M) -> the same count -> ``DiscardingSink``; the time is that of
  ``env.execute()``. Spark's peer: ``spark.readStream.schema(...).csv/json/parquet(dir)`` ->
  ``groupBy("k").count()`` (a streaming aggregation, state in the default state store) in
  ``update`` mode -> ``foreachBatch`` writing each micro-batch's counts as Parquet, with a
  checkpoint location and ``trigger(availableNow=True)`` (every file in one micro-batch);
  its time is from ``start()`` to the end of ``awaitTermination()``.
- ``parquet_sink``, ``delta_sink``: the Parquet ``FileSource`` of the ``--rows`` rows ->
  ``FileSink.for_bulk_format(out, ParquetBulkWriters.for_row_type(row_type))`` (into the
  base path) or ``DeltaSink.for_row_data(out, row_type).build()`` (unpartitioned: a
  partition column of 10k values would make 10k directories per checkpoint), exactly once:
  every row is written, a part file per subtask and epoch. The time is that of
  ``env.execute()``, the last checkpoint's commit included; the output is read back
  afterwards and must hold every row (else a ``WARNING`` line). Spark's peer for Parquet:
  ``spark.readStream.schema(...).parquet(dir)`` -> ``writeStream.format("parquet")`` (its
  exactly-once file sink, append) with ``trigger(availableNow=True)``. Delta on Spark
  cannot run here (Delta Lake's Spark jars come from Maven Central, which this machine
  cannot reach): its figure is ``nan``, with the reason on the case's line.

Spark runs with ``spark.sql.shuffle.partitions`` = ``--shuffle-partitions`` (2, one per
core, instead of Spark's 200), its default (HDFS-backed, in-memory) state store, and
adaptive query execution on (the default; Spark turns it off for streaming queries). What
the two do per row differs, as each engine's documented way does: Spark's counts read only
the column ``k`` (its Parquet reader decodes no other column, its CSV and JSON parsers
convert no other field), run in the JVM on columns, and write one count per key and
micro-batch; lockgate's turn every row into a ``Row`` of all four fields in Python, run
the keyed function on it and emit every update. The sink cases move every field of every
row on both.

Each case prints ``formats case=... lockgate_rows_per_s=... spark_rows_per_s=...
ratio=...`` (lockgate's rows/s over Spark's); the last line is the figures line:

    formats dataframe_rows_per_s=... dataframe_spark_rows_per_s=... dataframe_ratio=...
    csv_rows_per_s=... ... delta_sink_ratio=nan

Run: ``python bench/formats.py [--rows N] [--dataframe-rows N] [--keys K] [--files F]
[--runs R] [--cases dataframe,csv,json,parquet,parquet_sink,delta_sink]``.
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pyarrow.dataset

from lockgate.common import Configuration, Types, WatermarkStrategy
from lockgate.common import config_options as options
from lockgate.datastream import (
    CheckpointingMode,
    KeyedProcessFunction,
    StreamExecutionEnvironment,
)
from lockgate.datastream.connectors import DiscardingSink
from lockgate.datastream.connectors.delta import DeltaSink
from lockgate.datastream.connectors.file_system import BucketAssigner, FileSink, FileSource
from lockgate.datastream.formats.csv import CsvReaderFormat, CsvSchema
from lockgate.datastream.formats.json import JsonLinesReaderFormat
from lockgate.datastream.formats.parquet import ParquetBulkWriters, ParquetColumnarRowInputFormat
from lockgate.datastream.state import ValueStateDescriptor

CASES = ("dataframe", "csv", "json", "parquet", "parquet_sink", "delta_sink")
ROW_TYPE = Types.ROW_NAMED(
    ["id", "k", "v", "s"], [Types.LONG(), Types.INT(), Types.DOUBLE(), Types.STRING()]
)
SPARK_SCHEMA = "id BIGINT, k INT, v DOUBLE, s STRING"
Timed = Callable[[], float]  # a run of a case: its seconds
NO_SPARK_DELTA = "Delta Lake's Spark jars come from Maven Central, which this machine cannot reach"


class Count(KeyedProcessFunction):
    """A count per key in ValueState; every update is emitted."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield value.k, count


def key_of(row):
    return row.k


def write_rows(spark, rows: int, keys: int, files: int, root: Path) -> dict[str, str]:
    """The rows as Parquet, CSV and JSON lines, ``files`` files each: directory per format."""
    df = spark.range(0, rows, 1, files).selectExpr(
        "id",
        f"cast(id % {keys} as int) as k",
        "cast(id as double) * 0.5 as v",
        f"concat('user-', cast(id % {keys} as string)) as s",
    )
    dirs = {}
    for name in ("parquet", "csv", "json"):
        path = root / name
        getattr(df.write, name)(str(path))
        dirs[name] = str(path)
    return dirs


def environment(spark, work_dir: str, args):
    config = Configuration()
    config.set_string(options.WORK_DIR.key, work_dir)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.configure(config)
    env.set_parallelism(2)
    env.enable_checkpointing(args.checkpoint_ms, CheckpointingMode.EXACTLY_ONCE)
    return env


def file_source(name: str, path: str) -> FileSource:
    if name == "csv":
        schema = (
            CsvSchema.builder()
            .add_number_column("id", number_type=Types.LONG())
            .add_number_column("k", number_type=Types.INT())
            .add_number_column("v", number_type=Types.DOUBLE())
            .add_string_column("s")
            .build()
        )
        return FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), path).build()
    if name == "json":
        stream_format = JsonLinesReaderFormat.for_row_type(ROW_TYPE)
        return FileSource.for_record_stream_format(stream_format, path).build()
    bulk_format = ParquetColumnarRowInputFormat(ROW_TYPE)
    return FileSource.for_bulk_file_format(bulk_format, path).build()


def timed_execute(env, name: str) -> float:
    started = time.perf_counter()
    env.execute(name)
    return time.perf_counter() - started


def lockgate_count(spark, work_dir, args, stream_of) -> float:
    """Seconds of ``env.execute()`` of ``stream_of(env)`` -> keyed count -> discarding."""
    env = environment(spark, work_dir, args)
    stream_of(env).key_by(key_of).process(Count()).sink_to(DiscardingSink())
    return timed_execute(env, "formats count")


def lockgate_sink(spark, work_dir, args, source_dir: str, sink_name: str, out: str) -> float:
    env = environment(spark, work_dir, args)
    if sink_name == "parquet_sink":
        sink = (
            FileSink.for_bulk_format(out, ParquetBulkWriters.for_row_type(ROW_TYPE))
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
            .build()
        )
    else:
        sink = DeltaSink.for_row_data(out, ROW_TYPE).build()
    rows = env.from_source(
        file_source("parquet", source_dir), WatermarkStrategy.no_watermarks(), "rows"
    )
    rows.sink_to(sink).uid(sink_name)
    return timed_execute(env, f"formats {sink_name}")


def written_rows(sink_name: str, out: str) -> int:
    if sink_name == "delta_sink":
        from deltalake import DeltaTable

        return DeltaTable(out).to_pyarrow_dataset().count_rows()
    return pyarrow.dataset.dataset(out, format="parquet").count_rows()


class CountsWriter:
    """Spark's foreachBatch sink: each micro-batch's counts appended as Parquet."""

    def __init__(self, out: str):
        self.out = out

    def __call__(self, batch, batch_id: int) -> None:
        batch.write.mode("append").parquet(self.out)


def spark_stream(spark, reader: str, source_dir: str, scratch: Path, count: bool) -> float:
    """Seconds of a Structured Streaming query over ``source_dir`` with availableNow: a count
    per key written by foreachBatch as Parquet, or (``count`` False) the rows written by
    Spark's Parquet file sink."""
    stream = getattr(spark.readStream.schema(SPARK_SCHEMA), reader)(source_dir)
    run = scratch / uuid.uuid4().hex
    if count:
        counts = stream.groupBy("k").count().writeStream.outputMode("update")
        writer = counts.foreachBatch(CountsWriter(str(run / "out")))
    else:
        writer = stream.writeStream.format("parquet").option("path", str(run / "out"))
    started = time.perf_counter()
    query = (
        writer.option("checkpointLocation", str(run / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    seconds = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(f"Spark's query failed: {query.exception()}")
    shutil.rmtree(run, ignore_errors=True)
    return seconds


def spark_batch_count(spark, source_dir: str, scratch: Path) -> float:
    out = scratch / uuid.uuid4().hex
    started = time.perf_counter()
    spark.read.parquet(source_dir).groupBy("k").count().write.parquet(str(out))
    seconds = time.perf_counter() - started
    shutil.rmtree(out, ignore_errors=True)
    return seconds


def case_runs(
    name: str, rows: int, runs: int, lockgate: Timed, spark: Timed | None
) -> tuple[float, float]:
    """Median rows/s of lockgate and Spark (``nan`` for a peer that cannot run)."""
    ours, theirs = [], []
    for number in range(runs):
        ours.append(rows / lockgate())
        theirs.append(rows / spark() if spark is not None else math.nan)
        print(
            f"run {number + 1} case={name} rows={rows} lockgate_rows_per_s={ours[-1]:.0f} "
            f"spark_rows_per_s={theirs[-1]:.0f}",
            flush=True,
        )
    return statistics.median(ours), statistics.median(theirs)


def plan(
    case: str, spark, args, root: Path, files: dict[str, str]
) -> tuple[int, Timed, Timed | None]:
    """A case's rows, its lockgate run and its Spark run (None: Spark cannot run it); each
    run returns its seconds."""
    work_dir, scratch = str(root / "work"), root / "scratch"
    if case == "dataframe":
        big = write_rows(spark, args.dataframe_rows, args.keys, args.files, root / "big")
        df = spark.read.parquet(big["parquet"])
        return (
            args.dataframe_rows,
            lambda: lockgate_count(spark, work_dir, args, lambda env: env.from_dataframe(df)),
            lambda: spark_batch_count(spark, big["parquet"], scratch),
        )
    if case in ("csv", "json", "parquet"):
        source = file_source(case, files[case])
        return (
            args.rows,
            lambda: lockgate_count(
                spark,
                work_dir,
                args,
                lambda env: env.from_source(source, WatermarkStrategy.no_watermarks(), case),
            ),
            lambda: spark_stream(spark, case, files[case], scratch, count=True),
        )

    def ours() -> float:
        out = str(scratch / uuid.uuid4().hex)
        seconds = lockgate_sink(spark, work_dir, args, files["parquet"], case, out)
        found = written_rows(case, out)
        if found != args.rows:
            print(f"formats case={case} WARNING: wrote {found} of {args.rows} rows")
        shutil.rmtree(out, ignore_errors=True)
        return seconds

    if case == "delta_sink":
        return args.rows, ours, None
    return (
        args.rows,
        ours,
        lambda: spark_stream(spark, "parquet", files["parquet"], scratch, count=False),
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rows", type=int, default=1_000_000, help="rows of the file cases (default 1M)"
    )
    parser.add_argument(
        "--dataframe-rows",
        type=int,
        default=10_000_000,
        help="rows of the from_dataframe case (default 10M)",
    )
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=4, help="files per format")
    parser.add_argument(
        "--runs", type=int, default=1, help="runs per case (default 1); medians reported"
    )
    parser.add_argument("--checkpoint-ms", type=int, default=1000)
    parser.add_argument("--shuffle-partitions", type=int, default=2)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    args.cases = [case.strip() for case in args.cases.split(",") if case.strip()]
    unknown = set(args.cases) - set(CASES)
    if unknown:
        parser.error(f"unknown cases {sorted(unknown)}: use {', '.join(CASES)}")
    return args


def main() -> None:
    args = parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from keyed_count import start_session

    spark = start_session(args.master)
    spark.conf.set("spark.sql.shuffle.partitions", str(args.shuffle_partitions))
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-formats-") as temp:
        root = Path(temp)
        small = write_rows(spark, 20_000, args.keys, 2, root / "small")
        files = write_rows(spark, args.rows, args.keys, args.files, root / "rows")
        # Warm up: the Python workers, lockgate in them, Spark's streaming and batch paths.
        warm_df = spark.read.parquet(small["parquet"])
        lockgate_count(spark, str(root / "work"), args, lambda env: env.from_dataframe(warm_df))
        spark_stream(spark, "parquet", small["parquet"], root / "scratch", count=True)
        spark_batch_count(spark, small["parquet"], root / "scratch")
        for case in args.cases:
            rows, ours, theirs = plan(case, spark, args, root, files)
            lockgate_rate, spark_rate = case_runs(case, rows, args.runs, ours, theirs)
            ratio = lockgate_rate / spark_rate if spark_rate > 0 else math.nan
            reason = f" spark_skipped: {NO_SPARK_DELTA}" if theirs is None else ""
            print(
                f"formats case={case} rows={rows} lockgate_rows_per_s={lockgate_rate:.0f} "
                f"spark_rows_per_s={spark_rate:.0f} ratio={ratio:.3g}{reason}",
                flush=True,
            )
            figures[f"{case}_rows_per_s"] = lockgate_rate
            figures[f"{case}_spark_rows_per_s"] = spark_rate
            figures[f"{case}_ratio"] = ratio
    spark.stop()
    print(
        "formats "
        + " ".join(
            f"{key}={value:.3g}" if key.endswith("ratio") else f"{key}={value:.0f}"
            for key, value in figures.items()
        )
    )


if __name__ == "__main__":
    main()
