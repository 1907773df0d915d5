"""Parquet formats at PyFlink's path (``pyflink.datastream.formats.parquet``):
``ParquetColumnarRowInputFormat`` reads Parquet files with ``FileSource`` (see
docs/connectors/file-formats.md), ``ParquetBulkWriters`` writes them with ``FileSink``
(docs/connectors/parquet-sink.md)."""

from __future__ import annotations

from typing import Any

from lockgate.common.configuration import Configuration
from lockgate.common.typeinfo import RowTypeInfo
from lockgate.common.unsupported import unsupported
from lockgate.connectors.file.parquet_format import ParquetFormat
from lockgate.connectors.parquet.bulk_writers import ParquetBulkWriters
from lockgate.datastream.connectors.file_system import BulkFormat

_ALTERNATIVE = (
    "ParquetColumnarRowInputFormat and ParquetBulkWriters (Avro records are not there yet)"
)
AvroParquetReaders = unsupported("AvroParquetReaders", _ALTERNATIVE, __name__)
AvroParquetWriters = unsupported("AvroParquetWriters", _ALTERNATIVE, __name__)


class ParquetColumnarRowInputFormat(BulkFormat):
    """Reads the columns of ``row_type`` (a ``Types.ROW_NAMED``; PyFlink takes the Table
    API's ``DataTypes.ROW``) from Parquet files, as ``Row``s::

        row_type = Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.STRING()])
        source = FileSource.for_bulk_file_format(
            ParquetColumnarRowInputFormat(row_type), "/data/table"
        ).build()

    Columns are found by name (in any case when ``is_case_sensitive`` is False) and may be
    narrower than declared (an int32 column read as ``Types.LONG()``). ``batch_size`` is
    the rows pyarrow decodes at a time; ``is_utc_timestamp`` reads a column of UTC
    instants into a ``Types.SQL_TIMESTAMP()`` field as its UTC wall clock (else the local
    zone's, as Flink does). ``hadoop_config`` has nothing to configure: files are opened
    through fsspec by their URL, so a non-empty one is refused.
    """

    def __init__(
        self,
        row_type: RowTypeInfo,
        hadoop_config: Configuration | None = None,
        batch_size: int = 2048,
        is_utc_timestamp: bool = False,
        is_case_sensitive: bool = True,
    ):
        settings: Any = {} if hadoop_config is None else hadoop_config.to_dict()
        if settings:
            raise ValueError(
                "ParquetColumnarRowInputFormat: lockgate opens files through fsspec by their "
                f"URL and takes no Hadoop configuration; got {', '.join(sorted(settings))}"
            )
        super().__init__(ParquetFormat(row_type, batch_size, is_utc_timestamp, is_case_sensitive))


__all__ = [
    "AvroParquetReaders",
    "AvroParquetWriters",
    "ParquetBulkWriters",
    "ParquetColumnarRowInputFormat",
]
