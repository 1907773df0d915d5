"""ORC formats at PyFlink's path (``pyflink.datastream.formats.orc``):
not there yet."""

from lockgate.common.unsupported import unsupported

_ALTERNATIVE = "FileSink.for_row_format with an Encoder (ORC is not there yet)"
OrcBulkWriters = unsupported("OrcBulkWriters", _ALTERNATIVE, __name__)

__all__ = [
    "OrcBulkWriters",
]
