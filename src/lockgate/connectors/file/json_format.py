"""Reading JSON lines files (``JsonLinesReaderFormat``): one JSON object per line, as a
``Row`` of a declared row type.

A split is a whole file and a position the byte offset of a line's start, as for text lines
(``reader.read_lines``); blank lines hold no record. The values are what a function receives
for the row type in PyFlink (``lockgate.common.type_conversion``), read from JSON as Flink's
JSON format writes them: numbers and booleans as such, a nested row as an object, a list as
an array, a map as an object (its keys converted to the key type), bytes as base64, dates,
times and timestamps as ISO-8601 text (``2024-05-01``, ``12:30:00``, ``2024-05-01
12:30:00.250``; an ``INSTANT`` with its offset, UTC without), ``BIG_DEC`` from a number or a
string.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import datetime
import decimal
import json
from collections.abc import Callable, Iterator
from typing import Any

from lockgate.common.time import Instant
from lockgate.common.type_conversion import INTEGRAL_RANGES, RecordTypeError, record_converter
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
    TypeInformation,
    Types,
)
from lockgate.common.types import Row, RowKind, _row
from lockgate.connectors.file.format import FileFormat
from lockgate.connectors.file.reader import SKIP, line_number, read_lines
from lockgate.core.source import SourceError, SplitProgress

#: a JSON value's converter: the value for the declared type, or ValueError/TypeError
Converter = Callable[[Any], Any]
_PREVIEW = 200
_DECODER = json.JSONDecoder()
# the Python type of a JSON value that is a basic type's value as it is
_EXACT = {
    BasicType.STRING: str,
    BasicType.CHAR: str,
    BasicType.BOOLEAN: bool,
    BasicType.DOUBLE: float,
    **dict.fromkeys((BasicType.BYTE, BasicType.SHORT, BasicType.INT, BasicType.LONG), int),
}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


class JsonLinesFormat(FileFormat):
    name = "JsonLinesReaderFormat"

    def __init__(
        self, row_type: RowTypeInfo, fail_on_missing_field: bool, ignore_parse_errors: bool
    ):
        if not isinstance(row_type, RowTypeInfo):
            raise TypeError(
                f"JsonLinesReaderFormat needs a row type (Types.ROW_NAMED([...], [...])), got "
                f"{row_type!r}"
            )
        if fail_on_missing_field and ignore_parse_errors:
            raise ValueError(
                "JSON lines cannot both fail on a missing field and ignore parse errors "
                "(as Flink's JSON format): choose one"
            )
        self.row_type = row_type
        self.produced_type = row_type
        self.fail_on_missing_field = fail_on_missing_field
        self.ignore_parse_errors = ignore_parse_errors
        self._convert = _row_converter(row_type, "", fail_on_missing_field, ignore_parse_errors)

    def read(
        self, split: str, start: int, max_records: int, progress: dict[str, SplitProgress]
    ) -> Iterator[Row]:
        return read_lines(split, start, max_records, self._parse, progress)

    def _parse(self, line: bytes, path: str, offset: int) -> Any:
        if offset == 0 and line.startswith(codecs.BOM_UTF8):
            line = line[len(codecs.BOM_UTF8) :]  # a byte order mark: skipped, as Jackson does
        if not line.strip():
            return SKIP
        try:
            value = _DECODER.decode(line.decode("utf-8"))
        except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            if self.ignore_parse_errors:
                return SKIP
            raise self._error(path, offset, line, f"not JSON ({exc})") from None
        if not isinstance(value, dict):
            if self.ignore_parse_errors:
                return SKIP
            raise self._error(path, offset, line, f"a JSON {type(value).__name__}, not an object")
        try:
            return self._convert(value)
        except (ValueError, TypeError) as exc:  # only without ignore_parse_errors
            raise self._error(path, offset, line, str(exc)) from None

    def _error(self, path: str, offset: int, line: bytes, problem: str) -> SourceError:
        text = line.decode("utf-8", errors="replace")
        text = text[:_PREVIEW] + "..." if len(text) > _PREVIEW else text
        return SourceError(
            f"JsonLinesReaderFormat cannot read {path}, line {line_number(path, offset)}: "
            f"{problem}: {text!r}"
        )


class _FieldError(ValueError):
    pass


def _mismatch(where: str, type_info: TypeInformation, value: Any, why: str = "") -> _FieldError:
    detail = f" ({why})" if why else ""
    return _FieldError(
        f"field '{where}' ({type_info!r}) cannot hold the JSON {type(value).__name__} "
        f"{json.dumps(value)[:80]}{detail}"
    )


def _row_converter(
    row_type: RowTypeInfo, where: str, fail_on_missing: bool, lenient: bool
) -> Converter:
    names = tuple(row_type.get_field_names())
    paths = [f"{where}.{name}" if where else name for name in names]
    converters = [
        _converter(t, path, fail_on_missing, lenient)
        for t, path in zip(row_type.get_field_types(), paths, strict=True)
    ]
    fields = list(zip(names, paths, converters, strict=True))
    insert = RowKind.INSERT

    def row(value: Any) -> Row:
        if not isinstance(value, dict):
            raise _mismatch(where, row_type, value, "an object is needed")
        values: list[Any] = []
        for name, path, convert in fields:
            field = value.get(name)
            if field is None:
                if fail_on_missing and name not in value:
                    raise _FieldError(f"field '{path}' is missing (fail_on_missing_field)")
                values.append(None)
                continue
            try:
                values.append(convert(field))
            except (ValueError, TypeError):
                if not lenient:
                    raise
                values.append(None)  # ignore_parse_errors: as Flink, the field is null
        return _row(values, names, insert)

    return row


def _converter(
    type_info: TypeInformation, where: str, fail_on_missing: bool, lenient: bool
) -> Converter:
    if isinstance(type_info, RowTypeInfo):
        return _row_converter(type_info, where, fail_on_missing, lenient)
    if isinstance(type_info, BasicTypeInfo):
        return _basic_converter(type_info, where)
    if isinstance(type_info, PrimitiveArrayTypeInfo) and type_info._element_type == Types.BYTE():
        return _bytes_converter(type_info, where)
    if isinstance(type_info, PrimitiveArrayTypeInfo | BasicArrayTypeInfo | ObjectArrayTypeInfo):
        element = _converter(type_info._element_type, f"{where}[]", fail_on_missing, lenient)
        return _list_converter(type_info, where, element)
    if isinstance(type_info, ListTypeInfo):
        element = _converter(type_info.elem_type, f"{where}[]", fail_on_missing, lenient)
        return _list_converter(type_info, where, element)
    if isinstance(type_info, MapTypeInfo):
        return _map_converter(type_info, where, fail_on_missing, lenient)
    if isinstance(type_info, DateTypeInfo):
        return _text_converter(type_info, where, datetime.date.fromisoformat)
    if isinstance(type_info, TimeTypeInfo):
        return _text_converter(type_info, where, datetime.time.fromisoformat)
    if isinstance(type_info, TimestampTypeInfo):
        return _text_converter(type_info, where, _timestamp)
    raise TypeError(
        f"JsonLinesReaderFormat cannot read field '{where}' of type {type_info!r} from JSON: "
        "declare it with a Types.* type of its values (rows, lists, maps, basic types, "
        "dates and times)"
    )


def _basic_converter(type_info: BasicTypeInfo, where: str) -> Converter:
    basic = type_info._basic_type
    if basic is BasicType.INSTANT:
        return _text_converter(type_info, where, _instant)
    check = record_converter(type_info)
    assert check is not None
    accepted: tuple[type, ...] = {
        BasicType.STRING: (str,),
        BasicType.CHAR: (str,),
        BasicType.BOOLEAN: (bool,),
        BasicType.FLOAT: (int, float),
        BasicType.DOUBLE: (int, float),
        BasicType.BIG_DEC: (int, float, decimal.Decimal),
    }.get(basic, (int,))

    def basic_value(value: Any) -> Any:
        if not isinstance(value, accepted) or (isinstance(value, bool) and bool not in accepted):
            raise _mismatch(where, type_info, value)
        try:
            return check(value)
        except (RecordTypeError, ArithmeticError) as exc:
            raise _mismatch(where, type_info, value, str(exc)) from None

    if basic is BasicType.BIG_DEC:
        return lambda value: basic_value(_decimal(value, where, type_info))
    exact = _EXACT.get(basic)
    if exact is None:
        return basic_value
    bounds = INTEGRAL_RANGES.get(basic)
    if bounds is None:

        def exact_value(value: Any) -> Any:  # the common case without a call
            return value if type(value) is exact else basic_value(value)

        return exact_value
    low, high = bounds

    def integral(value: Any) -> Any:
        return value if type(value) is int and low <= value <= high else basic_value(value)

    return integral


def _decimal(value: Any, where: str, type_info: TypeInformation) -> Any:
    if isinstance(value, str):
        try:
            return decimal.Decimal(value)
        except decimal.InvalidOperation:
            raise _mismatch(where, type_info, value, "not a number") from None
    return value


def _text_converter(
    type_info: TypeInformation, where: str, parse: Callable[[str], Any]
) -> Converter:
    def text(value: Any) -> Any:
        if not isinstance(value, str):
            raise _mismatch(where, type_info, value, "ISO-8601 text is needed")
        try:
            return parse(value)
        except ValueError as exc:
            raise _mismatch(where, type_info, value, str(exc)) from None

    return text


def _timestamp(text: str) -> datetime.datetime:
    value = datetime.datetime.fromisoformat(text)
    if value.tzinfo is not None:
        raise ValueError("a SQL timestamp has no time zone (Types.INSTANT() has one)")
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def _instant(text: str) -> Instant:
    value = datetime.datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    micros = (value - _EPOCH) // datetime.timedelta(microseconds=1)
    return Instant(micros // 1_000_000, micros % 1_000_000 * 1000)


def _bytes_converter(type_info: TypeInformation, where: str) -> Converter:
    def bytes_(value: Any) -> bytes:
        if not isinstance(value, str):
            raise _mismatch(where, type_info, value, "base64 text is needed")
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise _mismatch(where, type_info, value, f"not base64: {exc}") from None

    return bytes_


def _list_converter(type_info: TypeInformation, where: str, element: Converter) -> Converter:
    def list_(value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise _mismatch(where, type_info, value, "an array is needed")
        return [None if v is None else element(v) for v in value]

    return list_


def _map_converter(
    type_info: MapTypeInfo, where: str, fail_on_missing: bool, lenient: bool
) -> Converter:
    key_type = type_info._key_type_info
    if key_type in (Types.STRING(), Types.CHAR()):
        key: Callable[[str], Any] = str
    elif isinstance(key_type, BasicTypeInfo) and key_type._basic_type in (
        BasicType.BYTE,
        BasicType.SHORT,
        BasicType.INT,
        BasicType.LONG,
    ):
        check = record_converter(key_type)
        assert check is not None

        def key(text: str) -> Any:
            return check(int(text))

    else:
        raise TypeError(
            f"JsonLinesReaderFormat cannot read the map field '{where}' with keys of type "
            f"{key_type!r}: a JSON object's keys are text (use Types.STRING() or an integer type)"
        )
    value = _converter(type_info._value_type_info, f"{where}{{}}", fail_on_missing, lenient)

    def map_(mapping: Any) -> dict[Any, Any]:
        if not isinstance(mapping, dict):
            raise _mismatch(where, type_info, mapping, "an object is needed")
        try:
            keys = [key(k) for k in mapping]
        except (ValueError, RecordTypeError) as exc:
            raise _FieldError(
                f"field '{where}' ({type_info!r}): a key does not fit: {exc}"
            ) from None
        return {
            k: None if v is None else value(v) for k, v in zip(keys, mapping.values(), strict=True)
        }

    return map_
