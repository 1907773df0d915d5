"""Rows as Arrow columns: the Arrow type of a ``Types.*`` type information and back, and the
conversion of Arrow record batches to ``Row``s and of ``Row``s to record batches.

Parquet and Delta files, CSV and JSON read by pyarrow, and Spark DataFrames all reach
lockgate as Arrow batches; what a job writes as a table leaves it as one. A row type
(``Types.ROW_NAMED``) is the contract between the two: its field names are the columns, its
field types their Arrow types, and a row's values are what PyFlink's coders hand a function
for that type (``lockgate.common.type_conversion``): an ``int`` for LONG, a ``Row`` for a
nested row, a ``dict`` for a MAP, an ``Instant`` for INSTANT, ``bytes`` for
``PRIMITIVE_ARRAY(BYTE)``.

Both directions are built once per row type and convert a batch column by column: a column
that Arrow's own ``to_pylist`` gives as PyFlink would (numbers, strings, dates) costs no
Python call per value.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lockgate.common.time import Instant
from lockgate.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TupleTypeInfo,
    TypeInformation,
    Types,
)
from lockgate.common.types import Row, RowKind, _row

#: Arrow's value for a Python value, or back; None where the value passes unchanged
ValueConverter = Callable[[Any], Any] | None

_BASIC_ARROW: dict[BasicType, pa.DataType] = {
    BasicType.STRING: pa.string(),
    BasicType.CHAR: pa.string(),
    BasicType.BOOLEAN: pa.bool_(),
    BasicType.BYTE: pa.int8(),
    BasicType.SHORT: pa.int16(),
    BasicType.INT: pa.int32(),
    BasicType.LONG: pa.int64(),
    BasicType.FLOAT: pa.float32(),
    BasicType.DOUBLE: pa.float64(),
    # As the state processor's Spark columns: DecimalType(38, 0) and (38, 18)
    BasicType.BIG_INT: pa.decimal128(38, 0),
    BasicType.BIG_DEC: pa.decimal128(38, 18),
    BasicType.INSTANT: pa.timestamp("us", tz="UTC"),
}
_SQL_TIMESTAMP = pa.timestamp("us")
_UTC = datetime.UTC


class ArrowTypeError(TypeError):
    """A type has no Arrow form, or Arrow columns do not fit a row type."""


def arrow_type(type_info: TypeInformation, where: str) -> pa.DataType:
    """The Arrow type that holds values of ``type_info``; ``where`` names it in errors."""
    if isinstance(type_info, BasicTypeInfo):
        return _BASIC_ARROW[type_info._basic_type]
    if isinstance(type_info, RowTypeInfo):
        return pa.struct(_arrow_fields(type_info, where))
    if isinstance(type_info, TupleTypeInfo):
        fields = type_info.get_field_types()
        return pa.struct([pa.field(f"f{i}", arrow_type(t, where)) for i, t in enumerate(fields)])
    if isinstance(type_info, PrimitiveArrayTypeInfo) and _is_byte(type_info._element_type):
        return pa.binary()
    if isinstance(type_info, PrimitiveArrayTypeInfo | BasicArrayTypeInfo | ObjectArrayTypeInfo):
        return pa.list_(arrow_type(type_info._element_type, where))
    if isinstance(type_info, ListTypeInfo):
        return pa.list_(arrow_type(type_info.elem_type, where))
    if isinstance(type_info, MapTypeInfo):
        return pa.map_(
            arrow_type(type_info._key_type_info, where),
            arrow_type(type_info._value_type_info, where),
        )
    if isinstance(type_info, DateTypeInfo):
        return pa.date32()
    if isinstance(type_info, TimeTypeInfo):
        return pa.time64("us")
    if isinstance(type_info, TimestampTypeInfo):
        return _SQL_TIMESTAMP
    raise ArrowTypeError(
        f"{where}: {type_info!r} has no column type (PICKLED_BYTE_ARRAY is any Python value): "
        "declare the field with a Types.* type of its values"
    )


def arrow_schema(row_type: RowTypeInfo, where: str) -> pa.Schema:
    """The schema of a table of ``row_type``'s rows: a nullable column per field."""
    if not isinstance(row_type, RowTypeInfo):
        raise ArrowTypeError(
            f"{where}: a row type is needed (Types.ROW_NAMED([...], [...])), got {row_type!r}"
        )
    return pa.schema(_arrow_fields(row_type, where))


def _arrow_fields(row_type: RowTypeInfo, where: str) -> list[pa.Field]:
    names = row_type.get_field_names()
    if len(set(names)) != len(names):
        raise ArrowTypeError(f"{where}: the row type {row_type!r} names a field twice")
    return [
        pa.field(name, arrow_type(field_type, f"{where}, field '{name}'"))
        for name, field_type in zip(names, row_type.get_field_types(), strict=True)
    ]


def type_info_of(data_type: pa.DataType, where: str) -> TypeInformation:
    """The ``Types.*`` type information whose values a column of ``data_type`` holds."""
    t = pa.types
    simple = {
        pa.string(): Types.STRING(),
        pa.large_string(): Types.STRING(),
        pa.bool_(): Types.BOOLEAN(),
        pa.int8(): Types.BYTE(),
        pa.int16(): Types.SHORT(),
        pa.int32(): Types.INT(),
        pa.int64(): Types.LONG(),
        pa.float32(): Types.FLOAT(),
        pa.float64(): Types.DOUBLE(),
        pa.date32(): Types.SQL_DATE(),
        pa.binary(): Types.PRIMITIVE_ARRAY(Types.BYTE()),
        pa.large_binary(): Types.PRIMITIVE_ARRAY(Types.BYTE()),
    }.get(data_type)
    if simple is not None:
        return simple
    if t.is_decimal(data_type):
        return Types.BIG_INT() if data_type.scale == 0 else Types.BIG_DEC()
    if t.is_timestamp(data_type):
        return Types.SQL_TIMESTAMP() if data_type.tz is None else Types.INSTANT()
    if t.is_time(data_type):
        return Types.SQL_TIME()
    if t.is_date(data_type):
        return Types.SQL_DATE()
    if t.is_list(data_type) or t.is_large_list(data_type):
        return Types.LIST(type_info_of(data_type.value_type, where))
    if t.is_map(data_type):
        return Types.MAP(
            type_info_of(data_type.key_type, where), type_info_of(data_type.item_type, where)
        )
    if t.is_struct(data_type):
        fields = [data_type.field(i) for i in range(data_type.num_fields)]
        return Types.ROW_NAMED(
            [f.name for f in fields], [type_info_of(f.type, f"{where}.{f.name}") for f in fields]
        )
    raise ArrowTypeError(f"{where}: lockgate has no type for columns of Arrow type {data_type}")


def row_type_of(schema: pa.Schema, where: str) -> RowTypeInfo:
    """The row type of a table with ``schema``: a field per column, in order."""
    row_type = Types.ROW_NAMED(
        list(schema.names),
        [type_info_of(field.type, f"{where}, column '{field.name}'") for field in schema],
    )
    assert isinstance(row_type, RowTypeInfo)
    return row_type


def _is_byte(type_info: TypeInformation) -> bool:
    return isinstance(type_info, BasicTypeInfo) and type_info._basic_type is BasicType.BYTE


# Arrow -> Rows ------------------------------------------------------------------------------


class RowsFromArrow:
    """``Row``s of a row type from Arrow batches whose columns are the type's fields."""

    def __init__(self, row_type: RowTypeInfo, where: str):
        self.schema = arrow_schema(row_type, where)
        self.names = tuple(row_type.get_field_names())
        types = row_type.get_field_types()
        # SQL timestamps of the row are cut to milliseconds a column at a time
        self._timestamps = [isinstance(t, TimestampTypeInfo) for t in types]
        self._converters = [
            None if timestamp else _from_arrow(t)
            for t, timestamp in zip(types, self._timestamps, strict=True)
        ]

    def rows(self, batch: pa.RecordBatch) -> list[Row]:
        """The batch's rows; its columns are the schema's, in order (``conform`` makes them)."""
        columns = []
        for column, convert, timestamp in zip(
            batch.columns, self._converters, self._timestamps, strict=True
        ):
            if timestamp:
                column = pc.floor_temporal(column, 1, "millisecond")
            values = column.to_pylist()
            if convert is not None:
                values = [None if v is None else convert(v) for v in values]
            columns.append(values)
        names = self.names
        insert = RowKind.INSERT
        return [_row(list(values), names, insert) for values in zip(*columns, strict=True)]


def conform(batch: pa.RecordBatch, schema: pa.Schema, where: str) -> pa.RecordBatch:
    """``batch``'s columns named in ``schema``, in its order, widened to its types where the
    values keep their meaning (an int32 column read as LONG, a float as DOUBLE); a missing
    column, or one of another kind (a string read as LONG), is an ``ArrowTypeError`` naming
    both types."""
    have = batch.schema
    columns = []
    for field in schema:
        index = have.get_field_index(field.name)
        if index < 0:
            raise ArrowTypeError(
                f"{where}: no column '{field.name}' (columns: {', '.join(have.names)})"
            )
        column = batch.column(index)
        if column.type != field.type:
            if not _widens(column.type, field.type):
                raise ArrowTypeError(
                    f"{where}: column '{field.name}' holds {column.type}, the row type "
                    f"declares {field.type}"
                )
            column = column.cast(field.type, safe=True)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _widens(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether every value of type ``have`` is the same value of type ``want``."""
    t = pa.types
    if have == want or t.is_null(have):  # a column of nulls only (a file's empty column)
        return True
    if t.is_integer(have) and t.is_integer(want):
        if t.is_signed_integer(have) and not t.is_signed_integer(want):
            return False
        return bool(have.bit_width < want.bit_width)
    pairs = (
        (t.is_floating, t.is_floating),
        (t.is_integer, t.is_floating),
        (_is_text, _is_text),
        (_is_bytes, _is_bytes),
        (t.is_date, t.is_date),
        (t.is_time, t.is_time),
    )
    for have_kind, want_kind in pairs:
        if have_kind(have) and want_kind(want):
            return not t.is_floating(have) or have.bit_width <= want.bit_width
    if t.is_timestamp(have) and t.is_timestamp(want):
        return (have.tz is None) == (want.tz is None)
    if t.is_decimal(have) and t.is_decimal(want):
        integral_digits = have.precision - have.scale <= want.precision - want.scale
        return bool(have.scale <= want.scale and integral_digits)
    if _is_list(have) and _is_list(want):
        return _widens(have.value_type, want.value_type)
    if t.is_map(have) and t.is_map(want):
        return _widens(have.key_type, want.key_type) and _widens(have.item_type, want.item_type)
    if t.is_struct(have) and t.is_struct(want):
        # by name, as the columns of the row: Arrow's cast picks a struct's fields by name
        names = [have.field(i).name for i in range(have.num_fields)]
        wanted = [want.field(i) for i in range(want.num_fields)]
        return all(
            names.count(f.name) == 1 and _widens(have.field(f.name).type, f.type) for f in wanted
        )
    return False


def _is_text(data_type: pa.DataType) -> bool:
    return bool(pa.types.is_string(data_type) or pa.types.is_large_string(data_type))


def _is_bytes(data_type: pa.DataType) -> bool:
    return bool(pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type))


def _is_list(data_type: pa.DataType) -> bool:
    return bool(pa.types.is_list(data_type) or pa.types.is_large_list(data_type))


def check_columns(have: pa.Schema, schema: pa.Schema, where: str) -> None:
    """Refuse a table schema ``have`` that ``conform`` could not read as ``schema``."""
    empty = pa.RecordBatch.from_arrays(
        [pa.array([], type=field.type) for field in have], schema=have
    )
    conform(empty, schema, where)


def _from_arrow(type_info: TypeInformation) -> ValueConverter:
    if isinstance(type_info, RowTypeInfo | TupleTypeInfo):
        return _struct_from_arrow(type_info)
    if isinstance(type_info, TimestampTypeInfo):
        return _milliseconds
    if isinstance(type_info, BasicTypeInfo):
        if type_info._basic_type is BasicType.INSTANT:
            return _instant_from_arrow
        if type_info._basic_type is BasicType.BIG_INT:
            return _big_int_from_arrow
        return None
    if isinstance(type_info, PrimitiveArrayTypeInfo) and _is_byte(type_info._element_type):
        return None
    if isinstance(type_info, PrimitiveArrayTypeInfo | BasicArrayTypeInfo | ObjectArrayTypeInfo):
        return _list_from_arrow(_from_arrow(type_info._element_type))
    if isinstance(type_info, ListTypeInfo):
        return _list_from_arrow(_from_arrow(type_info.elem_type))
    if isinstance(type_info, MapTypeInfo):
        key = _from_arrow(type_info._key_type_info)
        value = _from_arrow(type_info._value_type_info)

        def map_(pairs: Sequence[tuple[Any, Any]]) -> dict[Any, Any]:
            return {
                k if key is None else key(k): v if v is None or value is None else value(v)
                for k, v in pairs
            }

        return map_
    return None


def _struct_from_arrow(type_info: RowTypeInfo | TupleTypeInfo) -> ValueConverter:
    field_types = type_info.get_field_types()
    converters = [_from_arrow(t) for t in field_types]
    if isinstance(type_info, TupleTypeInfo):
        keys = [f"f{i}" for i in range(len(field_types))]

        def tuple_(value: dict[str, Any]) -> tuple[Any, ...]:
            return tuple(_field(value[k], c) for k, c in zip(keys, converters, strict=True))

        return tuple_
    names = tuple(type_info.get_field_names())

    def row(value: dict[str, Any]) -> Row:
        return _row([_field(value[n], c) for n, c in zip(names, converters, strict=True)], names)

    return row


def _field(value: Any, convert: ValueConverter) -> Any:
    return value if value is None or convert is None else convert(value)


def _list_from_arrow(element: ValueConverter) -> ValueConverter:
    if element is None:
        return None

    def list_(values: list[Any]) -> list[Any]:
        return [None if v is None else element(v) for v in values]

    return list_


_LONG_RANGE = range(-(1 << 63), 1 << 63)


def _big_int_from_arrow(value: decimal.Decimal) -> int:
    """A ``decimal128(38, 0)`` value as a BIG_INT, which PyFlink's coder holds in a long
    (``type_conversion``): a larger one is an ``ArrowTypeError``."""
    number = int(value)
    if number not in _LONG_RANGE:
        raise ArrowTypeError(
            f"the BIG_INT value {number} is out of range {_LONG_RANGE.start}.."
            f"{_LONG_RANGE.stop - 1} (a BIG_INT is a long, as in PyFlink)"
        )
    return number


def _milliseconds(value: datetime.datetime) -> datetime.datetime:
    """A SQL timestamp as PyFlink's coder hands it on (``TIMESTAMP(3)``; see
    ``type_conversion``)."""
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def _instant_from_arrow(value: datetime.datetime) -> Instant:
    micros = (value - _EPOCH) // _MICROSECOND
    return Instant(micros // 1_000_000, micros % 1_000_000 * 1000)


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=_UTC)
_MICROSECOND = datetime.timedelta(microseconds=1)


# Rows -> Arrow ------------------------------------------------------------------------------


class RowsToArrow:
    """Arrow batches of a row type from ``Row``s that match it (as ``record_converter``
    of the type leaves them: fields in the type's order)."""

    def __init__(self, row_type: RowTypeInfo, where: str):
        self.schema = arrow_schema(row_type, where)
        self._converters = [_to_arrow(t) for t in row_type.get_field_types()]

    def batch(self, rows: Sequence[Row]) -> pa.RecordBatch:
        columns = []
        for index, (field, convert) in enumerate(zip(self.schema, self._converters, strict=True)):
            values = [row._values[index] for row in rows]
            if convert is not None:
                values = [None if v is None else convert(v) for v in values]
            try:
                columns.append(pa.array(values, type=field.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
                raise ArrowTypeError(
                    f"column '{field.name}' ({field.type}) cannot hold its values: {exc}"
                ) from None
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def _to_arrow(type_info: TypeInformation) -> ValueConverter:
    if isinstance(type_info, RowTypeInfo | TupleTypeInfo):
        converters = [_to_arrow(t) for t in type_info.get_field_types()]
        names = (
            type_info.get_field_names()
            if isinstance(type_info, RowTypeInfo)
            else [f"f{i}" for i in range(len(converters))]
        )

        def struct(value: Any) -> dict[str, Any]:
            values = value._values if isinstance(value, Row) else value
            return {n: _field(v, c) for n, v, c in zip(names, values, converters, strict=True)}

        return struct
    if isinstance(type_info, BasicTypeInfo):
        if type_info._basic_type is BasicType.INSTANT:
            return _instant_to_arrow
        if type_info._basic_type is BasicType.BIG_INT:
            return decimal.Decimal
        return None
    if isinstance(type_info, PrimitiveArrayTypeInfo) and _is_byte(type_info._element_type):
        return None
    if isinstance(type_info, PrimitiveArrayTypeInfo | BasicArrayTypeInfo | ObjectArrayTypeInfo):
        return _list_from_arrow(_to_arrow(type_info._element_type))
    if isinstance(type_info, ListTypeInfo):
        return _list_from_arrow(_to_arrow(type_info.elem_type))
    if isinstance(type_info, MapTypeInfo):
        key = _to_arrow(type_info._key_type_info)
        value = _to_arrow(type_info._value_type_info)

        def map_(mapping: dict[Any, Any]) -> list[tuple[Any, Any]]:
            return [(_field(k, key), _field(v, value)) for k, v in mapping.items()]

        return map_
    return None


def _instant_to_arrow(value: Instant) -> datetime.datetime:
    return _EPOCH + datetime.timedelta(seconds=value.seconds, microseconds=value.nanos // 1000)


def decimal_check(row_type: RowTypeInfo) -> Callable[[Row], None] | None:
    """A check of one row's BIG_DEC values (also inside nested rows, lists and maps) against
    their Arrow column, ``decimal128(38, 18)``, which holds fewer values than a Python
    ``Decimal`` (BIG_INT values are longs, which ``decimal128(38, 0)`` holds): a writer
    checks each record with it as it arrives, so that a value that does not fit fails naming
    its record rather than the batch of rows it is converted with. None when the row type
    has no such field."""
    return _decimal_check(row_type, "")


def _decimal_check(type_info: TypeInformation, where: str) -> Callable[[Any], None] | None:
    if isinstance(type_info, BasicTypeInfo):
        if type_info._basic_type is not BasicType.BIG_DEC:
            return None
        return lambda value: _check_decimal(value, where)
    if isinstance(type_info, RowTypeInfo | TupleTypeInfo):
        names = (
            type_info.get_field_names()
            if isinstance(type_info, RowTypeInfo)
            else [f"f{i}" for i in range(len(type_info.get_field_types()))]
        )
        checks = [
            (index, check)
            for index, (name, t) in enumerate(zip(names, type_info.get_field_types(), strict=True))
            if (check := _decimal_check(t, f"{where}.{name}" if where else name)) is not None
        ]
        if not checks:
            return None

        def struct(value: Any) -> None:
            values = value._values if isinstance(value, Row) else value
            for index, check in checks:
                if values[index] is not None:
                    check(values[index])

        return struct
    element: TypeInformation | None = None
    if isinstance(type_info, BasicArrayTypeInfo | ObjectArrayTypeInfo | PrimitiveArrayTypeInfo):
        element = type_info._element_type
    elif isinstance(type_info, ListTypeInfo):
        element = type_info.elem_type
    if element is not None:
        check_element = _decimal_check(element, f"{where}[]")
        if check_element is None:
            return None

        def list_(values: Sequence[Any]) -> None:
            for v in values:
                if v is not None:
                    check_element(v)

        return list_
    if isinstance(type_info, MapTypeInfo):
        key = _decimal_check(type_info._key_type_info, f"{where}{{}}")
        item = _decimal_check(type_info._value_type_info, f"{where}{{}}")
        if key is None and item is None:
            return None

        def map_(mapping: dict[Any, Any]) -> None:
            for k, v in mapping.items():
                if key is not None and k is not None:
                    key(k)
                if item is not None and v is not None:
                    item(v)

        return map_
    return None


_DECIMAL_CONTEXT = decimal.Context(prec=80)


def _check_decimal(value: decimal.Decimal, where: str) -> None:
    column = _BASIC_ARROW[BasicType.BIG_DEC]
    scale = column.scale
    if not value.is_finite():
        problem = "not a finite number"
    elif value.adjusted() >= 38 - scale:
        problem = f"more than {38 - scale} digits before the decimal point"
    elif value.as_tuple().exponent < -scale and value != value.quantize(
        decimal.Decimal(1).scaleb(-scale), context=_DECIMAL_CONTEXT
    ):
        problem = f"more than {scale} digits after the decimal point"
    else:
        return
    raise ArrowTypeError(f"field '{where}' (Arrow's {column}) cannot hold {value!r}: {problem}")
