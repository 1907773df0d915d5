"""``Encoder`` as in PyFlink: how a row-format file sink turns a record into bytes."""

from __future__ import annotations

from typing import Any


class Encoder:
    def __init__(self, charset_name: str = "UTF-8"):
        self.charset_name = charset_name

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> Encoder:
        """Writes ``str(record)`` followed by a newline, as Flink's SimpleStringEncoder."""
        return Encoder(charset_name)

    def encode(self, value: Any) -> bytes:
        return (str(value) + "\n").encode(self.charset_name)
