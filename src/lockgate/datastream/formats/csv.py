"""CSV formats at PyFlink's path (``pyflink.datastream.formats.csv``):
not there yet."""

from lockgate.common.unsupported import unsupported

_ALTERNATIVE = (
    "StreamFormat.text_line_format() and a map that splits the line to read, an Encoder to write"
)
CsvSchema = unsupported("CsvSchema", _ALTERNATIVE, __name__)
CsvSchemaBuilder = unsupported("CsvSchemaBuilder", _ALTERNATIVE, __name__)
CsvReaderFormat = unsupported("CsvReaderFormat", _ALTERNATIVE, __name__)
CsvBulkWriters = unsupported("CsvBulkWriters", _ALTERNATIVE, __name__)
CsvRowDeserializationSchema = unsupported("CsvRowDeserializationSchema", _ALTERNATIVE, __name__)
CsvRowSerializationSchema = unsupported("CsvRowSerializationSchema", _ALTERNATIVE, __name__)

__all__ = [
    "CsvBulkWriters",
    "CsvReaderFormat",
    "CsvRowDeserializationSchema",
    "CsvRowSerializationSchema",
    "CsvSchema",
    "CsvSchemaBuilder",
]
