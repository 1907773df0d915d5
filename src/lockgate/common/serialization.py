"""How records become bytes and back, with PyFlink's names: ``Encoder`` for row-format file
sinks, ``SerializationSchema`` and ``DeserializationSchema`` for connectors that move bytes
(Kafka). A schema is a plain Python object that a Spark task calls; write your own by
subclassing and overriding ``serialize`` or ``deserialize``."""

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


class SerializationSchema:
    """Turns a record into the bytes a connector writes (Flink's SerializationSchema)."""

    def open(self) -> None:
        """Called once in each task before the first ``serialize``."""

    def serialize(self, value: Any) -> bytes:
        raise NotImplementedError(f"{type(self).__name__} must override serialize(value)")


class DeserializationSchema:
    """Turns the bytes a connector read into a record (Flink's DeserializationSchema). A
    ``deserialize`` that returns None drops the message, as in Flink."""

    def open(self) -> None:
        """Called once in each task before the first ``deserialize``."""

    def deserialize(self, message: bytes | None) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must override deserialize(message)")


class SimpleStringSchema(SerializationSchema, DeserializationSchema):
    """Strings as bytes in ``charset`` (UTF-8 by default), both ways. A message without a
    value (a Kafka tombstone) is dropped."""

    def __init__(self, charset: str = "UTF-8"):
        "".encode(charset)  # an unknown charset fails here, not in a task
        self.charset = charset

    def serialize(self, value: Any) -> bytes:
        if not isinstance(value, str):
            raise TypeError(
                f"SimpleStringSchema serializes strings, not {type(value).__name__} "
                f"{value!r:.80} (map the stream to str first)"
            )
        return value.encode(self.charset)

    def deserialize(self, message: bytes | None) -> str | None:
        return None if message is None else message.decode(self.charset)


class ByteArraySchema(SerializationSchema, DeserializationSchema):
    """Bytes as they are, both ways."""

    def serialize(self, value: Any) -> bytes:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"ByteArraySchema serializes bytes, not {type(value).__name__}")
        return bytes(value)

    def deserialize(self, message: bytes | None) -> bytes | None:
        return message


_SCHEMAS = "FileSource with a StreamFormat to read, FileSink with an Encoder to write"
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
