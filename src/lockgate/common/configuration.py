"""PyFlink's ``Configuration``: a string-to-string map with typed getters and setters."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def _to_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Configuration:
    """Holds configuration as strings, as Flink's ``Configuration`` does."""

    def __init__(self, other: Configuration | None = None):
        self._data: dict[str, str] = dict(other._data) if other is not None else {}

    def get_string(self, key: str, default_value: str) -> str:
        return self._data.get(key, default_value)

    def set_string(self, key: str, value: str) -> Configuration:
        self._data[key] = _to_string(value)
        return self

    def get_integer(self, key: str, default_value: int) -> int:
        value = self._data.get(key)
        return default_value if value is None else int(value)

    def set_integer(self, key: str, value: int) -> Configuration:
        return self.set_string(key, str(int(value)))

    def get_boolean(self, key: str, default_value: bool) -> bool:
        value = self._data.get(key)
        return default_value if value is None else value.strip().lower() == "true"

    def set_boolean(self, key: str, value: bool) -> Configuration:
        return self.set_string(key, "true" if value else "false")

    def get_float(self, key: str, default_value: float) -> float:
        value = self._data.get(key)
        return default_value if value is None else float(value)

    def set_float(self, key: str, value: float) -> Configuration:
        return self.set_string(key, str(float(value)))

    def get_bytearray(self, key: str, default_value: bytearray) -> bytearray:
        value = self._data.get(key)
        return default_value if value is None else bytearray.fromhex(value)

    def set_bytearray(self, key: str, value: bytearray) -> Configuration:
        return self.set_string(key, bytes(value).hex())

    def key_set(self) -> set[str]:
        return set(self._data)

    def contains_key(self, key: str) -> bool:
        return key in self._data

    def remove_config(self, key: str) -> bool:
        return self._data.pop(key, None) is not None

    def add_all(self, other: Configuration, prefix: str | None = None) -> Configuration:
        for key, value in other._data.items():
            self._data[(prefix or "") + key] = value
        return self

    def add_all_to_dict(self, target: dict[str, Any]) -> None:
        target.update(self._data)

    def to_dict(self) -> dict[str, str]:
        return dict(self._data)

    @classmethod
    def from_dict(cls, entries: Iterable[tuple[str, Any]] | dict[str, Any]) -> Configuration:
        config = cls()
        items = entries.items() if isinstance(entries, dict) else entries
        for key, value in items:
            config.set_string(key, value)
        return config

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Configuration) and self._data == other._data

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._data.items())))

    def __repr__(self) -> str:
        return f"Configuration({self._data!r})"
