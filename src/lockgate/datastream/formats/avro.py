"""Avro formats at PyFlink's path (``pyflink.datastream.formats.avro``):
not there yet."""

from lockgate.common.unsupported import unsupported

_ALTERNATIVE = (
    "StreamFormat.text_line_format() to read and an Encoder to write (Avro is not there yet)"
)
AvroSchema = unsupported("AvroSchema", _ALTERNATIVE, __name__)
GenericRecordAvroTypeInfo = unsupported("GenericRecordAvroTypeInfo", _ALTERNATIVE, __name__)
AvroInputFormat = unsupported("AvroInputFormat", _ALTERNATIVE, __name__)
AvroBulkWriters = unsupported("AvroBulkWriters", _ALTERNATIVE, __name__)
AvroRowDeserializationSchema = unsupported("AvroRowDeserializationSchema", _ALTERNATIVE, __name__)
AvroRowSerializationSchema = unsupported("AvroRowSerializationSchema", _ALTERNATIVE, __name__)

__all__ = [
    "AvroBulkWriters",
    "AvroInputFormat",
    "AvroRowDeserializationSchema",
    "AvroRowSerializationSchema",
    "AvroSchema",
    "GenericRecordAvroTypeInfo",
]
