"""Keys as bytes: the same key gives the same bytes in every process, and decodes back.

RocksDB finds a key by its bytes, so equal keys must encode equally: values that are one
dict key in Python (``1``, ``1.0``, ``True``, ``Decimal(1)``, an IntEnum of 1) encode as
the same integer, as the heap backend and the key hash treat them as one key, and decode
as that canonical value. Types without a canonical form here fall back to pickle, which is
stable for a given value and Python version.
"""

from __future__ import annotations

import pickle
import struct
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

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

_INT64 = struct.Struct(">q")
_FLOAT64 = struct.Struct(">d")
_LENGTH = struct.Struct(">I")


_STR_TAG = bytes([_STR])
_INT_TAG = bytes([_INT])


def encode_key(key: Any) -> bytes:
    kind = type(key)
    if kind is str:  # the common keys first, without a buffer
        data: bytes = key.encode("utf-8", "surrogatepass")
        return _STR_TAG + _LENGTH.pack(len(data)) + data
    if kind is int and -(1 << 63) <= key < (1 << 63):
        return _INT_TAG + _INT64.pack(key)
    out = bytearray()
    _encode(key, out)
    return bytes(out)


def _encode(key: Any, out: bytearray) -> None:
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
            _encode(item, out)
    elif key is None:
        out.append(_NONE)
    else:
        _encode_other(key, out)


def _encode_other(key: Any, out: bytearray) -> None:
    """Subclasses and value types that equal other types' values, as ``key_hash`` sees them:
    an IntEnum is its int, a Row its tuple, Decimal('7') is 7, aware datetimes one instant."""
    if isinstance(key, tuple):
        _encode(tuple(key), out)
    elif isinstance(key, int):
        _encode_int(int(key), out)
    elif isinstance(key, str):
        _encode(str.__str__(key), out)
    elif isinstance(key, float):
        _encode(float(key), out)
    elif isinstance(key, Decimal):
        if key.is_finite() and key == key.to_integral_value():
            _encode_int(int(key), out)
        elif not key.is_finite() or Decimal(float(key)) == key:
            _encode(float(key), out)
        else:
            _encode_text(_DECIMAL, str(key.normalize()), out)
    elif isinstance(key, datetime) and key.utcoffset() is not None:
        _encode_text(_INSTANT, key.astimezone(UTC).replace(tzinfo=None).isoformat(), out)
    else:
        _encode_text(_PICKLE, pickle.dumps(key, protocol=pickle.HIGHEST_PROTOCOL), out)


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
    raise ValueError(f"unknown key tag {tag}")
