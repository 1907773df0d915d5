"""Typed, versioned JSON records for control data that crosses a process boundary.

Acknowledgements, staging records and checkpoint metadata are written by one process and
read by another (a task and the driver, a crashed run and its successor). Each is a frozen
dataclass whose JSON form carries a format name and version; reading one checks both and the
type of every field, so a damaged or foreign file fails naming the file and the field
instead of surfacing later as a ``KeyError``.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


class RecordFormatError(ValueError):
    """A control record that is damaged, foreign, of another version, or lacks a field."""


def envelope(format_name: str, version: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"format": format_name, "version": version, **body}


def open_envelope(raw: Any, format_name: str, version: int, where: str) -> dict[str, Any]:
    """The fields of a record, after checking that it is ``format_name`` at ``version``."""
    if not isinstance(raw, dict) or raw.get("format") != format_name:
        raise RecordFormatError(f"{where} is not a {format_name} record")
    if raw.get("version") != version:
        raise RecordFormatError(
            f"{where} is a {format_name} record of version {raw.get('version')!r}; this "
            f"lockgate reads version {version}"
        )
    return raw


def field(raw: dict[str, Any], name: str, kind: type[T] | tuple[type, ...], where: str) -> T:
    """``raw[name]``, which must exist and be of ``kind`` (bool is not an int here)."""
    if name not in raw:
        raise RecordFormatError(f"{where} lacks the field '{name}'")
    value = raw[name]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise RecordFormatError(f"{where}: field '{name}' is {value!r}, not {_names(kinds)}")
    if not isinstance(value, kinds):
        raise RecordFormatError(
            f"{where}: field '{name}' is {type(value).__name__} {value!r:.80}, not {_names(kinds)}"
        )
    return value  # type: ignore[return-value]


def _names(kinds: tuple[type, ...]) -> str:
    return " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
