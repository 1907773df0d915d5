"""State values as Spark takes them, and Spark's values as state holds them.

Spark infers a struct from a tuple (fields ``_1``, ``_2``, ...), a named tuple or a
``pyspark.sql.Row``; lockgate's ``Row`` is none of these, so it becomes a Spark ``Row``
with its names (or a plain tuple without). Back from Spark, a struct
is a ``pyspark.sql.Row``: one with Spark's tuple names (``_1``, ...) or Flink's (``f0``,
..., as a ``Types.TUPLE`` column is read) becomes a tuple again, another a lockgate ``Row``
with its names, and binary values (``bytearray``) become ``bytes``, so that a key read from
a savepoint and written back is the same key.

A window (the namespace of window state) is kept by keyed state as the tuple it equals,
without its class (``key_codec.encode_key``); ``window_to_spark`` gives it the field names
of the window it was.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Row as SparkRow

from lockgate.common.types import Row

_PLAIN = (int, str, float, bool, bytes, type(None))
# The windows of lockgate's assigners by their number of int fields, and the fields' names:
# TimeWindow(start, end) and CountWindow(id) (GlobalWindow has none)
_WINDOW_FIELDS = {2: ("start", "end"), 1: ("id",)}


def to_spark(value: Any) -> Any:
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is tuple:
        return tuple(to_spark(v) for v in value)
    if kind is list:
        return [to_spark(v) for v in value]
    if kind is dict:
        return {to_spark(k): to_spark(v) for k, v in value.items()}
    if isinstance(value, Row):
        names = value._fields
        if names is not None:
            return SparkRow(**{n: to_spark(v) for n, v in zip(names, value, strict=True)})
        return tuple(to_spark(v) for v in value)
    if isinstance(value, tuple) and hasattr(value, "_asdict") and not isinstance(value, SparkRow):
        return SparkRow(**{n: to_spark(v) for n, v in value._asdict().items()})
    return value


def window_to_spark(namespace: Any) -> Any:
    """A window state's namespace as Spark takes it: a tuple of two ints is a TimeWindow, a
    struct ``start, end``, one of one int a CountWindow, a struct ``id``, as the windows of
    timers (which keep their class) are; any other namespace as ``to_spark`` gives it."""
    if type(namespace) is tuple and all(type(part) is int for part in namespace):
        names = _WINDOW_FIELDS.get(len(namespace))
        if names is not None:
            return SparkRow(**dict(zip(names, namespace, strict=True)))
    return to_spark(namespace)


def _is_tuple_names(names: list[str]) -> bool:
    """Spark's names of a tuple's fields (``_1``, ...), or Flink's (``f0``, ...)."""
    return names in (
        [f"_{i}" for i in range(1, len(names) + 1)],
        [f"f{i}" for i in range(len(names))],
    )


def from_spark(value: Any) -> Any:
    kind = type(value)
    if kind in _PLAIN:
        return value
    if isinstance(value, SparkRow):
        names = list(getattr(value, "__fields__", []))
        items = [from_spark(v) for v in value]
        if not names or _is_tuple_names(names):
            return tuple(items)
        return Row(**dict(zip(names, items, strict=True)))
    if kind is bytearray:
        return bytes(value)
    if kind is list:
        return [from_spark(v) for v in value]
    if kind is dict:
        return {from_spark(k): from_spark(v) for k, v in value.items()}
    if kind is tuple:
        return tuple(from_spark(v) for v in value)
    return value
