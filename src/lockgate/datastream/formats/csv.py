"""CSV formats at PyFlink's path (``pyflink.datastream.formats.csv``): ``CsvSchema`` and
``CsvReaderFormat`` read CSV files with ``FileSource`` (see docs/connectors/file-formats.md).

PyFlink types the columns with the Table API's ``DataTypes``; lockgate has no Table API and
takes ``Types.*`` instead (``Types.INT()`` for ``DataTypes.INT()``, ``Types.LONG()`` for
``DataTypes.BIGINT()``). Writing CSV and the deserialization schemas are not there yet.
"""

from __future__ import annotations

import csv
from dataclasses import replace
from typing import Any

from lockgate.common.typeinfo import TypeInformation, Types
from lockgate.common.unsupported import not_supported, unsupported
from lockgate.connectors.file.csv_format import (
    CsvColumn,
    CsvFormat,
    CsvOptions,
    is_element_type,
    is_number_type,
)
from lockgate.datastream.connectors.file_system import StreamFormat

_LINE_SEPARATORS = ("\n", "\r", "\r\n")


class CsvSchema:
    """The columns of a CSV file and how it is written (Jackson's ``CsvSchema``)."""

    def __init__(self, columns: tuple[CsvColumn, ...], options: CsvOptions):
        self._columns = columns
        self._options = options

    @staticmethod
    def builder() -> CsvSchemaBuilder:
        return CsvSchemaBuilder()

    def get_type_info(self) -> TypeInformation:
        """The type of the records read with this schema: ``Types.ROW_NAMED`` of the columns
        in order (an array column is a ``Types.LIST`` of its elements). PyFlink keeps it as
        the Table API's row type; lockgate's records are ``Row``s of it."""
        return Types.ROW_NAMED(
            [column.name for column in self._columns],
            [column.type_info for column in self._columns],
        )

    def size(self) -> int:
        return len(self._columns)

    def __len__(self) -> int:
        return self.size()

    def __str__(self) -> str:
        columns = ", ".join(f"{c.name}: {c.type_info!r}" for c in self._columns)
        return f"CsvSchema([{columns}], {self._options})"

    def __repr__(self) -> str:
        return str(self)


class CsvSchemaBuilder:
    """Builds a ``CsvSchema``: columns in file order, and Jackson's settings with its
    defaults (``,`` between columns, ``"`` to quote, no escape character, ``;`` between
    array elements, no header)."""

    def __init__(self) -> None:
        self._columns: list[CsvColumn] = []
        self._options = CsvOptions()

    def build(self) -> CsvSchema:
        """The schema; a setting that cannot read a file (no columns, a column named twice,
        an array column without element separator, separator and quote alike) fails here."""
        names = [column.name for column in self._columns]
        if not names:
            raise ValueError("a CsvSchema needs at least one column")
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"a CsvSchema names the column(s) {', '.join(twice)} twice")
        options = self._options
        for column in self._columns:
            if column.array_separator == "" and not options.array_element_separator:
                raise ValueError(
                    f"the array column '{column.name}' has no element separator: its own was "
                    "removed and the schema's disabled (set_array_element_separator sets one)"
                )
        if options.strict_headers and not options.use_header:
            raise ValueError(
                "set_strict_headers checks the header line, which only set_use_header reads: "
                "call set_use_header() too"
            )
        special = [options.column_separator, options.quote_char, options.escape_char]
        chosen = [char for char in special if char is not None]
        if len(set(chosen)) != len(chosen) or {"\r", "\n"} & set(chosen):
            raise ValueError(
                f"the column separator {options.column_separator!r}, quote character "
                f"{options.quote_char!r} and escape character {options.escape_char!r} must "
                "differ from each other and from line ends"
            )
        try:
            csv.reader([], **options.dialect())
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a CsvSchema with {options} cannot read CSV: {exc}") from None
        return CsvSchema(tuple(self._columns), options)

    def _column(self, name: str, type_info: TypeInformation, separator: str | None = None) -> Any:
        if not isinstance(name, str) or not name:
            raise TypeError(f"a CSV column needs a name (a non-empty str), got {name!r}")
        self._columns.append(CsvColumn(name, type_info, separator))
        return self

    def add_array_column(
        self, name: str, separator: str = ";", element_type: TypeInformation | None = None
    ) -> CsvSchemaBuilder:
        """A column of elements between ``separator``s, as a ``list`` of ``element_type``'s
        values (``Types.STRING()`` by default; numbers and booleans too)."""
        element = Types.STRING() if element_type is None else element_type
        if not is_element_type(element):
            raise TypeError(
                f"the array column '{name}' has elements of type {element!r}: use Types.STRING(), "
                "Types.BOOLEAN() or a number type (Types.INT(), Types.LONG(), Types.DOUBLE(), ...)"
            )
        return self._column(name, Types.LIST(element), separator)  # type: ignore[no-any-return]

    def add_boolean_column(self, name: str) -> CsvSchemaBuilder:
        return self._column(name, Types.BOOLEAN())  # type: ignore[no-any-return]

    def add_number_column(
        self, name: str, number_type: TypeInformation | None = None
    ) -> CsvSchemaBuilder:
        """A column of numbers of ``number_type`` (``Types.LONG()`` by default, PyFlink's
        ``DataTypes.BIGINT()``): ``Types.BYTE/SHORT/INT/LONG/FLOAT/DOUBLE/BIG_INT/BIG_DEC``."""
        number = Types.LONG() if number_type is None else number_type
        if not is_number_type(number):
            raise TypeError(
                f"the number column '{name}' has type {number!r}: use Types.BYTE(), SHORT(), "
                "INT(), LONG(), FLOAT(), DOUBLE(), BIG_INT() or BIG_DEC() (lockgate has no "
                "DataTypes)"
            )
        return self._column(name, number)  # type: ignore[no-any-return]

    def add_string_column(self, name: str) -> CsvSchemaBuilder:
        return self._column(name, Types.STRING())  # type: ignore[no-any-return]

    def add_columns_from(self, schema: CsvSchema) -> CsvSchemaBuilder:
        """The columns of ``schema`` after these (not its settings)."""
        self._columns.extend(schema._columns)
        return self

    def clear_columns(self) -> CsvSchemaBuilder:
        self._columns.clear()
        return self

    def _set(self, **changes: Any) -> CsvSchemaBuilder:
        self._options = replace(self._options, **changes)
        return self

    def set_allow_comments(self, allow: bool = True) -> CsvSchemaBuilder:
        """Skip lines starting with ``#`` where a record would start."""
        return self._set(allow_comments=allow)

    def set_any_property_name(self, name: str) -> CsvSchemaBuilder:
        not_supported(
            "CsvSchemaBuilder.set_any_property_name",
            "a column per field (a record with more fields than columns fails, naming its line)",
        )

    def disable_array_element_separator(self) -> CsvSchemaBuilder:
        """No schema-wide element separator: array columns need their own."""
        return self._set(array_element_separator="")

    def remove_array_element_separator(self, index: int) -> CsvSchemaBuilder:
        """The array column at ``index`` splits at the schema-wide separator."""
        column = self._columns[index]
        if column.array_separator is None:
            raise ValueError(f"column {index} ('{column.name}') is not an array column")
        self._columns[index] = replace(column, array_separator="")
        return self

    def set_array_element_separator(self, separator: str) -> CsvSchemaBuilder:
        """The separator of array columns that have none of their own (default ``;``)."""
        return self._set(array_element_separator=separator)

    def set_column_separator(self, char: str) -> CsvSchemaBuilder:
        _check_char("Column separator", char)
        return self._set(column_separator=char)

    def disable_escape_char(self) -> CsvSchemaBuilder:
        return self._set(escape_char=None)

    def set_escape_char(self, char: str) -> CsvSchemaBuilder:
        """A character that makes the next one literal (none by default)."""
        _check_char("Escape char", char)
        return self._set(escape_char=char)

    def set_line_separator(self, separator: str) -> CsvSchemaBuilder:
        """As in Flink, a setting for writing: reading recognizes "\\n", "\\r" and "\\r\\n"
        whatever it is (so only these are accepted)."""
        if separator not in _LINE_SEPARATORS:
            raise ValueError(f"Line separator must be \\n, \\r or \\r\\n, got {separator!r}")
        return self

    def set_null_value(self, null_value: str) -> CsvSchemaBuilder:
        """The text that is null in any column (none by default: an empty field is null
        in number and boolean columns)."""
        return self._set(null_value=null_value)

    def disable_quote_char(self) -> CsvSchemaBuilder:
        return self._set(quote_char=None)

    def set_quote_char(self, char: str) -> CsvSchemaBuilder:
        _check_char("Quote char", char)
        return self._set(quote_char=char)

    def set_skip_first_data_row(self, skip: bool = True) -> CsvSchemaBuilder:
        """Skip each file's first record (after its header, with ``set_use_header``)."""
        return self._set(skip_first_data_row=skip)

    def set_strict_headers(self, strict: bool = True) -> CsvSchemaBuilder:
        """Fail a file whose header does not name the schema's columns in order."""
        return self._set(strict_headers=strict)

    def set_use_header(self, use: bool = True) -> CsvSchemaBuilder:
        """Each file starts with a header line, which is no record."""
        return self._set(use_header=use)

    def size(self) -> int:
        return len(self._columns)

    def __len__(self) -> int:
        return self.size()


def _check_char(what: str, char: str) -> None:
    if not isinstance(char, str) or len(char) != 1:
        raise ValueError(f"{what} must be a single char, got {char!r}")


class CsvReaderFormat(StreamFormat):
    """Reads CSV files as ``Row``s of a ``CsvSchema``'s columns::

    schema = (
        CsvSchema.builder()
        .add_number_column("id", number_type=Types.INT())
        .add_string_column("name")
        .set_use_header()
        .build()
    )
    source = FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(schema), "/data/people.csv"
    ).build()
    """

    @staticmethod
    def for_schema(schema: CsvSchema) -> CsvReaderFormat:
        if not isinstance(schema, CsvSchema):
            raise TypeError(f"CsvReaderFormat.for_schema needs a CsvSchema, got {schema!r}")
        return CsvReaderFormat(CsvFormat(schema._columns, schema._options))


_ALTERNATIVE = "FileSink.for_row_format with an Encoder that writes the CSV line"
CsvBulkWriters = unsupported("CsvBulkWriters", _ALTERNATIVE, __name__)
_READ_ALTERNATIVE = "CsvReaderFormat with FileSource, or a map over the records' text"
CsvRowDeserializationSchema = unsupported(
    "CsvRowDeserializationSchema", _READ_ALTERNATIVE, __name__
)
CsvRowSerializationSchema = unsupported("CsvRowSerializationSchema", _ALTERNATIVE, __name__)

__all__ = [
    "CsvBulkWriters",
    "CsvReaderFormat",
    "CsvRowDeserializationSchema",
    "CsvRowSerializationSchema",
    "CsvSchema",
    "CsvSchemaBuilder",
]
