"""``Row`` and ``RowKind`` as in PyFlink, and ``Types`` (from ``lockgate.common.typeinfo``).

A declared ``output_type`` converts records as PyFlink's coders do (see
``lockgate.common.type_conversion``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from enum import Enum
from typing import Any, SupportsIndex

from lockgate.common.typeinfo import TypeInformation, Types


class RowKind(Enum):
    """The change a row stands for, as PyFlink's ``RowKind`` (``str`` gives Flink's short form)."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    def __str__(self) -> str:
        return _SHORT_KINDS[self.value]


_SHORT_KINDS = ("+I", "-U", "+U", "-D")
_INTERNALS = frozenset(("_values", "_fields", "_row_kind"))


class Row:
    """A record of fields, read and written by position or by name, like ``pyflink.common.Row``.

    ``Row(1, "a")`` is positional; ``Row(id=1, name="a")`` is named, in the order given. A
    Row is mutable (``row[0] = 2``, ``row["name"] = "b"``), carries a ``RowKind`` (INSERT
    unless set), reads named fields as attributes (``row.name``), and hashes by its values,
    so it can be a key. A Row of names makes rows: ``Person = Row("name", "age")``, then
    ``Person("Alice", 11)``.
    """

    __slots__ = ("_fields", "_row_kind", "_values")

    _values: list[Any]
    _fields: tuple[Any, ...] | None  # the field names of a named Row
    _row_kind: RowKind

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and kwargs:
            raise ValueError("Row takes either positional or named fields, not both")
        _set_values(self, list(kwargs.values()) if kwargs else list(args))
        _set_fields(self, tuple(kwargs) if kwargs else None)
        _set_kind(self, RowKind.INSERT)

    @staticmethod
    def of_kind(row_kind: RowKind, *args: Any, **kwargs: Any) -> Row:
        row = Row(*args, **kwargs)
        _set_kind(row, row_kind)
        return row

    def get_row_kind(self) -> RowKind:
        return self._row_kind

    def set_row_kind(self, row_kind: RowKind) -> None:
        _set_kind(self, row_kind)

    def set_field_names(self, field_names: Iterable[Any]) -> None:
        _set_fields(self, tuple(field_names))

    def get_fields_by_names(self, names: Iterable[str]) -> list[Any]:
        """The values of the fields ``names``, in that order (all values without names)."""
        fields = self._fields
        if fields is None:
            return list(self._values)
        names = list(names)
        unknown = [name for name in names if name not in fields]
        if unknown:
            raise ValueError(f"field names {unknown} are not among {list(fields)}")
        values = self._values
        return [values[fields.index(name)] for name in names]

    def as_dict(self, recursive: bool = False) -> dict[Any, Any]:
        """The fields by name; ``recursive`` also turns Rows inside (in lists and dicts too)
        into dicts."""
        if self._fields is None:
            raise TypeError("a Row without field names cannot be a dict")
        if recursive:
            return {n: _as_plain(v) for n, v in zip(self._fields, self._values, strict=False)}
        return dict(zip(self._fields, self._values, strict=False))

    def __call__(self, *args: Any) -> Row:
        """A Row with this Row's values as field names and ``args`` as values, and its kind."""
        if len(args) > len(self._values):
            raise ValueError(
                f"cannot make a Row of {self!r} from {args!r}: at most {len(self._values)} "
                "values expected"
            )
        return _row(list(args), tuple(self._values), self._row_kind)

    def __getitem__(self, item: SupportsIndex | slice | str) -> Any:
        if not isinstance(item, str):
            return self._values[item]
        return self._values[self._index_of(item)]

    def __setitem__(self, key: SupportsIndex | slice | str, value: Any) -> None:
        if not isinstance(key, str):
            self._values[key] = value
            return
        self._values[self._index_of(key)] = value

    def _index_of(self, name: str) -> int:
        """The position of field ``name``: ValueError if it is not one of this Row's names,
        KeyError if it has no value for it (as PyFlink) or the Row has no names (PyFlink
        raises an AttributeError for its missing names there)."""
        fields = self._fields
        if fields is None:
            raise KeyError(name)
        try:
            index = fields.index(name)
        except ValueError:
            raise ValueError(f"{name!r} is not a field of {self!r}") from None
        if index >= len(self._values):
            raise KeyError(name)
        return index

    def __getattr__(self, name: str) -> Any:
        # only called for what is not a method or an internal: a field read as an attribute
        # (never a name with "_" first, which would look for an internal not yet set)
        if name[:1] != "_":
            fields = self._fields
            if fields is not None and name in fields:
                index = fields.index(name)
                if index < len(self._values):
                    return self._values[index]
        raise AttributeError(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _INTERNALS:
            raise AttributeError(f"a Row's fields are set by item (row[{name!r}] = ...)")
        object.__setattr__(self, name, value)

    def __contains__(self, item: Any) -> bool:
        return item in (self._values if self._fields is None else self._fields)

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __eq__(self, other: Any) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        if self._row_kind is not other._row_kind:
            return False
        fields, other_fields = self._fields, other._fields
        if fields == other_fields:
            return self._values == other._values
        if fields is None or other_fields is None or sorted(fields) != sorted(other_fields):
            return False
        # the same names in another order: compare field by field
        return all(self[name] == other[name] for name in fields)

    def __hash__(self) -> int:
        return hash(tuple(self._values))

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # the least that rebuilds it: records and state values are pickled one by one
        kind = self._row_kind
        if kind is not RowKind.INSERT:
            return _row, (list(self._values), self._fields, kind)
        if self._fields is None:
            return _row, (list(self._values),)
        return _row, (list(self._values), self._fields)

    def __repr__(self) -> str:
        if self._fields is None:
            return f"<Row({', '.join(repr(v) for v in self._values)})>"
        named = zip(self._fields, self._values, strict=False)
        return f"Row({', '.join(f'{n}={v!r}' for n, v in named)})"


# The slots' setters: what builds a Row sets its internals without Row.__setattr__'s check
_set_values: Callable[[Row, list[Any]], None] = vars(Row)["_values"].__set__
_set_fields: Callable[[Row, tuple[Any, ...] | None], None] = vars(Row)["_fields"].__set__
_set_kind: Callable[[Row, RowKind], None] = vars(Row)["_row_kind"].__set__
_new = object.__new__


def _row(
    values: list[Any], fields: tuple[Any, ...] | None = None, kind: RowKind = RowKind.INSERT
) -> Row:
    """A Row holding the list ``values`` (not a copy), named by ``fields`` when given.

    Pickled Rows (records, state values, checkpoints) are rebuilt by this function, found by
    its name: it keeps its name and signature.
    """
    row = _new(Row)
    _set_values(row, values)
    _set_fields(row, fields)
    _set_kind(row, kind)
    return row


def _as_plain(value: Any) -> Any:
    """``value`` with the Rows in it as dicts (through lists and dict values)."""
    if isinstance(value, Row):
        return value.as_dict(True)
    if isinstance(value, list):
        return [_as_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_plain(item) for key, item in value.items()}
    return value


__all__ = ["Row", "RowKind", "TypeInformation", "Types"]
