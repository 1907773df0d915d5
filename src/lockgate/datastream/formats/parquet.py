"""Parquet formats at PyFlink's path (``pyflink.datastream.formats.parquet``):
not there yet."""

from lockgate.common.unsupported import unsupported
from lockgate.connectors.parquet.bulk_writers import ParquetBulkWriters

_ALTERNATIVE = "FileSource and FileSink with text lines (Parquet is not there yet)"
AvroParquetReaders = unsupported("AvroParquetReaders", _ALTERNATIVE, __name__)
AvroParquetWriters = unsupported("AvroParquetWriters", _ALTERNATIVE, __name__)
ParquetColumnarRowInputFormat = unsupported("ParquetColumnarRowInputFormat", _ALTERNATIVE, __name__)

__all__ = [
    "AvroParquetReaders",
    "AvroParquetWriters",
    "ParquetBulkWriters",
    "ParquetColumnarRowInputFormat",
]
