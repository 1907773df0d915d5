"""Column types (lockgate Types, Spark types, inference) and values on their way into and
out of Spark."""

from __future__ import annotations

from collections import namedtuple
from decimal import Decimal

import pytest
from pyspark.sql import Row as SparkRow
from pyspark.sql import types as T

from lockgate.common.types import Row, Types
from lockgate.datastream.window import CountWindow, GlobalWindow, TimeWindow
from lockgate.state_processor.errors import StateProcessorError
from lockgate.state_processor.spark_types import infer_column, spark_type
from lockgate.state_processor.tasks.spark_values import from_spark, to_spark, window_to_spark

Point = namedtuple("Point", "x y")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (Types.LONG(), T.LongType()),
        (Types.STRING(), T.StringType()),
        (Types.BIG_DEC(), T.DecimalType(38, 18)),
        (Types.SQL_TIMESTAMP(), T.TimestampNTZType()),
        (Types.LIST(Types.INT()), T.ArrayType(T.IntegerType())),
        (Types.MAP(Types.STRING(), Types.DOUBLE()), T.MapType(T.StringType(), T.DoubleType())),
        (
            Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.STRING()]),
            T.StructType([T.StructField("a", T.IntegerType()), T.StructField("b", T.StringType())]),
        ),
        (
            Types.TUPLE([Types.INT(), Types.LONG()]),
            T.StructType([T.StructField("f0", T.IntegerType()), T.StructField("f1", T.LongType())]),
        ),
        (T.BinaryType(), T.BinaryType()),
    ],
)
def test_spark_type(given, expected):
    assert spark_type(given, "column") == expected


def test_a_type_without_a_spark_type_is_refused_naming_the_column():
    with pytest.raises(
        StateProcessorError, match=r"state 's', value_type: PickledByteArrayTypeInfo has no"
    ):
        spark_type(Types.PICKLED_BYTE_ARRAY(), "state 's', value_type")
    with pytest.raises(StateProcessorError, match=r"col: a type must be"):
        spark_type(int, "col")


def test_infer_column():
    assert infer_column([None, 1, 2], "c", "hint") == T.LongType()
    assert infer_column([None], "c", "hint") == T.NullType()
    assert infer_column([{"a": [1]}], "c", "hint") == T.MapType(
        T.StringType(), T.ArrayType(T.LongType())
    )
    with pytest.raises(StateProcessorError, match=r"state 's', column 'value'.*pass value_type"):
        infer_column([1, 2.5], "state 's', column 'value'", "pass value_type")
    with pytest.raises(StateProcessorError, match=r"the value \{1\} of type set"):
        infer_column([{1}], "c", "hint")


def test_values_to_spark_and_back():
    assert to_spark((1, "a")) == (1, "a")
    assert to_spark(Row(a=1, b=Row(2, 3))) == SparkRow(a=1, b=(2, 3))
    assert to_spark(Point(1, 2)) == SparkRow(x=1, y=2)
    assert to_spark({"k": [Decimal("1.5")]}) == {"k": [Decimal("1.5")]}
    back = from_spark(SparkRow(a=1, b=SparkRow(_1=2, _2=bytearray(b"z"))))
    assert type(back) is Row and back.as_dict() == {"a": 1, "b": (2, b"z")}
    assert type(back.b[1]) is bytes
    assert from_spark([SparkRow(_1=1)]) == [(1,)]
    # a Types.TUPLE column (fields f0, f1, ...) holds tuples, as Flink's Tuple types do
    tuple_back = from_spark(SparkRow(f0="u0", f1=SparkRow(f0=1)))
    assert type(tuple_back) is tuple and tuple_back == ("u0", (1,))
    assert type(tuple_back[1]) is tuple
    assert type(from_spark(SparkRow(f1=1, f0=2))) is Row  # not in tuple order: names


def test_a_window_namespace_comes_with_its_window_field_names():
    """Keyed state keeps a window as the tuple it equals; Spark gets the window's names."""
    time_window = window_to_spark(tuple(TimeWindow(0, 10)))
    assert time_window.asDict() == dict(TimeWindow(0, 10)._asdict())
    assert window_to_spark(tuple(CountWindow(3))).asDict() == dict(CountWindow(3)._asdict())
    assert window_to_spark(tuple(GlobalWindow())) == ()
    assert infer_column([time_window], "c", "hint") == T.StructType(
        [T.StructField("start", T.LongType()), T.StructField("end", T.LongType())]
    )
    # other tuples are no window of lockgate's: as to_spark gives them
    for other in [(1, "x"), (True, 2), (1, 2, 3), ((1, 2), 3)]:
        assert type(window_to_spark(other)) is tuple and window_to_spark(other) == other
    # back from Spark, a struct with names is a Row of them: not the tuple a window is
    assert from_spark(time_window) == Row(start=0, end=10)
