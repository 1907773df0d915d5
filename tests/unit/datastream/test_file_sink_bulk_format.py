"""``FileSink.for_bulk_format``'s builder, as PyFlink's: on-checkpoint rolling only, part names
ending ``.parquet`` unless an ``OutputFileConfig`` says otherwise; and its check before the
job of the Parquet files already under the base path (footers only)."""

from __future__ import annotations

import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lockgate.common import Encoder, Types
from lockgate.connectors.file.sink import SinkError
from lockgate.connectors.parquet.footers import CHECKED_FILES, ParquetOutputError
from lockgate.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    OutputFileConfig,
    RollingPolicy,
)
from lockgate.datastream.formats.parquet import ParquetBulkWriters

ROW_TYPE = Types.ROW_NAMED(["id", "name"], [Types.LONG(), Types.STRING()])


def builder(path) -> FileSink.BulkFormatBuilder:
    return FileSink.for_bulk_format(str(path), ParquetBulkWriters.for_row_type(ROW_TYPE))


def test_bulk_formats_roll_on_checkpoints_only():
    with pytest.raises(ValueError, match=r"on checkpoints only.*on_checkpoint_rolling_policy"):
        builder("/out").with_rolling_policy(RollingPolicy.default_rolling_policy())
    sink = builder("/out").with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
    assert sink.with_bucket_check_interval(1000).build()._settings.part_size >= 1 << 62


def test_part_names_end_with_parquet_unless_an_output_file_config_says_otherwise():
    assert builder("/out").build()._settings.part_suffix == ".parquet"
    configured = builder("/out").with_output_file_config(OutputFileConfig("data", "")).build()
    assert (configured._settings.part_prefix, configured._settings.part_suffix) == ("data", "")
    row_format = FileSink.for_row_format("/out", Encoder.simple_string_encoder()).build()
    assert row_format._settings.part_suffix == ""


def test_for_bulk_format_needs_a_bulk_writer_factory():
    with pytest.raises(TypeError, match="needs a BulkWriterFactory"):
        FileSink.for_bulk_format("/out", Encoder.simple_string_encoder())


def validate(path) -> None:
    sink = builder(path).with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build()
    validator = sink.operator_spec().validator
    assert validator is not None
    validator()


def write(path, table: pa.Table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def test_existing_files_of_the_row_type_or_hidden_or_of_other_names_are_accepted(tmp_path):
    validate(tmp_path / "new")  # a base path that does not exist yet
    write(tmp_path / "2024-01-01--10" / "part-a-0.parquet", pa.table({"id": [1], "name": ["a"]}))
    write(tmp_path / "extra.parquet", pa.table({"id": [1], "name": ["a"], "more": [1.5]}))
    write(tmp_path / ".part-b-0.parquet.inprogress.1", pa.table({"other": [1]}))
    write(tmp_path / "_temporary" / "x.parquet", pa.table({"other": [1]}))
    (tmp_path / "README.txt").write_text("not a part")
    validate(tmp_path)


@pytest.mark.parametrize(
    "table, message",
    [
        (pa.table({"id": ["1"], "name": ["a"]}), "column 'id' as string; the sink writes int64"),
        (pa.table({"id": [1]}), "no column 'name'"),
        # would only widen, yet Spark and pyarrow fail reading such a directory
        (pa.table({"id": pa.array([1], pa.int32()), "name": ["a"]}), "'id' as int32; .* int64"),
        (pa.table({"id": [1], "name": pa.array(["a"], pa.large_string())}), "'name' as large"),
    ],
)
def test_existing_files_of_another_schema_are_refused_naming_file_and_column(
    tmp_path, table, message
):
    write(tmp_path / "bucket" / "part-x-0.parquet", table)
    with pytest.raises(ParquetOutputError, match=f"part-x-0.parquet.*{message}"):
        validate(tmp_path)


def test_existing_files_of_nested_and_timestamp_columns_written_by_the_sink_are_accepted(
    tmp_path,
):
    row_type = Types.ROW_NAMED(
        ["tags", "m", "r", "ts"],
        [Types.LIST(Types.STRING()), Types.MAP(Types.STRING(), Types.LONG()),
         Types.ROW_NAMED(["x"], [Types.INT()]), Types.SQL_TIMESTAMP()],
    )  # fmt: skip
    factory = ParquetBulkWriters.for_row_type(row_type)
    with (tmp_path / "part-a-0.parquet").open("wb") as stream:
        writer = factory.create(stream)
        writer.finish()
    factory.check_output(str(tmp_path), ".parquet")


def test_a_file_named_like_a_part_that_is_not_parquet_is_refused(tmp_path):
    (tmp_path / "part-x-0.parquet").write_text("id,name\n1,a\n")
    with pytest.raises(ParquetOutputError, match=r"part-x-0\.parquet, which is not a Parquet file"):
        validate(tmp_path)


def test_only_the_footers_of_the_newest_files_are_read(tmp_path):
    """A start of the job reads a bounded number of footers, the newest files' (where a
    file of another schema comes from: an earlier run or another writer)."""
    good = pa.table({"id": [1], "name": ["a"]})
    bad = tmp_path / "part-old.parquet"
    write(bad, pa.table({"id": ["x"], "name": ["a"]}))
    os.utime(bad, (1_000_000, 1_000_000))
    for i in range(CHECKED_FILES):
        write(tmp_path / f"part-{i}.parquet", good)
    validate(tmp_path)  # the bad file is older than the checked ones
    os.utime(bad)  # now the newest
    with pytest.raises(ParquetOutputError, match=r"part-old\.parquet has the column 'id'"):
        validate(tmp_path)


@pytest.mark.parametrize(
    "prefix, suffix, message",
    [
        (".data", "", "part prefix '.data' starts with '.'"),
        ("_data", "", "part prefix '_data' starts with '_'"),
        ("a/b", "", "part prefix 'a/b' holds a path separator"),
        ("data", ".x/parquet", "part suffix '.x/parquet' holds a path separator"),
    ],
)
def test_part_names_that_would_not_be_visible_files_are_refused_before_the_job(
    tmp_path, prefix, suffix, message
):
    sink = builder(tmp_path).with_output_file_config(OutputFileConfig(prefix, suffix)).build()
    validator = sink.operator_spec().validator
    assert validator is not None
    with pytest.raises(SinkError, match=f"OutputFileConfig: the {re.escape(message)}"):
        validator()
