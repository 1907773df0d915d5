"""Keys as bytes: the same key gives the same bytes in every process, and decodes back.

RocksDB finds a key by its bytes, so equal keys must encode equally: values that are one
dict key in Python (``1``, ``1.0``, ``True``, ``Decimal(1)``, an IntEnum of 1) encode as
the same integer, as the heap backend and the key hash treat them as one key, and decode
as that canonical value. Types without a canonical form here fall back to pickle, which is
stable for a given value and Python version only: a savepoint restored elsewhere needs the
canonical forms, so ``encode_portable_key`` refuses a key that would need pickle.

The bytes are stored, so an encoding never changes once released: a new form gets a new tag.
An Enum member is stored as its class's import path and its value, which any Python with
that class can read back, where its pickle is only guaranteed to the Python that wrote it.
"""

from __future__ import annotations

import importlib
import pickle
import struct
import sys
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum
from functools import lru_cache
from typing import Any

from lockgate.common.types import Row, RowKind, _row
from lockgate.state.key_hash import IDENTITY_EQ

_NONE = 0
_INT = 1
_BIG_INT = 2
_FLOAT = 3
_STR = 4
_BYTES = 5
_TUPLE = 6
_PICKLE = 7
_DECIMAL = 8
_INSTANT = 9
_DATE = 10  # the proleptic Gregorian ordinal, >I
_DATETIME = 11  # naive: microseconds since 0001-01-01T00:00, >q
_TIME = 12  # naive: microseconds since midnight, >q
_TIMEDELTA = 13  # days, seconds, microseconds as normalized by timedelta, >iII
_ENUM = 14  # "module:qualname" of the class (length-prefixed UTF-8), then the value's encoding
_NAMED_TUPLE = 15  # "module:qualname" of a named tuple class, then its fields as a tuple
_ROW = 16  # a Row: its kind's value (a byte), its field names (a tuple, or None), its values

_INT64 = struct.Struct(">q")
_FLOAT64 = struct.Struct(">d")
_LENGTH = struct.Struct(">I")
_ORDINAL = struct.Struct(">I")
_DELTA = struct.Struct(">iII")

_CLOCK_WIDTHS = {_DATE: 4, _DATETIME: 8, _TIME: 8, _TIMEDELTA: _DELTA.size}
_FIRST_MOMENT = datetime(1, 1, 1)


_STR_TAG = bytes([_STR])
_INT_TAG = bytes([_INT])


class NonPortableKeyError(TypeError):
    """A key that only pickle can encode, so a savepoint holding it restores only where the
    same Python unpickles it the same way."""


_PORTABLE_TYPES = (
    "None, int, bool, float, Decimal, str, bytes, date, datetime, time without tzinfo, "
    "timedelta, Enum members of an importable class, and tuples or Rows of these"
)


class _Unpicklable(Exception):
    """Raised inside the encoder instead of pickling ``key``."""

    def __init__(self, key: Any) -> None:
        super().__init__(key)
        self.key = key


def encode_key(key: Any) -> bytes:
    kind = type(key)
    if kind is str:  # the common keys first, without a buffer
        data: bytes = key.encode("utf-8", "surrogatepass")
        return _STR_TAG + _LENGTH.pack(len(data)) + data
    if kind is int and -(1 << 63) <= key < (1 << 63):
        return _INT_TAG + _INT64.pack(key)
    out = bytearray()
    _encode(key, out, True)
    return bytes(out)


def encode_namespace(namespace: Any) -> bytes:
    """``encode_key(namespace)``, except that a named tuple of an importable class (a window)
    keeps its class, so that it decodes as the window it was: as a key it must encode as its
    tuple (they are equal), but a timer hands its namespace back to the operator."""
    if isinstance(namespace, tuple) and hasattr(type(namespace), "_fields"):
        name = _class_name(type(namespace))
        if name is not None:
            out = bytearray()
            _encode_text(_NAMED_TUPLE, name, out)
            _encode(tuple(namespace), out, True)
            return bytes(out)
    return encode_key(namespace)


def encode_portable_key(key: Any) -> bytes:
    """``encode_key(key)``, or ``NonPortableKeyError`` if any part of the key would be pickled."""
    kind = type(key)
    if kind is str:
        data: bytes = key.encode("utf-8", "surrogatepass")
        return _STR_TAG + _LENGTH.pack(len(data)) + data
    if kind is int and -(1 << 63) <= key < (1 << 63):
        return _INT_TAG + _INT64.pack(key)
    out = bytearray()
    try:
        _encode(key, out, False)
    except _Unpicklable as refused:
        where = "" if refused.key is key else f" (inside a {_type_name(type(key))} key)"
        raise NonPortableKeyError(
            f"a key of type {_type_name(type(refused.key))}{where} has no portable encoding: "
            f"savepoints need keys of {_PORTABLE_TYPES}"
        ) from None
    return bytes(out)


def _type_name(cls: type) -> str:
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _encode(key: Any, out: bytearray, pickle_ok: bool) -> None:
    kind = type(key)
    if kind is str:
        data = key.encode("utf-8", "surrogatepass")
        out.append(_STR)
        out += _LENGTH.pack(len(data))
        out += data
    elif kind is int or kind is bool:
        _encode_int(int(key), out)
    elif kind is float:
        if key.is_integer():
            _encode_int(int(key), out)
        else:
            out.append(_FLOAT)
            out += _FLOAT64.pack(key)
    elif kind is bytes:
        out.append(_BYTES)
        out += _LENGTH.pack(len(key))
        out += key
    elif kind is tuple:
        out.append(_TUPLE)
        out += _LENGTH.pack(len(key))
        for item in key:
            _encode(item, out, pickle_ok)
    elif key is None:
        out.append(_NONE)
    else:
        _encode_other(key, out, pickle_ok)


def _encode_other(key: Any, out: bytearray, pickle_ok: bool) -> None:
    """Subclasses and value types that equal other types' values, as ``key_hash`` sees them:
    an IntEnum is its int, Decimal('7') is 7, aware datetimes one instant. A Row (equal only
    to a Row) keeps its names and kind, so that it decodes as the Row it was.
    Dates and times match their exact types only: a subclass may hold more (a pandas
    Timestamp's nanoseconds) and must decode as itself."""
    kind = type(key)
    if isinstance(key, Row):
        out.append(_ROW)
        out.append(key.get_row_kind().value)
        _encode(key._fields, out, pickle_ok)
        _encode(tuple(key), out, pickle_ok)
    elif isinstance(key, tuple):
        _encode(tuple(key), out, pickle_ok)
    elif isinstance(key, int):
        _encode_int(int(key), out)
    elif isinstance(key, str):
        _encode(str.__str__(key), out, pickle_ok)
    elif isinstance(key, float):
        _encode(float(key), out, pickle_ok)
    elif isinstance(key, Decimal):
        if key.is_finite() and key == key.to_integral_value():
            _encode_int(int(key), out)
        elif not key.is_finite() or Decimal(float(key)) == key:
            _encode(float(key), out, pickle_ok)
        else:
            _encode_text(_DECIMAL, str(key.normalize()), out)
    elif isinstance(key, datetime) and key.utcoffset() is not None:
        _encode_text(_INSTANT, key.astimezone(UTC).replace(tzinfo=None).isoformat(), out)
    elif kind is date:
        out.append(_DATE)
        out += _ORDINAL.pack(key.toordinal())
    elif kind is datetime:  # naive (or a tzinfo without an offset): fold never changes equality
        out.append(_DATETIME)
        out += _INT64.pack(_day_us(key.toordinal() - 1, key))
    elif kind is time and key.utcoffset() is None:
        out.append(_TIME)
        out += _INT64.pack(_day_us(0, key))
    elif kind is timedelta:
        out.append(_TIMEDELTA)
        out += _DELTA.pack(key.days, key.seconds, key.microseconds)
    elif isinstance(key, Enum) and (name := _enum_name(type(key))) is not None:
        _encode_text(_ENUM, name, out)
        _encode(key.value, out, pickle_ok)
    elif pickle_ok:
        _encode_text(_PICKLE, pickle.dumps(key, protocol=pickle.HIGHEST_PROTOCOL), out)
    else:
        raise _Unpicklable(key)


def _day_us(days: int, clock: datetime | time) -> int:
    seconds = (days * 24 + clock.hour) * 3600 + clock.minute * 60 + clock.second
    return seconds * 1_000_000 + clock.microsecond


def _enum_name(cls: type[Enum]) -> bytes | None:
    """The import path of an enum class, or None (a class made in a function, or that
    compares its members by value, as a mixin type may): such members stay pickled, which
    fails or stays non-portable as before."""
    return _class_name(cls) if cls.__eq__ in IDENTITY_EQ else None


@lru_cache(maxsize=256)
def _class_name(cls: type) -> bytes | None:
    """The import path that finds ``cls`` again, or None if there is none."""
    module = sys.modules.get(cls.__module__)
    if module is None or _resolve(module, cls.__qualname__) is not cls:
        return None
    return f"{cls.__module__}:{cls.__qualname__}".encode()


def _resolve(module: object, qualname: str) -> object:
    target = module
    for part in qualname.split("."):
        target = getattr(target, part, None)
        if target is None:
            return None
    return target


def _encode_text(tag: int, text: str | bytes, out: bytearray) -> None:
    data = text.encode() if isinstance(text, str) else text
    out.append(tag)
    out += _LENGTH.pack(len(data))
    out += data


def _encode_int(value: int, out: bytearray) -> None:
    if -(1 << 63) <= value < (1 << 63):
        out.append(_INT)
        out += _INT64.pack(value)
    else:
        data = value.to_bytes((value.bit_length() + 8) // 8, "big", signed=True)
        out.append(_BIG_INT)
        out += _LENGTH.pack(len(data))
        out += data


def decode_key_prefix(data: bytes, start: int = 0) -> tuple[Any, int]:
    """The key encoded at ``data[start:]`` and where its encoding ends (keys are
    prefix-free, so what follows is not part of it)."""
    return _decode(memoryview(data), start)


def decode_key(data: bytes) -> Any:
    key, end = _decode(memoryview(data), 0)
    if end != len(data):
        raise ValueError(f"{len(data) - end} trailing bytes after an encoded key")
    return key


def _decode(data: memoryview, pos: int) -> tuple[Any, int]:
    tag = data[pos]
    pos += 1
    if tag == _INT:
        return _INT64.unpack_from(data, pos)[0], pos + 8
    if tag == _FLOAT:
        return _FLOAT64.unpack_from(data, pos)[0], pos + 8
    if tag == _NONE:
        return None, pos
    if tag == _TUPLE:
        (count,) = _LENGTH.unpack_from(data, pos)
        pos += 4
        items = []
        for _ in range(count):
            item, pos = _decode(data, pos)
            items.append(item)
        return tuple(items), pos
    if tag == _ROW:
        kind = data[pos]
        names, pos = _decode(data, pos + 1)
        values, pos = _decode(data, pos)
        return _row(list(values), names, RowKind(kind)), pos
    if tag in _CLOCK_WIDTHS:
        return _decode_clock(tag, data, pos), pos + _CLOCK_WIDTHS[tag]
    (length,) = _LENGTH.unpack_from(data, pos)
    pos += 4
    raw = bytes(data[pos : pos + length])
    pos += length
    if tag == _STR:
        return raw.decode("utf-8", "surrogatepass"), pos
    if tag == _BYTES:
        return raw, pos
    if tag == _BIG_INT:
        return int.from_bytes(raw, "big", signed=True), pos
    if tag == _PICKLE:
        return pickle.loads(raw), pos
    if tag == _DECIMAL:
        return Decimal(raw.decode()), pos
    if tag == _INSTANT:
        return datetime.fromisoformat(raw.decode()).replace(tzinfo=UTC), pos
    if tag == _ENUM:
        value, pos = _decode(data, pos)
        return _enum_member(raw.decode(), value), pos
    if tag == _NAMED_TUPLE:
        fields, pos = _decode(data, pos)
        return _named_tuple_class(raw.decode())(*fields), pos
    raise ValueError(f"unknown key tag {tag}")


def _decode_clock(tag: int, data: memoryview, pos: int) -> Any:
    if tag == _DATE:
        return date.fromordinal(_ORDINAL.unpack_from(data, pos)[0])
    if tag == _DATETIME:
        return _FIRST_MOMENT + timedelta(microseconds=_INT64.unpack_from(data, pos)[0])
    if tag == _TIME:
        seconds, micros = divmod(_INT64.unpack_from(data, pos)[0], 1_000_000)
        minutes, second = divmod(seconds, 60)
        return time(minutes // 60, minutes % 60, second, micros)
    days, seconds, micros = _DELTA.unpack_from(data, pos)
    return timedelta(days, seconds, micros)


def _enum_member(name: str, value: Any) -> Enum:
    cls = _enum_class(name)
    try:
        return cls(value)
    except ValueError as err:
        raise ValueError(f"cannot decode a key of enum class {name}: {err}") from err


def _named_tuple_class(name: str) -> Any:
    return _class_named(name, tuple, "a named tuple of class")


def _enum_class(name: str) -> type[Enum]:
    cls: type[Enum] = _class_named(name, Enum, "a key of enum class")
    return cls


@lru_cache(maxsize=256)
def _class_named(name: str, base: type, what: str) -> Any:
    """The class ``module:qualname`` names, which must derive from ``base``."""
    module_name, _, qualname = name.partition(":")
    try:
        cls = _resolve(importlib.import_module(module_name), qualname)
    except ImportError as err:
        raise ValueError(f"cannot decode {what} {name}: {err}") from err
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ValueError(f"cannot decode {what} {name}: no such {base.__name__} class")
    return cls
