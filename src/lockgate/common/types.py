"""``Types`` and ``Row`` as in PyFlink.

lockgate records are plain Python objects, so type information is accepted and kept for
documentation and for future typed serializers; it never changes a record.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, SupportsIndex


class TypeInformation:
    def __init__(self, name: str, *params: Any):
        self._name = name
        self._params = params

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeInformation) and (self._name, self._params) == (
            other._name,
            other._params,
        )

    def __hash__(self) -> int:
        return hash(self._name)

    def __repr__(self) -> str:
        if not self._params:
            return self._name
        return f"{self._name}({', '.join(map(repr, self._params))})"


class Types:
    """Factory of type information, mirroring ``pyflink.common.Types``."""

    @staticmethod
    def STRING() -> TypeInformation:
        return TypeInformation("STRING")

    @staticmethod
    def BYTE() -> TypeInformation:
        return TypeInformation("BYTE")

    @staticmethod
    def BOOLEAN() -> TypeInformation:
        return TypeInformation("BOOLEAN")

    @staticmethod
    def SHORT() -> TypeInformation:
        return TypeInformation("SHORT")

    @staticmethod
    def INT() -> TypeInformation:
        return TypeInformation("INT")

    @staticmethod
    def LONG() -> TypeInformation:
        return TypeInformation("LONG")

    @staticmethod
    def FLOAT() -> TypeInformation:
        return TypeInformation("FLOAT")

    @staticmethod
    def DOUBLE() -> TypeInformation:
        return TypeInformation("DOUBLE")

    @staticmethod
    def CHAR() -> TypeInformation:
        return TypeInformation("CHAR")

    @staticmethod
    def BIG_INT() -> TypeInformation:
        return TypeInformation("BIG_INT")

    @staticmethod
    def BIG_DEC() -> TypeInformation:
        return TypeInformation("BIG_DEC")

    @staticmethod
    def INSTANT() -> TypeInformation:
        return TypeInformation("INSTANT")

    @staticmethod
    def SQL_DATE() -> TypeInformation:
        return TypeInformation("SQL_DATE")

    @staticmethod
    def SQL_TIME() -> TypeInformation:
        return TypeInformation("SQL_TIME")

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:
        return TypeInformation("SQL_TIMESTAMP")

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:
        return TypeInformation("PICKLED_BYTE_ARRAY")

    @staticmethod
    def ROW(field_types: list[TypeInformation]) -> TypeInformation:
        return TypeInformation("ROW", tuple(field_types))

    @staticmethod
    def ROW_NAMED(field_names: list[str], field_types: list[TypeInformation]) -> TypeInformation:
        return TypeInformation("ROW_NAMED", tuple(field_names), tuple(field_types))

    @staticmethod
    def TUPLE(field_types: list[TypeInformation]) -> TypeInformation:
        return TypeInformation("TUPLE", tuple(field_types))

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return TypeInformation("PRIMITIVE_ARRAY", element_type)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return TypeInformation("BASIC_ARRAY", element_type)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return TypeInformation("OBJECT_ARRAY", element_type)

    @staticmethod
    def MAP(key_type_info: TypeInformation, value_type_info: TypeInformation) -> TypeInformation:
        return TypeInformation("MAP", key_type_info, value_type_info)

    @staticmethod
    def LIST(element_type_info: TypeInformation) -> TypeInformation:
        return TypeInformation("LIST", element_type_info)


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
