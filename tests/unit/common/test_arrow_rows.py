"""Rows to Arrow batches and back: every Types.* that has a column type, nulls, nested rows,
and the schema checks that refuse columns of another kind."""

import datetime
import decimal

import pyarrow as pa
import pytest

from lockgate.common import Row, Types
from lockgate.common.arrow_rows import (
    ArrowTypeError,
    RowsFromArrow,
    RowsToArrow,
    arrow_schema,
    check_columns,
    conform,
    row_type_of,
)
from lockgate.common.time import Instant

ROW_TYPE = Types.ROW_NAMED(
    ["id", "name", "score", "ok", "tags", "counts", "inner", "at", "day", "big", "dec", "raw"],
    [
        Types.LONG(),
        Types.STRING(),
        Types.DOUBLE(),
        Types.BOOLEAN(),
        Types.LIST(Types.STRING()),
        Types.MAP(Types.STRING(), Types.INT()),
        Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.TUPLE([Types.STRING(), Types.LONG()])]),
        Types.INSTANT(),
        Types.SQL_DATE(),
        Types.BIG_INT(),
        Types.BIG_DEC(),
        Types.PRIMITIVE_ARRAY(Types.BYTE()),
    ],
)


def full_row(i: int) -> Row:
    return Row(
        id=i,
        name=f"n{i}",
        score=i / 2,
        ok=i % 2 == 0,
        tags=["x", None],
        counts={"k": i},
        inner=Row(a=i, b=("s", 7)),
        at=Instant.of_epoch_milli(1_700_000_000_123 + i),
        day=datetime.date(2024, 1, 1 + i),
        big=(1 << 62) + i,  # a long, as record_converter holds a BIG_INT
        dec=decimal.Decimal("1.500000000000000000"),
        raw=bytes([i]),
    )


def test_rows_round_trip_through_a_batch() -> None:
    rows = [full_row(1), full_row(2), Row(*([7] + [None] * 11))]
    rows[2].set_field_names(ROW_TYPE.get_field_names())
    batch = RowsToArrow(ROW_TYPE, "test").batch(rows)
    assert batch.schema == arrow_schema(ROW_TYPE, "test")
    back = RowsFromArrow(ROW_TYPE, "test").rows(batch)
    assert back == rows
    assert back[0].inner.a == 1 and back[0]["name"] == "n1"
    assert back[0].at == rows[0].at and back[0].inner.b == ("s", 7)


def test_a_schema_maps_back_to_the_row_type() -> None:
    assert row_type_of(arrow_schema(ROW_TYPE, "t"), "t") == Types.ROW_NAMED(
        ROW_TYPE.get_field_names(),
        [
            Types.LONG(),
            Types.STRING(),
            Types.DOUBLE(),
            Types.BOOLEAN(),
            Types.LIST(Types.STRING()),
            Types.MAP(Types.STRING(), Types.INT()),
            Types.ROW_NAMED(
                ["a", "b"],
                [Types.INT(), Types.ROW_NAMED(["f0", "f1"], [Types.STRING(), Types.LONG()])],
            ),
            Types.INSTANT(),
            Types.SQL_DATE(),
            Types.BIG_INT(),
            Types.BIG_DEC(),
            Types.PRIMITIVE_ARRAY(Types.BYTE()),
        ],
    )


def test_pickled_fields_have_no_column_type() -> None:
    with pytest.raises(ArrowTypeError, match=r"field 'x'.*PICKLED_BYTE_ARRAY"):
        arrow_schema(Types.ROW_NAMED(["x"], [Types.PICKLED_BYTE_ARRAY()]), "sink 's'")
    with pytest.raises(ArrowTypeError, match=r"a row type is needed"):
        arrow_schema(Types.LONG(), "sink 's'")
    with pytest.raises(ArrowTypeError, match=r"names a field twice"):
        arrow_schema(Types.ROW_NAMED(["a", "a"], [Types.INT(), Types.INT()]), "s")


def test_conform_widens_and_reorders_but_refuses_other_kinds() -> None:
    batch = pa.RecordBatch.from_pydict(
        {
            "s": pa.array(["1", "x"]),
            "i": pa.array([1, 2], pa.int32()),
            "f": pa.array([0.5, 1.5], pa.float32()),
        }
    )
    want = pa.schema([("f", pa.float64()), ("i", pa.int64())])
    out = conform(batch, want, "file f.parquet")
    assert out.schema == want and out.column(1).to_pylist() == [1, 2]
    for field, message in [
        (("s", pa.int64()), "column 's' holds string, the row type declares int64"),
        (("i", pa.int16()), "holds int32"),
        (("f", pa.int64()), "holds float"),
        (("q", pa.int64()), "no column 'q'"),
    ]:
        with pytest.raises(ArrowTypeError, match=message):
            conform(batch, pa.schema([field]), "file f.parquet")
    with pytest.raises(ArrowTypeError, match=r"file f.parquet: column 's'"):
        check_columns(batch.schema, pa.schema([("s", pa.int64())]), "file f.parquet")


def test_a_value_that_does_not_fit_its_column_names_the_column() -> None:
    row_type = Types.ROW_NAMED(["n"], [Types.INT()])
    with pytest.raises(ArrowTypeError, match=r"column 'n' \(int32\)"):
        RowsToArrow(row_type, "t").batch([Row(n=1 << 40)])
