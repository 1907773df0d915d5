"""Reading CSV files (``CsvReaderFormat``): records of a CSV schema's columns as ``Row``s.

A split is a whole file and a position the byte offset of a record's start; a record may
span lines inside quotes, so the reader counts bytes per record, not per line. Python's
``csv`` parser reads a split's range as one stream of lines (it pulls exactly the lines of
each record, so the offset after a record is known), and each column's text is converted
by a function built once per schema. Lines end as in Java ("\\n", "\\r\\n", a lone "\\r").

What a field's text becomes, as Flink's CSV format (Jackson's CSV schema) reads it: the
schema's null literal is null in any column; an empty field is null in a number or boolean
column, ``""`` in a string column and ``[]`` in an array column; numbers may have spaces
around them; booleans are ``true``/``false`` in any case. A record with another number of
fields than the schema's columns, or a field that is not of its column's type, fails the
read naming the file, the line and its text: Flink's reader fails too, on the first such
record.
"""

from __future__ import annotations

import codecs
import csv
import decimal
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from fsspec.core import url_to_fs

from lockgate.common.type_conversion import INTEGRAL_RANGES, RecordTypeError, record_converter
from lockgate.common.typeinfo import BasicType, BasicTypeInfo, TypeInformation, Types
from lockgate.common.types import Row, RowKind, _row
from lockgate.connectors.file.format import FileFormat
from lockgate.connectors.file.reader import line_number, open_at
from lockgate.core.source import SourceError, SplitProgress

_INTEGRAL = {BasicType.BYTE, BasicType.SHORT, BasicType.INT, BasicType.LONG, BasicType.BIG_INT}
_PARSERS: dict[BasicType, Callable[[str], Any]] = {
    **dict.fromkeys(_INTEGRAL, int),
    BasicType.FLOAT: float,
    BasicType.DOUBLE: float,
    BasicType.BIG_DEC: decimal.Decimal,
}
_BOOLEANS = {"true": True, "false": False}
_JACKSON_ESCAPES = {"0": "\0", "n": "\n", "r": "\r", "t": "\t"}
# what a field's text may fail with in its converter
_FIELD_ERRORS = (ValueError, ArithmeticError, RecordTypeError)
# how much of a bad record an error shows
_PREVIEW = 200


def is_number_type(type_info: Any) -> bool:
    return isinstance(type_info, BasicTypeInfo) and type_info._basic_type in _PARSERS


def is_element_type(type_info: Any) -> bool:
    """Element types of an array column: numbers, strings, booleans."""
    return is_number_type(type_info) or type_info in (Types.STRING(), Types.BOOLEAN())


@dataclass(frozen=True)
class CsvColumn:
    """A column of a CSV schema: its name, the type of its values (``Types.LIST`` of the
    elements for an array column) and, for an array column, its own element separator
    ("" takes the schema's)."""

    name: str
    type_info: TypeInformation
    array_separator: str | None = None


@dataclass(frozen=True)
class CsvOptions:
    """How a CSV file is written: Jackson's ``CsvSchema`` settings, with its defaults."""

    column_separator: str = ","
    quote_char: str | None = '"'
    escape_char: str | None = None
    array_element_separator: str = ";"
    null_value: str | None = None
    allow_comments: bool = False
    use_header: bool = False
    strict_headers: bool = False
    skip_first_data_row: bool = False

    def dialect(self) -> dict[str, Any]:
        """The arguments of ``csv.reader`` that read such a file."""
        return {
            "delimiter": self.column_separator,
            "quotechar": self.quote_char,
            "quoting": csv.QUOTE_MINIMAL if self.quote_char else csv.QUOTE_NONE,
            "escapechar": self.escape_char,
            "doublequote": self.quote_char is not None,
            "strict": True,
        }


class CsvFormat(FileFormat):
    name = "CsvReaderFormat"

    def __init__(self, columns: tuple[CsvColumn, ...], options: CsvOptions):
        self.columns = columns
        self.options = options
        self.names = tuple(column.name for column in columns)
        self.produced_type = Types.ROW_NAMED(list(self.names), [c.type_info for c in columns])
        null = options.null_value
        self._converters = [_nullable(_converter(c, options), null) for c in columns]

    def read(
        self, split: str, start: int, max_records: int, progress: dict[str, SplitProgress]
    ) -> Iterator[Row]:
        path = split
        with open_at(path, start) as handle:
            at_file_start = start == 0
            if at_file_start and handle.read(len(codecs.BOM_UTF8)) == codecs.BOM_UTF8:
                start = len(codecs.BOM_UTF8)  # a byte order mark: skipped, as Jackson does
            handle.seek(start)
            cursor = _Cursor(handle, start, self.options.allow_comments)
            lines = cursor.lines()
            if self.options.escape_char is not None:
                lines = _jackson_escapes(lines, self.options.escape_char)
            reader = csv.reader(lines, **self.options.dialect())
            if at_file_start:
                self._skip_header(path, reader, cursor)
            count = 0
            names, converters, arity = self.names, self._converters, len(self.columns)
            insert = RowKind.INSERT
            while count < max_records:
                fields = self._next(path, reader, cursor)
                if fields is None:
                    break
                if len(fields) != arity:
                    raise self._error(
                        path,
                        cursor,
                        f"{len(fields)} fields where the schema has {arity} columns "
                        f"({', '.join(names)})",
                    )
                try:
                    values = [
                        convert(text) for convert, text in zip(converters, fields, strict=True)
                    ]
                except _FIELD_ERRORS:
                    raise self._field_error(path, cursor, fields) from None
                yield _row(values, names, insert)
                count += 1
            handle.seek(cursor.offset)
            finished = count < max_records or handle.read(1) == b""
        progress[path] = SplitProgress(cursor.offset, finished)

    def _next(self, path: str, reader: Iterator[list[str]], cursor: _Cursor) -> list[str] | None:
        """The next record's fields (blank lines are none), or None at the file's end."""
        while True:
            cursor.at_record_start = True
            try:
                fields = next(reader)
            except StopIteration:
                return None
            except csv.Error as exc:
                raise self._error(path, cursor, f"not CSV ({exc})") from None
            except UnicodeDecodeError as exc:
                raise self._error(path, cursor, f"not UTF-8 ({exc.reason})") from None
            if fields:
                return fields

    def _skip_header(self, path: str, reader: Iterator[list[str]], cursor: _Cursor) -> None:
        """At the file's start: the header line (checked against the columns with strict
        headers) and the first data row, as the schema says."""
        options = self.options
        if options.use_header:
            header = self._next(path, reader, cursor)
            if options.strict_headers and header is not None and tuple(header) != self.names:
                raise self._error(
                    path,
                    cursor,
                    f"the header names the columns {', '.join(header)}; the schema's are "
                    f"{', '.join(self.names)} (strict headers)",
                )
        if options.skip_first_data_row:
            self._next(path, reader, cursor)

    def _field_error(self, path: str, cursor: _Cursor, fields: list[str]) -> SourceError:
        for column, convert, text in zip(self.columns, self._converters, fields, strict=True):
            try:
                convert(text)
            except _FIELD_ERRORS as exc:
                return self._error(
                    path,
                    cursor,
                    f"column '{column.name}' ({column.type_info!r}) cannot hold {text!r}: {exc}",
                )
        raise AssertionError("a field failed to convert, then did not")

    def _error(self, path: str, cursor: _Cursor, problem: str) -> SourceError:
        """A bad record, named by its file, the line it starts on and its text."""
        line = line_number(path, cursor.record_start)
        text = cursor.text(path)
        return SourceError(f"CsvReaderFormat cannot read {path}, line {line}: {problem}: {text}")


class _Cursor:
    """The lines of a file from a byte offset, for ``csv.reader``, counting the bytes it has
    handed out: after a record, ``offset`` is where the next one starts. Comment lines (with
    ``allow_comments``) are skipped where a record would start."""

    def __init__(self, handle: BinaryIO, offset: int, allow_comments: bool):
        self.handle = handle
        self.offset = offset
        self.record_start = offset
        self.at_record_start = True
        self.allow_comments = allow_comments

    def lines(self) -> Iterator[str]:
        for raw in self.handle:
            for line in _line_pieces(raw) if b"\r" in raw else (raw,):
                if self.at_record_start:
                    if self.allow_comments and line.startswith(b"#"):
                        self.offset += len(line)
                        continue
                    self.record_start = self.offset
                    self.at_record_start = False
                self.offset += len(line)
                yield line.decode("utf-8")

    def text(self, path: str) -> str:
        """The current record's text (as far as read), shortened for an error message."""
        fs, local = url_to_fs(path)
        with fs.open(local, "rb") as handle:
            handle.seek(self.record_start)
            raw = handle.read(min(self.offset - self.record_start, _PREVIEW + 1))
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        return repr(text[:_PREVIEW] + "..." if len(text) > _PREVIEW else text)


def _line_pieces(raw: bytes) -> Iterator[bytes]:
    """A chunk that ends at "\\n" (or EOF) cut after each line end, lone "\\r"s included."""
    start = 0
    while start < len(raw):
        cr = raw.find(b"\r", start)
        if cr < 0:
            yield raw[start:]
            return
        end = cr + 2 if raw[cr + 1 : cr + 2] == b"\n" else cr + 1
        yield raw[start:end]
        start = end


def _jackson_escapes(lines: Iterator[str], escape: str) -> Iterator[str]:
    """Lines whose escape sequences ``0``, ``n``, ``r`` and ``t`` become the escaped control
    character, which Python's parser then takes as it is: Jackson's CSV reader unescapes
    these four to NUL, line feed, carriage return and tab; any other escaped character
    (the separator, the quote, the escape character itself) stands for itself in both."""
    pattern = re.compile(re.escape(escape) + "(.)", re.DOTALL)

    def unescape(match: re.Match[str]) -> str:
        char = match.group(1)
        return escape + _JACKSON_ESCAPES.get(char, char)

    for line in lines:
        yield pattern.sub(unescape, line) if escape in line else line


def _nullable(convert: Callable[[str], Any], null_value: str | None) -> Callable[[str], Any]:
    if null_value is None:
        return convert

    def nullable(text: str) -> Any:
        return None if text == null_value else convert(text)

    return nullable


def _converter(column: CsvColumn, options: CsvOptions) -> Callable[[str], Any]:
    if column.array_separator is None:
        return _value_converter(column.type_info)
    separator = column.array_separator or options.array_element_separator
    element = _value_converter(column.type_info.elem_type)  # type: ignore[attr-defined]

    def array(text: str) -> list[Any]:
        return [element(item) for item in text.split(separator)] if text else []

    return array


def _value_converter(type_info: TypeInformation) -> Callable[[str], Any]:
    if type_info == Types.STRING():
        return str
    if type_info == Types.BOOLEAN():

        def boolean(text: str) -> bool | None:
            if not text:
                return None
            value = _BOOLEANS.get(text.strip().lower())
            if value is None:
                raise ValueError("not true or false")
            return value

        return boolean
    assert isinstance(type_info, BasicTypeInfo)
    basic = type_info._basic_type
    if basic is BasicType.DOUBLE:
        return _double
    if basic in INTEGRAL_RANGES:
        low, high = INTEGRAL_RANGES[basic]

        def integral(text: str) -> int | None:
            if not text:
                return None
            value = int(text)
            if not low <= value <= high:
                raise ValueError(f"out of range {low}..{high}")
            return value

        return integral
    parse = _PARSERS[basic]
    check = record_converter(type_info)
    assert check is not None

    def number(text: str) -> Any:
        return check(parse(text)) if text else None

    return number


def _double(text: str) -> float | None:
    return float(text) if text else None
