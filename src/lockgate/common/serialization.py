"""How records become bytes and back, with PyFlink's names: ``Encoder`` for row-format file
sinks, ``BulkWriterFactory`` for bulk-format ones (Parquet), ``SerializationSchema`` and
``DeserializationSchema`` for connectors that move bytes (Kafka). A schema is a plain Python
object that a Spark task calls; write your own by subclassing and overriding ``serialize`` or
``deserialize``."""

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


class BulkWriter:
    """Writes the records of one part file of a bulk-format ``FileSink`` (Flink's
    ``BulkWriter``): a file of a format that is complete only when finished (Parquet writes
    its footer last), so a part file rolls only when a checkpoint is taken."""

    def add_element(self, element: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must override add_element(element)")

    def finish(self) -> None:
        """Write what is buffered and complete the file; the stream is closed by the sink."""
        raise NotImplementedError(f"{type(self).__name__} must override finish()")


class BulkWriterFactory:
    """Creates the ``BulkWriter`` of each part file of ``FileSink.for_bulk_format`` (Flink's
    ``BulkWriter.Factory``); ``ParquetBulkWriters.for_row_type`` gives one. A factory is
    shipped to the tasks that write the part files."""

    #: the part file suffix when the sink is given no ``OutputFileConfig``
    default_part_suffix = ""

    def create(self, stream: Any) -> BulkWriter:
        """The writer of one part file into ``stream`` (a binary file object)."""
        raise NotImplementedError(f"{type(self).__name__} must override create(stream)")

    def check_output(self, base_path: str, part_suffix: str) -> None:
        """Refuse, on the driver before the job starts, a base path whose files this format
        cannot write next to (Parquet: files of another schema)."""


_SCHEMAS = "FileSource with a StreamFormat to read, FileSink with an Encoder to write"
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
