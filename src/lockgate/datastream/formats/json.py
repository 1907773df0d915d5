"""JSON formats at PyFlink's path (``pyflink.datastream.formats.json``):
not there yet."""

from lockgate.common.unsupported import unsupported

_ALTERNATIVE = (
    "StreamFormat.text_line_format() and a map with json.loads to read, "
    "an Encoder with json.dumps to write"
)
JsonRowDeserializationSchema = unsupported("JsonRowDeserializationSchema", _ALTERNATIVE, __name__)
JsonRowSerializationSchema = unsupported("JsonRowSerializationSchema", _ALTERNATIVE, __name__)

__all__ = [
    "JsonRowDeserializationSchema",
    "JsonRowSerializationSchema",
]
