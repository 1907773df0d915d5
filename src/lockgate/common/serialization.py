"""``Encoder`` as in PyFlink: how a row-format file sink turns a record into bytes."""

from __future__ import annotations

from typing import Any

from lockgate.common.unsupported import unsupported


class Encoder:
    def __init__(self, charset_name: str = "UTF-8"):
        self.charset_name = charset_name

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> Encoder:
        """Writes ``str(record)`` followed by a newline, as Flink's SimpleStringEncoder."""
        return Encoder(charset_name)

    def encode(self, value: Any) -> bytes:
        return (str(value) + "\n").encode(self.charset_name)


_SCHEMAS = "FileSource with a StreamFormat to read, FileSink with an Encoder to write"
SerializationSchema = unsupported("SerializationSchema", _SCHEMAS, __name__)
DeserializationSchema = unsupported("DeserializationSchema", _SCHEMAS, __name__)
SimpleStringSchema = unsupported(
    "SimpleStringSchema",
    "StreamFormat.text_line_format() to read and Encoder.simple_string_encoder() to write",
    __name__,
)
ByteArraySchema = unsupported("ByteArraySchema", _SCHEMAS, __name__)
BulkWriterFactory = unsupported(
    "BulkWriterFactory", "FileSink.for_row_format with an Encoder", __name__
)
RowFieldExtractorSchema = unsupported("RowFieldExtractorSchema", _SCHEMAS, __name__)

__all__ = [
    "BulkWriterFactory",
    "ByteArraySchema",
    "DeserializationSchema",
    "Encoder",
    "RowFieldExtractorSchema",
    "SerializationSchema",
    "SimpleStringSchema",
]
