"""A key hash that is the same in every process, machine and Python version.

Python's ``hash()`` is salted per process for ``str`` and ``bytes``, so it cannot decide
which subtask owns a key. Values that compare equal as dict keys (``1``, ``1.0``,
``True``) hash equally here too, because they are the same key in a keyed state.

A savepoint's key groups must stay where they are, so a hash never changes once released.
A plain Enum member (one equal only to itself) hashes by its class's qualified name and its
value, which survive a restart, where ``hash()`` of a member hashes its salted name.
"""

from __future__ import annotations

import struct
import zlib
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum, Flag
from typing import Any

from lockgate.common.types import Row

_INT_MIN = -(1 << 31)
_INT_MAX = (1 << 31) - 1
_MASK32 = 0xFFFFFFFF

# Distinct CRC seeds keep equal byte strings of different types apart.
_SEED_STR = 0x5354
_SEED_BYTES = 0x4259
_SEED_BIGINT = 0x4249
_SEED_FLOAT = 0x464C
_SEED_TEXT = 0x5458
_SEED_INSTANT = 0x494E
_SEED_ENUM = 0x454E
_ENUM_NONE_VALUE = 0x4E4F  # what a member valued None adds to its class's hash
# An Enum's members equal only themselves, unless its class or a mixin type redefines __eq__.
IDENTITY_EQ: tuple[object, ...] = (object.__eq__, Enum.__eq__, Flag.__eq__)


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
    if isinstance(key, tuple | Row):  # named tuples; a Row hashes as the tuple of its values
        return stable_key_hash(tuple(key))
    if isinstance(key, int):  # int subclasses such as IntEnum
        return _int_hash(int(key))
    if isinstance(key, str):  # str subclasses such as a str Enum: hash the string value
        return stable_key_hash(str.__str__(key))
    if isinstance(key, float):
        return stable_key_hash(float(key))
    if isinstance(key, Decimal):
        return _decimal_hash(key)
    if isinstance(key, timedelta):
        return _int_hash(key // timedelta(microseconds=1))
    if isinstance(key, datetime):
        if key.utcoffset() is not None:  # aware: equal instants are equal keys
            key = key.astimezone(UTC).replace(tzinfo=None)
            return _to_int32(zlib.crc32(key.isoformat().encode(), _SEED_INSTANT))
        return _to_int32(zlib.crc32(key.isoformat().encode(), _SEED_TEXT))
    if isinstance(key, date | time):
        return _to_int32(zlib.crc32(key.isoformat().encode(), _SEED_TEXT))
    key_hash = getattr(key, "__lockgate_key_hash__", None)
    if key_hash is not None:
        return _to_int32(key_hash())
    if isinstance(key, Enum) and kind.__eq__ in IDENTITY_EQ:  # members equal only themselves
        return _enum_hash(key)
    raise TypeError(
        f"cannot derive a stable key hash for a key of type {kind.__qualname__}: use int, str, "
        "bytes, bool, float, Decimal, date/time values, plain Enum members, tuples or Rows of "
        "these, or give the class a __lockgate_key_hash__() method returning an int"
    )


def _enum_hash(member: Enum) -> int:
    cls = type(member)
    name = f"{cls.__module__}:{cls.__qualname__}"
    value = member.value
    if value is None:
        value_hash = _ENUM_NONE_VALUE
    else:
        try:
            value_hash = stable_key_hash(value)
        except TypeError as err:
            qualified = f"{cls.__module__}.{cls.__qualname__}"
            raise TypeError(
                f"cannot derive a stable key hash for a key of type {qualified}: its value "
                f"{value!r} has none ({err})"
            ) from None
    return _to_int32(31 * zlib.crc32(name.encode(), _SEED_ENUM) + value_hash)


def _decimal_hash(key: Decimal) -> int:
    """Decimals equal to an int or a float hash like them; others by their normal form."""
    if not key.is_finite():
        return stable_key_hash(float(key))
    if key == key.to_integral_value():
        return _int_hash(int(key))
    as_float = float(key)
    if Decimal(as_float) == key:
        return stable_key_hash(as_float)
    return _to_int32(zlib.crc32(str(key.normalize()).encode(), _SEED_TEXT))
