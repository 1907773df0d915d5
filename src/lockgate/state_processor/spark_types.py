"""Column types of the state processor's DataFrames: from lockgate's ``Types`` (PyFlink's
type information), a Spark ``DataType`` as it is, or inferred from the values as Spark infers
them (``createDataFrame`` without a schema) over a sample that Spark reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import types as T
from pyspark.sql.types import _infer_type, _merge_type

from lockgate.common.types import TypeInformation
from lockgate.state_processor.errors import StateProcessorError

SAMPLE_ROWS = 100  # rows read to infer the types of columns that were not given

_SIMPLE: dict[str, T.DataType] = {
    "STRING": T.StringType(),
    "CHAR": T.StringType(),
    "BYTE": T.ByteType(),
    "BOOLEAN": T.BooleanType(),
    "SHORT": T.ShortType(),
    "INT": T.IntegerType(),
    "LONG": T.LongType(),
    "FLOAT": T.FloatType(),
    "DOUBLE": T.DoubleType(),
    "BIG_INT": T.DecimalType(38, 0),
    "BIG_DEC": T.DecimalType(38, 18),
    "INSTANT": T.TimestampType(),
    "SQL_DATE": T.DateType(),
    "SQL_TIME": T.TimeType(),
    "SQL_TIMESTAMP": T.TimestampNTZType(),
}
_ARRAYS = ("PRIMITIVE_ARRAY", "BASIC_ARRAY", "OBJECT_ARRAY", "LIST")


def spark_type(given: Any, what: str) -> T.DataType:
    """The Spark type of a ``Types.*`` type information or a Spark ``DataType``; ``what``
    names the column in errors."""
    if isinstance(given, T.DataType):
        return given
    if not isinstance(given, TypeInformation):
        raise StateProcessorError(
            f"{what}: a type must be a lockgate Types.* type information or a Spark DataType, "
            f"got {given!r}"
        )
    name, params = given._name, given._params
    simple = _SIMPLE.get(name)
    if simple is not None:
        return simple
    if name in _ARRAYS:
        return T.ArrayType(spark_type(params[0], what))
    if name == "MAP":
        return T.MapType(spark_type(params[0], what), spark_type(params[1], what))
    if name == "ROW":
        return T.StructType(
            [T.StructField(f"_{i + 1}", spark_type(t, what)) for i, t in enumerate(params[0])]
        )
    if name == "ROW_NAMED":
        return T.StructType(
            [
                T.StructField(n, spark_type(t, what))
                for n, t in zip(params[0], params[1], strict=True)
            ]
        )
    if name == "TUPLE":
        return T.StructType(
            [T.StructField(f"f{i}", spark_type(t, what)) for i, t in enumerate(params[0])]
        )
    raise StateProcessorError(
        f"{what}: {given!r} has no Spark type (PICKLED_BYTE_ARRAY is any Python value): leave "
        "the type out to infer it from the values, or give a Spark DataType"
    )


def infer_column(values: Sequence[Any], what: str, hint: str) -> T.DataType:
    """The type Spark infers for a column holding ``values`` (None left out); ``NullType``
    when every value is None. ``hint`` says how to give the type instead."""
    found: T.DataType = T.NullType()
    for value in values:
        if value is None:
            continue
        try:
            found = _merge_type(found, _infer_type(value))
        except (TypeError, ValueError) as exc:
            raise StateProcessorError(
                f"{what}: Spark cannot type the value {value!r:.80} of type "
                f"{type(value).__qualname__} ({_first_line(exc)}): {hint}"
            ) from None
    return found


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
