"""``Row`` and ``RowKind`` as in PyFlink, and ``Types`` (from ``lockgate.common.typeinfo``).

A declared ``output_type`` converts records as PyFlink's coders do (see
``lockgate.common.type_conversion``).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, SupportsIndex

from lockgate.common.typeinfo import TypeInformation, Types


class Row(tuple[Any, ...]):
    """A tuple whose fields may also be read by name, like ``pyflink.common.Row``.

    ``Row(1, "a")`` is positional; ``Row(id=1, name="a")`` is named. Being a tuple keeps it
    cheap to pickle, hashable as a key, and usable wherever tuples are.
    """

    _fields: tuple[str, ...] | None  # the field names of a named Row

    def __new__(cls, *args: Any, **kwargs: Any) -> Row:
        if args and kwargs:
            raise ValueError("Row takes either positional or named fields, not both")
        row = super().__new__(cls, kwargs.values() if kwargs else args)
        row._fields = tuple(kwargs) if kwargs else None
        return row

    def __getnewargs_ex__(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if self._fields:
            return (), dict(zip(self._fields, self, strict=True))
        return tuple(self), {}

    def __getattr__(self, name: str) -> Any:
        fields = object.__getattribute__(self, "_fields")
        if fields and name in fields:
            return tuple.__getitem__(self, fields.index(name))
        raise AttributeError(name)

    def __getitem__(self, item: SupportsIndex | slice | str) -> Any:
        if isinstance(item, str):
            if not self._fields or item not in self._fields:
                raise KeyError(item)
            return tuple.__getitem__(self, self._fields.index(item))
        return tuple.__getitem__(self, item)

    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        if not self._fields:
            raise TypeError("cannot convert a Row without field names to a dict")
        return {
            name: value.as_dict(True) if recursive and isinstance(value, Row) else value
            for name, value in zip(self._fields, self, strict=True)
        }

    def get_fields_by_names(self, names: list[str]) -> list[Any]:
        return [self[name] for name in names]

    def __repr__(self) -> str:
        if self._fields:
            inner = ", ".join(f"{n}={v!r}" for n, v in zip(self._fields, self, strict=True))
        else:
            inner = ", ".join(repr(v) for v in self)
        return f"Row({inner})"


class RowKind(Enum):
    """The change a row stands for, as PyFlink's ``RowKind`` (``str`` gives Flink's short form)."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    def __str__(self) -> str:
        return {0: "+I", 1: "-U", 2: "+U"}.get(self.value, "-D")


__all__ = ["Row", "RowKind", "TypeInformation", "Types"]
