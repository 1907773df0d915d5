"""A key hash that is the same in every process, machine and Python version.

Python's ``hash()`` is salted per process for ``str`` and ``bytes``, so it cannot decide
which subtask owns a key. Values that compare equal as dict keys (``1``, ``1.0``,
``True``) hash equally here too, because they are the same key in a keyed state.
"""

from __future__ import annotations

import struct
import zlib
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

_INT_MIN = -(1 << 31)
_INT_MAX = (1 << 31) - 1
_MASK32 = 0xFFFFFFFF

# Distinct CRC seeds keep equal byte strings of different types apart.
_SEED_STR = 0x5354
_SEED_BYTES = 0x4259
_SEED_BIGINT = 0x4249
_SEED_FLOAT = 0x464C
_SEED_TEXT = 0x5458


def _to_int32(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def _int_hash(value: int) -> int:
    if _INT_MIN <= value <= _INT_MAX:
        return value  # as Java's Integer.hashCode
    if -(1 << 63) <= value < (1 << 63):
        return _to_int32(value ^ (value >> 32))  # as Java's Long.hashCode
    raw = value.to_bytes((value.bit_length() + 8) // 8, "big", signed=True)
    return _to_int32(zlib.crc32(raw, _SEED_BIGINT))


def stable_key_hash(key: Any) -> int:
    """The 32-bit signed hash fed to Flink's murmur hash to pick a key group."""
    kind = type(key)
    if kind is int:
        return _int_hash(key)
    if kind is str:
        return _to_int32(zlib.crc32(key.encode("utf-8", "surrogatepass"), _SEED_STR))
    if kind is tuple:
        h = 1
        for item in key:
            h = (31 * h + stable_key_hash(item)) & _MASK32
        return _to_int32(h)
    if kind is bool:
        return int(key)
    if kind is bytes or kind is bytearray:
        return _to_int32(zlib.crc32(key, _SEED_BYTES))
    if kind is float:
        if key.is_integer():
            return _int_hash(int(key))
        return _to_int32(zlib.crc32(struct.pack(">d", key), _SEED_FLOAT))
    if key is None:
        raise ValueError("a key selector returned None; keys must not be null (as in Flink)")
    if isinstance(key, tuple):  # Row, named tuples
        return stable_key_hash(tuple(key))
    if isinstance(key, int):  # int subclasses such as IntEnum
        return _int_hash(int(key))
    if isinstance(key, str):
        return stable_key_hash(str(key))
    if isinstance(key, Decimal | date | datetime | time | timedelta):
        return _to_int32(zlib.crc32(repr(key).encode(), _SEED_TEXT))
    key_hash = getattr(key, "__lockgate_key_hash__", None)
    if key_hash is not None:
        return _to_int32(key_hash())
    raise TypeError(
        f"cannot derive a stable key hash for a key of type {kind.__qualname__}: use int, str, "
        "bytes, bool, float, Decimal, date/time values, tuples or Rows of these, or give the "
        "class a __lockgate_key_hash__() method returning an int"
    )
