"""lockgate's ``Types`` gives PyFlink's type information classes, with PyFlink's names,
``__eq__`` and ``__repr__`` (checked against PyFlink's own module where the set-up
downloaded it)."""

from __future__ import annotations

import ast

import pytest
from pyflink_wheel import SOURCES, needs_pyflink

from lockgate.common import Types as CommonTypes
from lockgate.common import typeinfo
from lockgate.common.time import Instant
from lockgate.common.typeinfo import (
    BasicType,
    BasicTypeInfo,
    InstantTypeInfo,
    LocalTimeTypeInfo,
    RowTypeInfo,
    TupleTypeInfo,
    TypeInformation,
    Types,
)
from lockgate.common.types import RowKind


def pyflink_typeinfo() -> ast.Module:
    return ast.parse(SOURCES["pyflink/common/typeinfo.py"])


@needs_pyflink
def test_the_type_information_classes_are_pyflink_s():
    classes = [node for node in pyflink_typeinfo().body if isinstance(node, ast.ClassDef)]
    assert [c.name for c in classes if not hasattr(typeinfo, c.name)] == []
    types = next(c for c in classes if c.name == "Types")
    factories = {node.name for node in types.body if isinstance(node, ast.FunctionDef)}
    assert factories == {name for name in vars(Types) if not name.startswith("_")}


def test_types_is_the_same_at_both_paths():
    assert CommonTypes is Types


@pytest.mark.parametrize(
    ("given", "expected_class", "expected_repr"),
    [
        (Types.STRING(), BasicTypeInfo, "String"),
        (Types.INT(), BasicTypeInfo, "Integer"),
        (Types.BIG_DEC(), BasicTypeInfo, "BigDecimal"),
        (Types.INSTANT(), InstantTypeInfo, "Instant"),
        (Types.SQL_DATE(), typeinfo.DateTypeInfo, "DateTypeInfo"),
        (Types.SQL_TIME(), typeinfo.TimeTypeInfo, "TimeTypeInfo"),
        (Types.SQL_TIMESTAMP(), typeinfo.TimestampTypeInfo, "TimestampTypeInfo"),
        (Types.PICKLED_BYTE_ARRAY(), typeinfo.PickledBytesTypeInfo, "PickledByteArrayTypeInfo"),
        (Types.ROW([Types.INT(), Types.STRING()]), RowTypeInfo, "RowTypeInfo(Integer, String)"),
        (
            Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()]),
            RowTypeInfo,
            "RowTypeInfo(id: Integer, name: String)",
        ),
        (Types.TUPLE([Types.LONG()]), TupleTypeInfo, "TupleTypeInfo(Long)"),
        (
            Types.PRIMITIVE_ARRAY(Types.INT()),
            typeinfo.PrimitiveArrayTypeInfo,
            "PrimitiveArrayTypeInfo<Integer>",
        ),
        (
            Types.BASIC_ARRAY(Types.INT()),
            typeinfo.BasicArrayTypeInfo,
            "BasicArrayTypeInfo<Integer>",
        ),
        (
            Types.OBJECT_ARRAY(Types.STRING()),
            typeinfo.ObjectArrayTypeInfo,
            "ObjectArrayTypeInfo<String>",
        ),
        (Types.LIST(Types.INT()), typeinfo.ListTypeInfo, "ListTypeInfo<Integer>"),
        (
            Types.MAP(Types.STRING(), Types.LONG()),
            typeinfo.MapTypeInfo,
            "MapTypeInfo<String, Long>",
        ),
    ],
)
def test_factories_give_pyflink_s_classes_and_reprs(given, expected_class, expected_repr):
    assert type(given) is expected_class
    assert isinstance(given, TypeInformation)
    assert repr(given) == expected_repr


def test_equality_as_pyflink_s():
    assert Types.INT() == BasicTypeInfo(BasicType.INT) == BasicTypeInfo.INT_TYPE_INFO()
    assert Types.INT() != Types.LONG()
    assert Types.INSTANT() == BasicTypeInfo(BasicType.INSTANT)
    # PyFlink's RowTypeInfo compares field types only
    assert Types.ROW_NAMED(["a"], [Types.INT()]) == Types.ROW([Types.INT()])
    assert Types.ROW([Types.INT()]) != Types.TUPLE([Types.INT()])
    assert Types.LIST(Types.INT()) != Types.BASIC_ARRAY(Types.INT())
    assert Types.PRIMITIVE_ARRAY(Types.INT()) != Types.BASIC_ARRAY(Types.INT())
    assert Types.MAP(Types.INT(), Types.INT()) != Types.MAP(Types.INT(), Types.LONG())
    date = LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE)
    assert date == LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE)
    assert repr(date) == "LocalTimeTypeInfo<LOCAL_DATE>"


def test_equal_type_informations_hash_alike():
    pairs = [
        (Types.INSTANT(), BasicTypeInfo(BasicType.INSTANT)),
        (Types.ROW_NAMED(["a"], [Types.INT()]), Types.ROW([Types.INT()])),
        (Types.MAP(Types.INT(), Types.LIST(Types.STRING())),) * 2,
    ]
    for a, b in pairs:
        assert a == b
        assert hash(a) == hash(b)


def test_row_type_info_fields():
    row = Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])
    assert isinstance(row, RowTypeInfo)
    assert row.get_field_names() == ["id", "name"]
    assert row.get_field_index("name") == 1
    assert row.get_field_types() == [Types.INT(), Types.STRING()]
    unnamed = RowTypeInfo([Types.INT()])
    assert unnamed.get_field_index("f0") == -1
    assert unnamed.get_field_names() == ["f0"]
    assert repr(unnamed) == "RowTypeInfo(Integer)"


def test_instant_and_row_kind_as_pyflink_s():
    assert Instant.of_epoch_milli(1_500) == Instant(1, 500_000_000)
    assert Instant(1, 500_000_000).to_epoch_milli() == 1_500
    assert Instant.of_epoch_milli(-1).to_epoch_milli() == -1
    assert repr(Instant(1, 2)) == "Instant<1, 2>"
    assert [str(kind) for kind in RowKind] == ["+I", "-U", "+U", "-D"]
