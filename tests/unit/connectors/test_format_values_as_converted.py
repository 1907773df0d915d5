"""The rows CSV, JSON lines and Parquet sources read are handed on without converting them
again (``Source.produced_type``): each value must already be what ``record_converter`` of
the row type makes of it, as PyFlink's coders would (FLOAT rounded to single precision,
SQL_TIMESTAMP cut to milliseconds)."""

from __future__ import annotations

import datetime
import decimal
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from file_source_epochs import flat, read_epochs

from lockgate.common import Types
from lockgate.common.type_conversion import record_converter
from lockgate.core.source import SourceError
from lockgate.datastream.connectors.file_system import FileSource
from lockgate.datastream.formats.csv import CsvReaderFormat, CsvSchema
from lockgate.datastream.formats.json import JsonLinesReaderFormat
from lockgate.datastream.formats.parquet import ParquetColumnarRowInputFormat

STAMP = datetime.datetime(1969, 12, 31, 23, 59, 59, 123456)  # before 1970: floors, not rounds


def assert_as_converted(rows, row_type) -> None:
    convert = record_converter(row_type)
    assert convert is not None and rows
    for row in rows:
        again = convert(row)
        assert [repr(v) for v in again._values] == [repr(v) for v in row._values], row


def test_csv_values_are_as_converted(tmp_path):
    schema = (
        CsvSchema.builder()
        .add_number_column("f", Types.FLOAT())
        .add_number_column("d", Types.DOUBLE())
        .add_number_column("dec", Types.BIG_DEC())
        .add_number_column("big", Types.BIG_INT())
        .add_array_column("fs", element_type=Types.FLOAT())
        .build()
    )
    path = tmp_path / "a.csv"
    path.write_text("0.1,0.1,1.10,12,0.1;0.2\n")
    source = FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(schema), str(path)
    ).build()
    assert_as_converted(flat(read_epochs(source, 1, 10)), schema.get_type_info())


def test_json_values_are_as_converted(tmp_path):
    row_type = Types.ROW_NAMED(
        ["f", "d", "dec", "ts", "t", "fs", "r"],
        [Types.FLOAT(), Types.DOUBLE(), Types.BIG_DEC(), Types.SQL_TIMESTAMP(),
         Types.SQL_TIME(), Types.LIST(Types.FLOAT()),
         Types.ROW_NAMED(["f"], [Types.FLOAT()])],
    )  # fmt: skip
    line = {"f": 0.1, "d": 1, "dec": 1.1, "ts": STAMP.isoformat(), "t": "12:30:00.123456",
            "fs": [0.1], "r": {"f": 0.3}}  # fmt: skip
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(line) + "\n")
    source = FileSource.for_record_stream_format(
        JsonLinesReaderFormat.for_row_type(row_type), str(path)
    ).build()
    assert_as_converted(flat(read_epochs(source, 1, 10)), row_type)


def test_parquet_values_are_as_converted(tmp_path):
    row_type = Types.ROW_NAMED(
        ["f", "d", "dec", "ts", "t", "r"],
        [Types.FLOAT(), Types.DOUBLE(), Types.BIG_DEC(), Types.SQL_TIMESTAMP(),
         Types.SQL_TIME(), Types.ROW_NAMED(["ts"], [Types.SQL_TIMESTAMP()])],
    )  # fmt: skip
    table = pa.table(
        {
            "f": pa.array([0.1], pa.float32()),
            "d": pa.array([1], pa.int32()),
            "dec": pa.array([decimal.Decimal("1.10")], pa.decimal128(10, 2)),
            "ts": pa.array([STAMP], pa.timestamp("us")),
            "t": pa.array([datetime.time(12, 30, 0, 123456)], pa.time64("us")),
            "r": pa.array([{"ts": STAMP}], pa.struct([("ts", pa.timestamp("us"))])),
        }
    )
    path = tmp_path / "a.parquet"
    pq.write_table(table, path)
    source = FileSource.for_bulk_file_format(
        ParquetColumnarRowInputFormat(row_type), str(path)
    ).build()
    rows = flat(read_epochs(source, 1, 10))
    assert rows[0].ts == datetime.datetime(1969, 12, 31, 23, 59, 59, 123000)
    assert_as_converted(rows, row_type)


def test_a_parquet_big_int_beyond_a_long_fails_naming_the_file(tmp_path):
    """record_converter holds a BIG_INT in a long, as PyFlink's coder; a decimal(38, 0)
    column holds more."""
    path = tmp_path / "big.parquet"
    values = [decimal.Decimal(1 << 62), decimal.Decimal(1 << 63)]
    pq.write_table(pa.table({"n": pa.array(values, pa.decimal128(38, 0))}), path)
    row_type = Types.ROW_NAMED(["n"], [Types.BIG_INT()])
    source = FileSource.for_bulk_file_format(
        ParquetColumnarRowInputFormat(row_type), str(path)
    ).build()
    with pytest.raises(SourceError, match=r"big\.parquet: the BIG_INT value 9223372036854775808"):
        flat(read_epochs(source, 1, 10))
