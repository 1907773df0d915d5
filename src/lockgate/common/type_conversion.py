"""What a declared type information does to records, as PyFlink's coders do.

In PyFlink a record that leaves its chain of Python operators (to a shuffle, a side output
or a sink) is serialized with its declared type's coder and deserialized on the other
side; chained Python functions hand records on as returned. ``record_converter`` builds
that round trip once per operator, without the bytes (``Types.ROW_NAMED`` gives a ``Row``
with those field names, ``Types.FLOAT`` a float of single precision, ...), and the subtask
applies it where PyFlink would (``runtime.subtaskhost.subtask``). ``source_converter`` is
its form for source elements, ``print_formatter`` what PyFlink's ``print()`` writes for a
declared type: ``(a,1)`` for a tuple, ``+I[a,1]`` for a row (its own kind: ``-D[a,1]`` for a
row of kind DELETE), ``true``, ``1.0E7``, ``null`` (``java_formatter``: Java's ``toString``).

All are built once per type; ``PICKLED_BYTE_ARRAY`` (or no type) has none: records stay
as the function returned them and print as ``str()``.
"""

from __future__ import annotations

import datetime
import decimal
import struct
from collections.abc import Callable
from typing import Any

from lockgate.common.time import Instant
from lockgate.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PickledBytesTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TupleTypeInfo,
    TypeInformation,
)
from lockgate.common.types import Row, _row

Converter = Callable[[Any], Any]
Formatter = Callable[[Any], str]

_FLOAT = struct.Struct("f")

#: the least and greatest value of Java's integral types (PyFlink's coders write them with
#: these widths; BIG_INT as a long)
INTEGRAL_RANGES: dict[BasicType, tuple[int, int]] = {
    basic: (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    for basic, bits in (
        (BasicType.BYTE, 8),
        (BasicType.SHORT, 16),
        (BasicType.INT, 32),
        (BasicType.LONG, 64),
        (BasicType.BIG_INT, 64),
    )
}


class RecordTypeError(TypeError):
    """A record (or one of its fields) does not match its declared type information."""


def declared_type(type_info: Any, argument: str) -> TypeInformation | None:
    """``type_info`` as given for ``argument`` (``output_type``, ``key_type``, ...), when
    lockgate can convert records to it; a TypeError now, at the API call, when it cannot."""
    if type_info is not None and not isinstance(type_info, TypeInformation):
        raise TypeError(f"{argument} must be a TypeInformation (Types.*), got {type_info!r}")
    record_converter(type_info)
    return type_info


def record_converter(type_info: TypeInformation | None) -> Converter | None:
    """The function giving what PyFlink's coder of ``type_info`` hands the next operator
    for a record; None when records pass unchanged (no type, ``PICKLED_BYTE_ARRAY``)."""
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return None
    return _converter(type_info)


def _converter(type_info: TypeInformation) -> Converter:
    if isinstance(type_info, PickledBytesTypeInfo):
        return _unchanged
    if isinstance(type_info, BasicTypeInfo):
        return _basic_converter(type_info)
    if isinstance(type_info, RowTypeInfo):
        return _row_converter(type_info)
    if isinstance(type_info, TupleTypeInfo):
        return _tuple_converter(type_info)
    if isinstance(type_info, PrimitiveArrayTypeInfo):
        element = type_info._element_type
        if isinstance(element, BasicTypeInfo) and element._basic_type is BasicType.BYTE:
            return _instance_converter(type_info, bytes)
        return _list_converter(type_info, _converter(element), nullable=False)
    if isinstance(type_info, BasicArrayTypeInfo | ObjectArrayTypeInfo):
        return _list_converter(type_info, _converter(type_info._element_type), nullable=True)
    if isinstance(type_info, ListTypeInfo):
        return _list_converter(type_info, _converter(type_info.elem_type), nullable=True)
    if isinstance(type_info, MapTypeInfo):
        return _map_converter(type_info)
    if isinstance(type_info, DateTypeInfo):
        return _instance_converter(type_info, datetime.date)
    if isinstance(type_info, TimeTypeInfo):
        return _instance_converter(type_info, datetime.time)
    if isinstance(type_info, TimestampTypeInfo):
        return _timestamp_converter(type_info)
    raise RecordTypeError(f"lockgate does not convert records of type {type_info!r} yet")


def _unchanged(value: Any) -> Any:
    return value


def _mismatch(type_info: TypeInformation, value: Any, why: str = "") -> RecordTypeError:
    detail = f" ({why})" if why else ""
    return RecordTypeError(
        f"{type(value).__name__} value {value!r} does not match type {type_info!r}{detail}"
    )


def _basic_converter(type_info: BasicTypeInfo) -> Converter:
    basic = type_info._basic_type
    if basic in (BasicType.STRING, BasicType.CHAR):
        return _instance_converter(type_info, str)
    if basic in INTEGRAL_RANGES:
        low, high = INTEGRAL_RANGES[basic]

        def integral(value: Any) -> Any:
            if not isinstance(value, int):
                raise _mismatch(type_info, value)
            if not low <= value <= high:
                raise _mismatch(type_info, value, f"out of range {low}..{high}")
            return int(value)

        return integral
    if basic is BasicType.BOOLEAN:

        def boolean(value: Any) -> Any:
            if not isinstance(value, int):
                raise _mismatch(type_info, value)
            return bool(value)

        return boolean
    if basic is BasicType.FLOAT:

        def single(value: Any) -> Any:
            if not isinstance(value, int | float):
                raise _mismatch(type_info, value)
            try:
                return _FLOAT.unpack(_FLOAT.pack(value))[0]
            except (OverflowError, struct.error) as exc:
                raise _mismatch(type_info, value, str(exc)) from None

        return single
    if basic is BasicType.DOUBLE:

        def double(value: Any) -> Any:
            if not isinstance(value, int | float):
                raise _mismatch(type_info, value)
            return float(value)

        return double
    if basic is BasicType.BIG_DEC:

        def big_decimal(value: Any) -> Any:
            if not isinstance(value, int | float | decimal.Decimal):
                raise _mismatch(type_info, value)
            return decimal.Decimal(str(value))

        return big_decimal
    return _instance_converter(type_info, Instant)


def _instance_converter(type_info: TypeInformation, cls: type) -> Converter:
    def check(value: Any) -> Any:
        if not isinstance(value, cls):
            raise _mismatch(type_info, value)
        return value

    return check


def _timestamp_converter(type_info: TypeInformation) -> Converter:
    def timestamp(value: Any) -> Any:
        if not isinstance(value, datetime.datetime):
            raise _mismatch(type_info, value)
        # PyFlink's coder keeps milliseconds (TIMESTAMP(3))
        return value.replace(microsecond=value.microsecond // 1000 * 1000)

    return timestamp


def _row_converter(type_info: RowTypeInfo) -> Converter:
    names = tuple(type_info.get_field_names())
    converters = [_converter(field_type) for field_type in type_info.get_field_types()]
    arity = len(converters)

    def row(value: Any) -> Any:
        if not isinstance(value, Row):
            raise _mismatch(type_info, value, "a Row is needed: return Row(...)")
        fields, values = value._fields, value._values
        if fields is not None and fields != names:
            missing = [name for name in names if name not in fields]
            if missing:
                raise _mismatch(type_info, value, f"no field {', '.join(missing)}")
            values = value.get_fields_by_names(names)
        elif len(values) != arity:
            raise _mismatch(type_info, value, f"{len(values)} fields, the type has {arity}")
        # the coder keeps the row's kind and gives it the type's field names
        converted = [
            None if field is None else convert(field)
            for convert, field in zip(converters, values, strict=True)
        ]
        return _row(converted, names, value._row_kind)

    return row


def _tuple_converter(type_info: TupleTypeInfo) -> Converter:
    converters = [_converter(field_type) for field_type in type_info.get_field_types()]
    arity = len(converters)

    def tuple_(value: Any) -> Any:
        if not isinstance(value, tuple):
            raise _mismatch(type_info, value, "a tuple is needed")
        if len(value) != arity:
            raise _mismatch(type_info, value, f"{len(value)} fields, the type has {arity}")
        return tuple(convert(field) for convert, field in zip(converters, value, strict=True))

    return tuple_


def _list_converter(type_info: TypeInformation, element: Converter, nullable: bool) -> Converter:
    def list_(value: Any) -> Any:
        if not isinstance(value, list | tuple):
            raise _mismatch(type_info, value, "a list is needed")
        if nullable:
            return [None if item is None else element(item) for item in value]
        return [element(item) for item in value]

    return list_


def _map_converter(type_info: MapTypeInfo) -> Converter:
    key = _converter(type_info._key_type_info)
    value_converter = _converter(type_info._value_type_info)

    def map_(value: Any) -> Any:
        if not isinstance(value, dict):
            raise _mismatch(type_info, value, "a dict is needed")
        return {key(k): None if v is None else value_converter(v) for k, v in value.items()}

    return map_


def source_converter(type_info: TypeInformation | None) -> Converter | None:
    """``record_converter`` for the elements of a source read with ``type_info``
    (``from_collection(..., type_info)``): a row or tuple type there also takes a tuple or
    list of its fields, as PyFlink converts a collection through Java's arrays, not through
    its coders. Only the top level: nested rows must be Rows, as for the coders."""
    convert = record_converter(type_info)
    if convert is None:
        return None
    if isinstance(type_info, RowTypeInfo):
        to_row = convert

        def row(value: Any) -> Any:
            if isinstance(value, tuple | list):
                value = Row(*value)
            return to_row(value)

        return row
    if isinstance(type_info, TupleTypeInfo):
        to_tuple = convert

        def tuple_(value: Any) -> Any:
            return to_tuple(tuple(value) if isinstance(value, list) else value)

        return tuple_
    return convert


# Flink's toString ---------------------------------------------------------------------------


def print_formatter(type_info: TypeInformation | None) -> Formatter | None:
    """How PyFlink's ``print()`` writes a record of ``type_info``: a row as ``+I[a,1]``
    (its kind, then its fields by Python's ``str``: PyFlink formats rows in Python before
    they reach Java's print), anything else by ``java_formatter``."""
    if isinstance(type_info, RowTypeInfo):

        def row(value: Any) -> str:
            return f"{value.get_row_kind()}[{','.join(str(field) for field in value)}]"

        return row
    return java_formatter(type_info)


def java_formatter(type_info: TypeInformation | None) -> Formatter | None:
    """How Flink's ``print()`` writes a record of ``type_info`` (Java's ``toString``); None
    for records without a Java-side type (no type, ``PICKLED_BYTE_ARRAY``): ``str()``."""
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return None
    return _formatter(type_info)


def _formatter(type_info: TypeInformation) -> Formatter:
    if isinstance(type_info, RowTypeInfo):
        fields = [_formatter(field_type) for field_type in type_info.get_field_types()]

        def row(value: Any) -> str:
            inner = ", ".join(_or_null(f, v) for f, v in zip(fields, value, strict=True))
            return f"{value.get_row_kind()}[{inner}]"

        return row
    if isinstance(type_info, TupleTypeInfo):
        fields = [_formatter(field_type) for field_type in type_info.get_field_types()]

        def tuple_(value: Any) -> str:
            inner = ",".join(_or_null(f, v) for f, v in zip(fields, value, strict=True))
            return f"({inner})"

        return tuple_
    if isinstance(type_info, PrimitiveArrayTypeInfo | BasicArrayTypeInfo | ObjectArrayTypeInfo):
        return _sequence_formatter(_formatter(type_info._element_type))
    if isinstance(type_info, ListTypeInfo):
        return _sequence_formatter(_formatter(type_info.elem_type))
    if isinstance(type_info, MapTypeInfo):
        key, value_formatter = (
            _formatter(type_info._key_type_info),
            _formatter(type_info._value_type_info),
        )

        def map_(value: Any) -> str:
            inner = ", ".join(
                f"{_or_null(key, k)}={_or_null(value_formatter, v)}" for k, v in value.items()
            )
            return f"{{{inner}}}"

        return map_
    if isinstance(type_info, BasicTypeInfo):
        basic = type_info._basic_type
        if basic is BasicType.BOOLEAN:
            return _java_boolean
        if basic is BasicType.FLOAT:
            return _java_float
        if basic is BasicType.DOUBLE:
            return _java_double
    if isinstance(type_info, TimestampTypeInfo):
        return _java_timestamp
    return str


def _or_null(formatter: Formatter, value: Any) -> str:
    return "null" if value is None else formatter(value)


def _sequence_formatter(element: Formatter) -> Formatter:
    def sequence(value: Any) -> str:
        if isinstance(value, bytes):  # Java's bytes are signed
            return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in value) + "]"
        return "[" + ", ".join(_or_null(element, item) for item in value) + "]"

    return sequence


def _java_boolean(value: Any) -> str:
    return "true" if value else "false"


def _java_double(value: Any) -> str:
    """``Double.toString``: the shortest digits that read back, in Java's notation."""
    return _java_decimal(float(value), repr(float(value)))


def _java_float(value: Any) -> str:
    """``Float.toString``: the shortest digits that read back as the same float."""
    value = float(value)
    for precision in range(1, 10):
        digits = f"{value:.{precision}g}"
        if _FLOAT.unpack(_FLOAT.pack(float(digits)))[0] == value:
            return _java_decimal(value, digits)
    return _java_decimal(value, repr(value))


def _java_decimal(value: float, digits: str) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    sign, numerals, exponent = decimal.Decimal(digits).normalize().as_tuple()
    mantissa = "".join(map(str, numerals))
    point = len(mantissa) + int(exponent)  # digits before the decimal point
    prefix = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            return f"{prefix}0.{'0' * -point}{mantissa}"
        whole, fraction = mantissa[:point].ljust(point, "0"), mantissa[point:]
        return f"{prefix}{whole}.{fraction or '0'}"
    return f"{prefix}{mantissa[0]}.{mantissa[1:] or '0'}E{point - 1}"


def _java_timestamp(value: Any) -> str:
    """``java.sql.Timestamp.toString``: ``yyyy-mm-dd hh:mm:ss.f`` (at least one digit)."""
    fraction = f"{value.microsecond:06d}".rstrip("0") or "0"
    return f"{value:%Y-%m-%d %H:%M:%S}.{fraction}"
