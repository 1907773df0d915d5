"""Declared types convert records as PyFlink's coders do, and print as Flink's Java
``toString``."""

from __future__ import annotations

import datetime
import decimal

import pytest

from lockgate.common.type_conversion import (
    RecordTypeError,
    java_formatter,
    record_converter,
)
from lockgate.common.typeinfo import LocalTimeTypeInfo, Types
from lockgate.common.types import Row, RowKind
from lockgate.datastream import StreamExecutionEnvironment

WORD_COUNT = Types.ROW_NAMED(["word", "count"], [Types.STRING(), Types.INT()])


def convert(type_info, value):
    converter = record_converter(type_info)
    assert converter is not None
    return converter(value)


def test_no_type_and_pickled_bytes_leave_records_unchanged():
    assert record_converter(None) is None
    assert record_converter(Types.PICKLED_BYTE_ARRAY()) is None
    assert java_formatter(None) is None
    assert java_formatter(Types.PICKLED_BYTE_ARRAY()) is None


def test_row_named_gives_a_row_with_the_types_field_names():
    row = convert(WORD_COUNT, Row("and", 5))
    assert type(row) is Row
    assert (row.word, row["count"]) == ("and", 5)
    assert repr(row) == "Row(word='and', count=5)"


def test_a_named_row_is_read_by_the_types_field_names():
    row = convert(WORD_COUNT, Row(count=5, word="and"))
    assert tuple(row) == ("and", 5)
    assert row._fields == ("word", "count")


def test_a_row_keeps_its_kind_and_is_a_new_row():
    """PyFlink's coder writes the kind with the row and reads back a new Row."""
    for kind in RowKind:
        given = Row.of_kind(kind, "and", 5)
        row = convert(WORD_COUNT, given)
        assert row.get_row_kind() is kind
        assert row == Row.of_kind(kind, word="and", count=5)
        assert row is not given
    row[1] = 6  # the converted row is the next operator's: changing it leaves the given one
    assert given[1] == 5


def test_a_row_is_not_a_tuple_to_a_tuple_type():
    with pytest.raises(RecordTypeError, match="a tuple is needed"):
        convert(Types.TUPLE([Types.STRING(), Types.INT()]), Row("and", 5))


def test_row_without_names_gets_flinks_default_names():
    row = convert(Types.ROW([Types.STRING(), Types.LONG()]), Row("a", 1))
    assert (row.f0, row.f1) == ("a", 1)


def test_row_fields_may_be_null():
    assert tuple(convert(WORD_COUNT, Row("a", None))) == ("a", None)


def test_tuple_gives_a_tuple_of_converted_fields():
    value = convert(Types.TUPLE([Types.STRING(), Types.DOUBLE(), Types.BOOLEAN()]), ("a", 1, 1))
    assert value == ("a", 1.0, True)
    assert type(value) is tuple
    assert type(value[1]) is float and type(value[2]) is bool


def test_primitives():
    assert convert(Types.INT(), 7) == 7
    assert convert(Types.LONG(), True) == 1 and type(convert(Types.LONG(), True)) is int
    assert convert(Types.DOUBLE(), 3) == 3.0 and type(convert(Types.DOUBLE(), 3)) is float
    # a float is of single precision, as Java's
    assert convert(Types.FLOAT(), 5) == 5.0
    assert convert(Types.FLOAT(), 0.1) == 0.10000000149011612
    assert convert(Types.BIG_DEC(), 1.5) == decimal.Decimal("1.5")
    assert convert(Types.STRING(), "x") == "x"
    stamp = datetime.datetime(2024, 1, 2, 3, 4, 5, 123456)
    assert convert(Types.SQL_TIMESTAMP(), stamp) == stamp.replace(microsecond=123000)


def test_map_list_and_nested():
    nested = Types.MAP(Types.STRING(), Types.LIST(Types.ROW_NAMED(["x"], [Types.DOUBLE()])))
    value = convert(nested, {"k": [Row(1), None], "e": None})
    assert value == {"k": [Row(x=1.0), None], "e": None}
    assert value["k"][0].x == 1.0
    assert convert(Types.PRIMITIVE_ARRAY(Types.BYTE()), b"\x01") == b"\x01"
    assert convert(Types.BASIC_ARRAY(Types.INT()), (1, 2)) == [1, 2]
    inner = Types.TUPLE([Types.STRING(), Types.PICKLED_BYTE_ARRAY()])
    assert convert(Types.TUPLE([inner]), (("a", {1}),)) == (("a", {1}),)


@pytest.mark.parametrize(
    ("type_info", "value", "message"),
    [
        (
            WORD_COUNT,
            ("and", 5),
            "tuple value ('and', 5) does not match type RowTypeInfo(word: String, count: "
            "Integer) (a Row is needed: return Row(...))",
        ),
        (
            WORD_COUNT,
            Row("and", 5, 6),
            "Row value <Row('and', 5, 6)> does not match type RowTypeInfo(word: String, count: "
            "Integer) (3 fields, the type has 2)",
        ),
        (
            WORD_COUNT,
            Row(word="and", n=5),
            "Row value Row(word='and', n=5) does not match type RowTypeInfo(word: String, "
            "count: Integer) (no field count)",
        ),
        (WORD_COUNT, Row("and", "5"), "str value '5' does not match type Integer"),
        (
            Types.TUPLE([Types.INT()]),
            (1, 2),
            "tuple value (1, 2) does not match type TupleTypeInfo(Integer) (2 fields, the "
            "type has 1)",
        ),
        (Types.INT(), 1 << 31, "int value 2147483648 does not match type Integer (out of range"),
        (Types.LONG(), 1.5, "float value 1.5 does not match type Long"),
        (Types.STRING(), None, "NoneType value None does not match type String"),
        (Types.MAP(Types.STRING(), Types.INT()), [], "list value [] does not match type Map"),
    ],
)
def test_a_record_that_does_not_match_its_type_fails_clearly(type_info, value, message):
    with pytest.raises(RecordTypeError) as failure:
        convert(type_info, value)
    assert str(failure.value).startswith(message)


def show(type_info, value):
    formatter = java_formatter(type_info)
    assert formatter is not None
    return formatter(value)


def test_tuple_prints_as_javas_tuple():
    assert show(Types.TUPLE([Types.STRING(), Types.INT()]), ("And", 5)) == "(And,5)"
    four = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.INT()])
    assert show(four, ("hi", 0, 5, 4)) == "(hi,0,5,4)"


def test_row_prints_with_its_row_kind():
    assert show(WORD_COUNT, Row("And", 5)) == "+I[And, 5]"
    assert show(WORD_COUNT, Row("And", None)) == "+I[And, null]"
    shown = [show(WORD_COUNT, Row.of_kind(kind, "And", 5)) for kind in RowKind]
    assert shown == ["+I[And, 5]", "-U[And, 5]", "+U[And, 5]", "-D[And, 5]"]
    nested = Types.ROW([Types.ROW([Types.INT()])])
    assert show(nested, Row(Row.of_kind(RowKind.DELETE, 1))) == "+I[-D[1]]"


def test_basic_types_print_as_java():
    assert show(Types.BOOLEAN(), True) == "true"
    assert show(Types.BOOLEAN(), False) == "false"
    assert show(Types.STRING(), "a b") == "a b"
    assert show(Types.INT(), -3) == "-3"
    doubles = [1.0, 0.001, 0.0001, 123456.789, 1e7, 1.5e-10, -2.5, 1e21, 0.0]
    expected = ["1.0", "0.001", "1.0E-4", "123456.789", "1.0E7", "1.5E-10", "-2.5"]
    assert [show(Types.DOUBLE(), d) for d in doubles] == [*expected, "1.0E21", "0.0"]
    assert show(Types.FLOAT(), convert(Types.FLOAT(), 0.1)) == "0.1"
    assert show(Types.SQL_TIMESTAMP(), datetime.datetime(2024, 1, 2, 3, 4, 5)) == (
        "2024-01-02 03:04:05.0"
    )


def test_collections_print_as_java():
    nested = Types.MAP(Types.STRING(), Types.LIST(Types.BOOLEAN()))
    assert show(nested, {"a": [True, None], "b": None}) == "{a=[true, null], b=null}"
    assert show(Types.PRIMITIVE_ARRAY(Types.BYTE()), b"\x01\xff") == "[1, -1]"
    row_of_tuple = Types.ROW([Types.TUPLE([Types.STRING(), Types.DOUBLE()])])
    assert show(row_of_tuple, Row(("x", 2.0))) == "+I[(x,2.0)]"


def test_a_type_lockgate_cannot_convert_is_refused_when_declared():
    stream = StreamExecutionEnvironment.get_execution_environment().from_collection([1])
    local_date = LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE)
    with pytest.raises(RecordTypeError, match="lockgate does not convert records of type"):
        stream.map(lambda v: v, output_type=local_date)
