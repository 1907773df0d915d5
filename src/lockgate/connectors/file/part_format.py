"""How a FileSink writes one part file: records encoded one after another (a row format,
``Encoder``), or handed to a ``BulkWriter`` that completes the file when it is finished (a
bulk format such as Parquet). Everything else, the hidden in-progress and pending files, the
buckets, the commits, is the same for both (``writer.py``)."""

from __future__ import annotations

from typing import Any, Protocol

from lockgate.common.serialization import BulkWriter, BulkWriterFactory, Encoder


class PartWriter(Protocol):
    def write(self, value: Any) -> int:
        """Write one record; the part's size in bytes so far, for size-based rolling."""

    def close(self) -> int:
        """Complete the part file and close its stream; its size in bytes."""


class PartFormat(Protocol):
    #: what wrote a record that failed, in the error
    what: str

    def open(self, stream: Any) -> PartWriter:
        """The writer of a new part file into ``stream``, which it closes."""

    def check_output(self, base_path: str, part_suffix: str) -> None:
        """Refuse, on the driver before the job, a base path the format cannot write into."""


class RowPartFormat:
    """Records as the bytes of an ``Encoder``; a part may roll at any record."""

    what = "the FileSink encoder"

    def __init__(self, encoder: Encoder):
        self.encoder = encoder

    def open(self, stream: Any) -> EncodedPart:
        return EncodedPart(stream, self.encoder)

    def check_output(self, base_path: str, part_suffix: str) -> None:
        """Any directory: encoded lines are read file by file."""


class EncodedPart:
    __slots__ = ("encode", "size", "stream")

    def __init__(self, stream: Any, encoder: Encoder):
        self.stream = stream
        self.encode = encoder.encode
        self.size = 0

    def write(self, value: Any) -> int:
        data = self.encode(value)
        self.stream.write(data)
        self.size += len(data)
        return self.size

    def close(self) -> int:
        self.stream.close()
        return self.size


class BulkPartFormat:
    """Records handed to the ``BulkWriter`` of each part; a part rolls only at the end of an
    epoch (Flink: on checkpoint), since the file is complete only when finished."""

    def __init__(self, factory: BulkWriterFactory):
        self.factory = factory
        self.what = f"the FileSink's {type(factory).__name__}"

    def open(self, stream: Any) -> BulkPart:
        return BulkPart(stream, self.factory.create(stream))

    def check_output(self, base_path: str, part_suffix: str) -> None:
        self.factory.check_output(base_path, part_suffix)


class BulkPart:
    __slots__ = ("add", "stream", "writer")

    def __init__(self, stream: Any, writer: BulkWriter):
        self.stream = stream
        self.writer = writer
        self.add = writer.add_element

    def write(self, value: Any) -> int:
        self.add(value)
        return 0  # bulk parts never roll by size

    def close(self) -> int:
        self.writer.finish()
        size = int(self.stream.tell())
        self.stream.close()
        return size
