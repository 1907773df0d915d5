"""JSON formats at PyFlink's path (``pyflink.datastream.formats.json``).

PyFlink reads JSON only as a deserialization schema of a message (Kafka's); lockgate adds
``JsonLinesReaderFormat`` to read files of one JSON object per line with ``FileSource``
(see docs/connectors/file-formats.md). The (de)serialization schemas are not there yet.
"""

from __future__ import annotations

from lockgate.common.typeinfo import TypeInformation
from lockgate.common.unsupported import unsupported
from lockgate.connectors.file.json_format import JsonLinesFormat
from lockgate.datastream.connectors.file_system import StreamFormat


class JsonLinesReaderFormat(StreamFormat):
    """Reads files of one JSON object per line (JSON lines, NDJSON) as ``Row``s of a row
    type; blank lines are skipped::

        row_type = Types.ROW_NAMED(["id", "tags"], [Types.LONG(), Types.LIST(Types.STRING())])
        source = FileSource.for_record_stream_format(
            JsonLinesReaderFormat.for_row_type(row_type), "/data/events"
        ).build()

    The options are those of PyFlink's ``JsonRowDeserializationSchema.Builder``:
    ``fail_on_missing_field`` fails a line that lacks a field of the row type (else the
    field is None); ``ignore_parse_errors`` skips a line that is no JSON object and makes a
    field of the wrong type None (else the line fails the job, naming file and line).
    """

    @staticmethod
    def for_row_type(
        row_type: TypeInformation,
        fail_on_missing_field: bool = False,
        ignore_parse_errors: bool = False,
    ) -> JsonLinesReaderFormat:
        return JsonLinesReaderFormat(
            JsonLinesFormat(row_type, fail_on_missing_field, ignore_parse_errors)  # type: ignore[arg-type]
        )


_ALTERNATIVE = (
    "JsonLinesReaderFormat with FileSource to read files; a map with json.loads or an Encoder "
    "with json.dumps for messages"
)
JsonRowDeserializationSchema = unsupported("JsonRowDeserializationSchema", _ALTERNATIVE, __name__)
JsonRowSerializationSchema = unsupported("JsonRowSerializationSchema", _ALTERNATIVE, __name__)

__all__ = [
    "JsonLinesReaderFormat",
    "JsonRowDeserializationSchema",
    "JsonRowSerializationSchema",
]
