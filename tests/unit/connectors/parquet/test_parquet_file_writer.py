"""``ParquetFileWriter`` (through ``ParquetBulkWriters``' factory): rows of every column type
come back from the file as written, a row that does not match the row type fails naming the
field, SQL_TIMESTAMP values become instants by UTC or by the local time zone, and a row type
that cannot be written is refused when the factory is built."""

from __future__ import annotations

import datetime
import decimal
import io
import pickle
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lockgate.common import Row, Types
from lockgate.common.arrow_rows import ArrowTypeError
from lockgate.common.time import Instant
from lockgate.common.type_conversion import RecordTypeError
from lockgate.datastream.formats.parquet import ParquetBulkWriters


def write(row_type, rows, utc_timestamp: bool = False) -> pa.Table:
    factory = ParquetBulkWriters.for_row_type(row_type, utc_timestamp=utc_timestamp)
    stream = io.BytesIO()
    writer = factory.create(stream)
    for row in rows:
        writer.add_element(row)
    writer.finish()
    return pq.read_table(io.BytesIO(stream.getvalue()))


def test_rows_of_every_column_type_come_back_as_written():
    names = ["b", "i", "l", "f", "d", "s", "bytes", "dec", "date", "time", "at", "tags", "m", "r"]
    types = [Types.BOOLEAN(), Types.INT(), Types.LONG(), Types.FLOAT(), Types.DOUBLE(),
             Types.STRING(), Types.PRIMITIVE_ARRAY(Types.BYTE()), Types.BIG_DEC(),
             Types.SQL_DATE(), Types.SQL_TIME(), Types.INSTANT(), Types.LIST(Types.STRING()),
             Types.MAP(Types.STRING(), Types.LONG()),
             Types.ROW_NAMED(["x", "y"], [Types.INT(), Types.STRING()])]  # fmt: skip
    row = Row(True, 7, 1 << 40, 1.5, 2.25, "ä", b"\x00\x01", decimal.Decimal("1.5"),
              datetime.date(2024, 2, 29), datetime.time(12, 30), Instant(1_700_000_000, 0),
              ["a", None], {"k": 1}, Row(x=1, y="z"))  # fmt: skip
    rows = [Row(**dict(zip(names, values, strict=True))) for values in (row, [None] * 14)]
    table = write(Types.ROW_NAMED(names, types), rows)
    first, second = table.to_pylist()
    assert table.schema.names == names
    assert first["s"] == "ä" and first["bytes"] == b"\x00\x01" and first["l"] == 1 << 40
    assert first["dec"] == decimal.Decimal("1.5") and first["m"] == [("k", 1)]
    assert first["r"] == {"x": 1, "y": "z"} and first["tags"] == ["a", None]
    assert first["at"] == datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.UTC)
    assert set(second.values()) == {None}


def test_many_rows_are_written_in_batches_in_order():
    row_type = Types.ROW_NAMED(["id"], [Types.LONG()])
    table = write(row_type, [Row(id=i) for i in range(10_000)])
    assert table.column("id").to_pylist() == list(range(10_000))


ROW_TYPE = Types.ROW_NAMED(["id", "name"], [Types.LONG(), Types.STRING()])


@pytest.mark.parametrize(
    "record, message",
    [
        (Row(id="7", name="a"), "str value '7' does not match type Long"),
        (Row(id=1), "no field name"),
        (Row(1, "a", 3), "3 fields, the type has 2"),
        ((1, "a"), "a Row is needed"),
        (Row(id=1 << 63, name="a"), "out of range"),
    ],
)
def test_a_row_not_matching_the_row_type_fails_naming_what_differs(record, message):
    writer = ParquetBulkWriters.for_row_type(ROW_TYPE).create(io.BytesIO())
    with pytest.raises(RecordTypeError, match=message):
        writer.add_element(record)


@pytest.mark.parametrize(
    "field_type, value, message",
    [
        (Types.BIG_DEC(), decimal.Decimal("1e-30"), "more than 18 digits after"),
        (Types.BIG_DEC(), decimal.Decimal("0.1234567890123456789"), "more than 18 digits after"),
        (Types.BIG_DEC(), decimal.Decimal("1e25"), "more than 20 digits before"),
        (Types.BIG_DEC(), decimal.Decimal("NaN"), "not a finite number"),
        (Types.LIST(Types.BIG_DEC()), [decimal.Decimal("Infinity")], "\\[\\]'.*finite"),
    ],
)
def test_a_decimal_arrow_cannot_hold_fails_the_record_that_holds_it(field_type, value, message):
    """Checked per record, not when its batch of 4096 rows is converted: the error comes
    from the record itself, so the sink names that record."""
    row_type = Types.ROW_NAMED(["dec"], [field_type])
    writer = ParquetBulkWriters.for_row_type(row_type).create(io.BytesIO())
    fine = [decimal.Decimal("1.5")] if field_type == Types.LIST(Types.BIG_DEC()) else 1
    writer.add_element(Row(dec=fine))
    with pytest.raises(ArrowTypeError, match=f"field 'dec.*{message}"):
        writer.add_element(Row(dec=value))


def test_decimals_that_fit_are_written_exactly():
    values = [decimal.Decimal("1.500000000000000000000"), decimal.Decimal("-" + "9" * 20),
              decimal.Decimal("0E-30"), decimal.Decimal("0.000000000000000001")]  # fmt: skip
    table = write(Types.ROW_NAMED(["dec"], [Types.BIG_DEC()]), [Row(dec=v) for v in values])
    assert table.column("dec").to_pylist() == values


@pytest.fixture
def berlin(monkeypatch):
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_sql_timestamps_are_instants_by_utc_or_by_the_local_time_zone(berlin):
    row_type = Types.ROW_NAMED(["ts"], [Types.SQL_TIMESTAMP()])
    rows = [Row(ts=datetime.datetime(2024, 7, 1, 12, 0, 0, 250000)), Row(ts=None)]
    for utc_timestamp, hour in ((True, 12), (False, 10)):  # Berlin is UTC+2 in July
        table = write(row_type, rows, utc_timestamp=utc_timestamp)
        assert table.schema.field("ts").type == pa.timestamp("us", tz="UTC")
        at = datetime.datetime(2024, 7, 1, hour, 0, 0, 250000, tzinfo=datetime.UTC)
        assert table.column("ts").to_pylist() == [at, None]


def test_nested_sql_timestamps_are_written_as_utc_only():
    nested = Types.ROW_NAMED(["r"], [Types.ROW_NAMED(["ts"], [Types.SQL_TIMESTAMP()])])
    with pytest.raises(ArrowTypeError, match=r"field 'r'.*pass utc_timestamp=True"):
        ParquetBulkWriters.for_row_type(nested)
    stamp = datetime.datetime(2024, 7, 1, 12, 0)
    table = write(nested, [Row(r=Row(ts=stamp))], utc_timestamp=True)
    assert table.to_pylist() == [{"r": {"ts": stamp.replace(tzinfo=datetime.UTC)}}]


def test_row_types_that_cannot_be_written_are_refused_when_the_factory_is_built():
    with pytest.raises(ArrowTypeError, match=r"field 'x'.*PICKLED_BYTE_ARRAY"):
        ParquetBulkWriters.for_row_type(Types.ROW_NAMED(["x"], [Types.PICKLED_BYTE_ARRAY()]))
    with pytest.raises(ArrowTypeError, match=r"Types.ROW_NAMED\(\[...\], \[...\]\)"):
        ParquetBulkWriters.for_row_type(Types.LONG())
    with pytest.raises(TypeError, match="hadoop_config must be a Configuration"):
        ParquetBulkWriters.for_row_type(ROW_TYPE, {"parquet.compression": "ZSTD"})


def test_the_factory_ships_without_what_it_built_for_writing():
    factory = ParquetBulkWriters.for_row_type(ROW_TYPE)
    factory.create(io.BytesIO())
    shipped = pickle.loads(pickle.dumps(factory))
    assert shipped._rows is None and shipped.get_row_type() == ROW_TYPE
