"""FileSource jobs in CSV, JSON lines and Parquet: keyed counts committed exactly once across
a task failure and a restore from a retained checkpoint, a monitored directory, and bad
input failing the job naming the file and the line (or, for Parquet, before it starts)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from exactly_once_job import (
    KEYS,
    PER_SPLIT,
    RETAIN,
    UIDS,
    CountPerKey,
    Trap,
    checkpointed_env,
    chk_dirs,
    committed_lines,
    file_sink,
    only_job_dir,
    record_in_epoch,
    recovery_settings,
)
from lockgate_it_support import BACKENDS, SparkJobCounter, collect, matrix, run_in_thread

from lockgate.common import Duration, RestartStrategies, Types, WatermarkStrategy
from lockgate.datastream.connectors.file_system import FileSource
from lockgate.datastream.formats.csv import CsvReaderFormat, CsvSchema
from lockgate.datastream.formats.json import JsonLinesReaderFormat
from lockgate.datastream.formats.parquet import ParquetColumnarRowInputFormat
from lockgate.runtime.errors import JobExecutionError

SPLITS = 3  # input files
ROW_GROUP = 120  # Parquet rows per row group: two row groups (splits) per file
NUMBERS = Types.ROW_NAMED(["split", "i", "label"], [Types.INT(), Types.LONG(), Types.STRING()])


def write_numbers(fmt: str, path: Path, split: int, count: int = PER_SPLIT) -> None:
    """Records (split, i, label) for i below ``count``, in the format ``fmt``."""
    if fmt == "csv":
        lines = [f'{split},{i},"label, {i}"' for i in range(count)]
        path.write_text("split,i,label\n" + "\n".join(lines) + "\n")
    elif fmt == "json":
        lines = [json.dumps({"split": split, "i": i, "label": f"label {i}"}) for i in range(count)]
        path.write_text("\n".join(lines) + "\n")
    else:
        table = pa.table(
            {
                "split": pa.array([split] * count, pa.int32()),
                "i": pa.array(range(count), pa.int64()),
                "label": [f"label {i}" for i in range(count)],
            }
        )
        pq.write_table(table, path, row_group_size=ROW_GROUP)


def number_files(fmt: str, directory: Path) -> Path:
    directory.mkdir()
    for split in range(SPLITS):
        write_numbers(fmt, directory / f"numbers-{split}.{fmt}", split)
    return directory


def source(fmt: str, *paths: Path, monitor_ms: int | None = None) -> FileSource:
    located = [str(p) for p in paths]
    if fmt == "parquet":
        builder = FileSource.for_bulk_file_format(
            ParquetColumnarRowInputFormat(NUMBERS, batch_size=50), *located
        )
    elif fmt == "json":
        builder = FileSource.for_record_stream_format(
            JsonLinesReaderFormat.for_row_type(NUMBERS), *located
        )
    else:
        schema = (
            CsvSchema.builder()
            .add_number_column("split", Types.INT())
            .add_number_column("i")
            .add_string_column("label")
            .set_use_header()
            .set_strict_headers()
            .build()
        )
        builder = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), *located)
    if monitor_ms is not None:
        builder = builder.monitor_continuously(Duration.of_millis(monitor_ms))
    return builder.build()


def numbers(env, file_source: FileSource):
    """The records as (split, i) (a function of this module would be pickled by reference,
    which Spark's workers cannot import: a lambda is pickled whole)."""
    return (
        env.from_source(file_source, WatermarkStrategy.no_watermarks(), "numbers")
        .uid(UIDS[0])
        .map(lambda row: (row.split, row.i) if row.label.endswith(str(row.i)) else row)
    )


def count_job(env, file_source: FileSource, out: Path, trap: Trap | None = None) -> None:
    (
        numbers(env, file_source)
        .key_by(lambda r: (r[0], r[1] % KEYS))
        .process(CountPerKey(trap))
        .uid(UIDS[1])
        .sink_to(file_sink(out))
        .uid(UIDS[2])
    )


def assert_counted_exactly_once(out: Path) -> None:
    """Every record's count line is committed once, and each key counted 1, 2, ..., n.

    The row groups of one Parquet file are read in parallel, so a key's records may be
    counted in any order: the check is on each key's records and counts, not their pairs.
    A lost or repeated record, or a state update lost or applied twice, changes them."""
    lines = committed_lines(out)
    assert all(n == 1 for n in lines.values()), [line for line, n in lines.items() if n > 1][:5]
    records: dict[tuple[int, int], list[int]] = {}
    counts: dict[tuple[int, int], list[int]] = {}
    for line in lines:
        split, i, count = (int(x) for x in line.split(","))
        records.setdefault((split, i % KEYS), []).append(i)
        counts.setdefault((split, i % KEYS), []).append(count)
    expected = {
        (split, k): list(range(k, PER_SPLIT, KEYS)) for split in range(SPLITS) for k in range(KEYS)
    }
    assert {key: sorted(found) for key, found in records.items()} == expected
    for key, found in counts.items():
        assert sorted(found) == list(range(1, len(expected[key]) + 1)), key
    staged = [p.name for p in out.rglob(".*") if "inprogress" in p.name]
    assert not staged, f"staged part files left behind: {staged[:5]}"


# `make test` runs Parquet (splits by row group); CSV and JSON lines, whose byte-offset
# positions their unit tests cover epoch by epoch, run in `make integration-full`
@matrix("fmt", ["parquet", "csv", "json"])
@matrix("parallelism", [3, 1])
@BACKENDS
def test_keyed_counts_are_committed_exactly_once_across_a_task_failure(
    make_env, tmp_path, fmt, parallelism
):
    inputs = number_files(fmt, tmp_path / "in")
    env = checkpointed_env(
        make_env,
        tmp_path / "checkpoints",
        parallelism,
        settings={"lockgate.testing.inject-failure": "after-snapshot-before-ack@2"},
    )
    count_job(env, source(fmt, inputs), tmp_path / "out")
    result = env.execute(f"{fmt} counts")
    assert result.restarts == 1
    epochs = [e.epoch for e in result.epochs]
    assert max(epochs) >= 3 and epochs == sorted(set(epochs)), epochs
    assert_counted_exactly_once(tmp_path / "out")


@pytest.mark.parametrize("fmt", ["parquet", pytest.param("csv", marks=pytest.mark.full)])
def test_a_job_restored_from_a_retained_checkpoint_reads_each_record_once(make_env, tmp_path, fmt):
    inputs = number_files(fmt, tmp_path / "in")
    out = tmp_path / "out"
    checkpoints = tmp_path / "checkpoints"
    poison = tmp_path / "poison"
    poison.write_text("")
    trap = Trap(record_in_epoch(2), tmp_path / "markers", poison=poison)
    first = checkpointed_env(
        make_env, checkpoints, 3, retained=3, retention=RETAIN,
        restart=RestartStrategies.no_restart(),
    )  # fmt: skip
    count_job(first, source(fmt, inputs), out, trap)
    with pytest.raises(JobExecutionError, match="trap fired"):
        first.execute("first run")
    poison.unlink()
    [*_, latest] = chk_dirs(only_job_dir(checkpoints))
    second = checkpointed_env(make_env, checkpoints, 3, settings=recovery_settings(latest))
    count_job(second, source(fmt, inputs), out)
    second.execute("restored run")
    assert_counted_exactly_once(out)


class ParquetWriter(threading.Thread):
    """Adds Parquet files to a directory, each written under a hidden name and renamed."""

    def __init__(self, directory: Path, splits: range, count: int):
        super().__init__(daemon=True)
        self.directory = directory
        self.splits = splits
        self.count = count

    def run(self) -> None:
        for split in self.splits:
            time.sleep(0.3)
            hidden = self.directory / f".numbers-{split}.parquet.inprogress"
            write_numbers("parquet", hidden, split, self.count)
            os.rename(hidden, self.directory / f"numbers-{split}.parquet")


def test_a_monitored_directory_reads_parquet_files_added_while_running(make_env, tmp_path):
    directory = tmp_path / "incoming"
    directory.mkdir()
    write_numbers("parquet", directory / "numbers-0.parquet", 0, 150)
    env = make_env(parallelism=2, max_records_per_split=50, **{"lockgate.source.idle-poll-ms": 50})
    stream = numbers(env, source("parquet", directory, monitor_ms=100))
    writer = ParquetWriter(directory, range(1, 3), 150)
    writer.start()
    expected = [(split, i) for split in range(3) for i in range(150)]
    actual = run_in_thread(lambda: stream.execute_and_collect(limit=len(expected)), 90)
    writer.join(5)
    assert Counter(actual) == Counter(expected)


def test_a_bad_csv_line_fails_the_job_naming_file_and_line(make_env, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text('split,i,label\n0,0,"a"\n0,x,"b"\n')
    env = make_env(parallelism=1)
    with pytest.raises(Exception, match=rf"CsvReaderFormat cannot read {path}, line 3: column 'i'"):
        collect(numbers(env, source("csv", path)))


def test_a_parquet_file_of_another_schema_fails_before_the_job_starts(make_env, spark, tmp_path):
    inputs = number_files("parquet", tmp_path / "in")
    pq.write_table(pa.table({"split": [1.5], "i": [1], "label": ["x"]}), inputs / "other.parquet")
    env = make_env(parallelism=2)
    jobs = SparkJobCounter(spark)
    with pytest.raises(Exception, match=r"other.parquet: column 'split' holds double"):
        collect(numbers(env, source("parquet", inputs)))
    assert jobs.none_started()
