"""CsvReaderFormat: CSV records across epochs at byte offsets, column types, errors naming
file and line, and the schema builder's settings."""

from __future__ import annotations

import decimal
import re

import pytest
from file_source_epochs import flat, read_epochs

from lockgate.common import Row, Types
from lockgate.common.unsupported import NotSupportedYetError
from lockgate.core.source import SourceError, SplitAssignment
from lockgate.datastream.connectors.file_system import FileSource
from lockgate.datastream.formats.csv import CsvReaderFormat, CsvSchema


def csv_source(schema: CsvSchema, *paths) -> FileSource:
    return FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(schema), *(str(p) for p in paths)
    ).build()


def people() -> CsvSchema:
    return (
        CsvSchema.builder()
        .add_number_column("id", number_type=Types.INT())
        .add_string_column("name")
        .add_array_column("tags")
        .add_boolean_column("ok")
        .build()
    )


# a header, a comment, a quoted field over two lines, "" in quotes, CRLF, a lone CR, blank
# lines and no line end after the last record
PEOPLE = (
    'id,name,tags,ok\n# a comment\n1,"two\nlines",a;b,true\n2,"say ""hi""",,\r\n\n'
    "3,plain,c,FALSE\r4,last,d;e;f,false"
)
PEOPLE_ROWS = [
    Row(id=1, name="two\nlines", tags=["a", "b"], ok=True),
    Row(id=2, name='say "hi"', tags=[], ok=None),
    Row(id=3, name="plain", tags=["c"], ok=False),
    Row(id=4, name="last", tags=["d", "e", "f"], ok=False),
]


def people_with_header() -> CsvSchema:
    return (
        CsvSchema.builder()
        .add_columns_from(people())
        .set_use_header()
        .set_strict_headers()
        .set_allow_comments()
        .build()
    )


@pytest.mark.parametrize("max_records", [1, 2, 3, 100])
def test_records_come_once_and_in_order_across_epochs(tmp_path, max_records):
    path = tmp_path / "people.csv"
    path.write_bytes(PEOPLE.encode())
    epochs = read_epochs(csv_source(people_with_header(), path), 1, max_records)
    assert flat(epochs) == PEOPLE_ROWS
    assert all(len(epoch) <= max_records for epoch in epochs)
    assert flat(epochs)[0].as_dict() == {
        "id": 1,
        "name": "two\nlines",
        "tags": ["a", "b"],
        "ok": True,
    }


def test_files_of_a_directory_are_read_in_parallel(tmp_path):
    for n in range(3):
        lines = "".join(f"{n * 10 + i},n{i},x,true\n" for i in range(5))
        (tmp_path / f"part-{n}.csv").write_text(lines)
    (tmp_path / "_hidden.csv").write_text("not,a,csv,line,at all\n")
    epochs = read_epochs(csv_source(people(), tmp_path), 2, 2)
    ids = [row.id for row in flat(epochs)]
    assert sorted(ids) == [n * 10 + i for n in range(3) for i in range(5)]
    for n in range(3):  # in file order within a file
        assert [i for i in ids if i // 10 == n] == [n * 10 + i for i in range(5)]


def test_column_types_nulls_and_separators(tmp_path):
    schema = (
        CsvSchema.builder()
        .add_number_column("i", Types.INT())
        .add_number_column("big")  # LONG by default
        .add_number_column("d", Types.DOUBLE())
        .add_number_column("dec", Types.BIG_DEC())
        .add_array_column("ns", separator="/", element_type=Types.INT())
        .add_array_column("words")
        .add_string_column("s")
        .set_column_separator("|")
        .set_array_element_separator(",")  # for "words", whose own separator is removed
        .remove_array_element_separator(5)
        .set_null_value("NULL")
        .set_escape_char("\\")
        .set_quote_char("'")
        .set_skip_first_data_row()
        .build()
    )
    assert schema.get_type_info() == Types.ROW_NAMED(
        ["i", "big", "d", "dec", "ns", "words", "s"],
        [
            Types.INT(),
            Types.LONG(),
            Types.DOUBLE(),
            Types.BIG_DEC(),
            Types.LIST(Types.INT()),
            Types.LIST(Types.STRING()),
            Types.STRING(),
        ],
    )
    path = tmp_path / "typed.csv"
    path.write_text(
        "skipped|first|row|x|x|x|x\n"
        " 7 |9000000000|1.5e3|12.50|1/2/3|a,b|'quoted | bar'\n"
        "NULL||||||\n"
        "-1|0|-0.5|0|4||esc\\|aped\n"
    )
    rows = flat(read_epochs(csv_source(schema, path), 1, 2))
    assert rows[0] == Row(
        i=7, big=9000000000, d=1500.0, dec=decimal.Decimal("12.50"), ns=[1, 2, 3],
        words=["a", "b"], s="quoted | bar",
    )  # fmt: skip
    assert rows[1] == Row(i=None, big=None, d=None, dec=None, ns=[], words=[], s="")
    assert rows[2].s == "esc|aped" and rows[2].ns == [4]


def test_escape_sequences_are_jacksons(tmp_path):
    """``\\n``, ``\\r``, ``\\t`` and ``\\0`` are control characters, as in Jackson's
    reader; another escaped character is itself, an escaped escape character too."""
    schema = (
        CsvSchema.builder()
        .add_string_column("a")
        .add_string_column("b")
        .set_escape_char("\\")
        .build()
    )
    path = tmp_path / "escapes.csv"
    path.write_text('x\\ny\\tz\\r\\0,\\,\\\\n\n"q\\nq",\\"\n')
    assert read_all(schema, path) == [
        Row(a="x\ny\tz\r\0", b=",\\n"),
        Row(a="q\nq", b='"'),
    ]


def test_quotes_can_be_disabled(tmp_path):
    schema = CsvSchema.builder().add_string_column("a").add_string_column("b")
    path = tmp_path / "q.csv"
    path.write_text('"x",y\n')
    assert flat(read_epochs(csv_source(schema.build(), path), 1, 10)) == [Row(a="x", b="y")]
    no_quotes = schema.disable_quote_char().build()
    assert flat(read_epochs(csv_source(no_quotes, path), 1, 10)) == [Row(a='"x"', b="y")]


def read_all(schema: CsvSchema, path) -> list:
    return flat(read_epochs(csv_source(schema, path), 1, 100))


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("3,three,x", "3 fields where the schema has 4 columns (id, name, tags, ok)"),
        ("3,three,x,true,extra", "5 fields where the schema has 4 columns"),
        ("abc,three,x,true", "column 'id' (Integer) cannot hold 'abc'"),
        ("3000000000,three,x,true", "column 'id' (Integer) cannot hold '3000000000'"),
        ("3,three,x,maybe", "column 'ok' (Boolean) cannot hold 'maybe': not true or false"),
        ('3,"unclosed,x,true', "not CSV (unexpected end of data)"),
        ('3,"a"b,x,true', "not CSV"),
    ],
)
def test_a_bad_record_names_the_file_the_line_and_its_text(tmp_path, line, problem):
    path = tmp_path / "bad.csv"
    path.write_text(f'1,one,x,true\n2,"two\nlines",x,true\r\n\n{line}\n4,four,x,true\n')
    with pytest.raises(SourceError) as failure:
        read_all(people(), path)
    message = str(failure.value)
    assert message.startswith(f"CsvReaderFormat cannot read {path}, line 5: ")
    assert problem in message
    assert repr(line)[:-1] in message  # the record's text


def test_an_error_in_a_later_epoch_counts_lines_from_the_files_start(tmp_path):
    path = tmp_path / "late.csv"
    path.write_text("".join(f"{i},n,x,true\n" for i in range(9)) + "x,n,x,true\n")
    with pytest.raises(SourceError, match=re.escape(f"{path}, line 10: column 'id'")):
        flat(read_epochs(csv_source(people(), path), 1, 4))


def test_a_header_that_does_not_name_the_columns_fails_with_strict_headers(tmp_path):
    path = tmp_path / "header.csv"
    path.write_text("id,name,labels,ok\n1,a,b,true\n")
    with pytest.raises(SourceError, match="line 1: the header names the columns id, name, label"):
        read_all(people_with_header(), path)
    lenient = CsvSchema.builder().add_columns_from(people()).set_use_header().build()
    assert read_all(lenient, path) == [Row(id=1, name="a", tags=["b"], ok=True)]


def test_the_header_and_first_row_are_skipped_only_at_a_files_start(tmp_path):
    path = tmp_path / "skip.csv"
    path.write_text(
        "id,name,tags,ok\n0,skipped,x,true\n" + "".join(f"{i},n,x,true\n" for i in (1, 2, 3))
    )
    schema = CsvSchema.builder().add_columns_from(people()).set_use_header()
    epochs = read_epochs(csv_source(schema.set_skip_first_data_row().build(), path), 1, 1)
    assert [row.id for row in flat(epochs)] == [1, 2, 3]


def test_comments_are_lines_only_where_a_record_starts(tmp_path):
    path = tmp_path / "comments.csv"
    path.write_text('# first\n1,"a\n# not a comment",x,true\n#2,b,x,true\n3,c,x,true\n')
    schema = CsvSchema.builder().add_columns_from(people())
    rows = read_all(schema.set_allow_comments().build(), path)
    assert [(row.id, row.name) for row in rows] == [(1, "a\n# not a comment"), (3, "c")]
    with pytest.raises(SourceError, match="line 1: 1 fields"):
        read_all(schema.set_allow_comments(False).build(), path)


def test_the_builder_refuses_what_cannot_be_read():
    builder = CsvSchema.builder
    with pytest.raises(ValueError, match="at least one column"):
        builder().build()
    with pytest.raises(ValueError, match="names the column"):
        builder().add_string_column("a").add_number_column("a").build()
    with pytest.raises(TypeError, match="lockgate has no DataTypes"):
        builder().add_number_column("a", Types.STRING())
    with pytest.raises(TypeError, match="elements of type"):
        builder().add_array_column("a", element_type=Types.LIST(Types.INT()))
    with pytest.raises(ValueError, match="Column separator must be a single char"):
        builder().set_column_separator("||")
    with pytest.raises(ValueError, match="must differ"):
        builder().add_string_column("a").set_quote_char(",").build()
    with pytest.raises(ValueError, match="call set_use_header"):
        builder().add_string_column("a").set_strict_headers().build()
    with pytest.raises(ValueError, match="no element separator"):
        (
            builder()
            .add_array_column("a")
            .remove_array_element_separator(0)
            .disable_array_element_separator()
            .build()
        )
    with pytest.raises(ValueError, match="not an array column"):
        builder().add_string_column("a").remove_array_element_separator(0)
    with pytest.raises(ValueError, match="Line separator"):
        builder().set_line_separator(";")
    with pytest.raises(NotSupportedYetError, match="set_any_property_name"):
        builder().set_any_property_name("rest")


def test_schema_columns_can_be_copied_and_cleared():
    schema = people()
    assert len(schema) == schema.size() == 4
    builder = CsvSchema.builder().add_string_column("x").add_columns_from(schema)
    assert builder.size() == 5
    assert builder.build().get_type_info().get_field_names() == ["x", "id", "name", "tags", "ok"]
    assert len(builder.clear_columns()) == 0


def test_a_stream_read_without_type_info_declares_the_schemas_row_type(tmp_path):
    """As PyFlink's: the format's row type is the stream's, and its rows are not converted
    again in the source (Source.produced_type)."""
    from lockgate.common import WatermarkStrategy
    from lockgate.datastream import StreamExecutionEnvironment

    schema = CsvSchema.builder().add_string_column("name").add_number_column("n").build()
    (tmp_path / "in.csv").write_text("a,1\n")
    source = FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(schema), str(tmp_path)
    ).build()
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "csv")
    assert stream.get_type() == schema.get_type_info() == source.produced_type
    typed = env.from_source(source, WatermarkStrategy.no_watermarks(), "csv", Types.STRING())
    assert typed.get_type() == Types.STRING()


def test_a_byte_order_mark_at_the_files_start_is_skipped(tmp_path):
    """As Jackson's CSV reader does; with a header, the BOM would otherwise be part of the
    first column's name."""
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbfid,name,tags,ok\n1,a,b,true\n")
    assert read_all(people_with_header(), path) == [Row(id=1, name="a", tags=["b"], ok=True)]
    path.write_bytes(b"\xef\xbb\xbf1,a,b,true\n2,b,c,false\n")
    epochs = read_epochs(csv_source(people(), path), 1, 1)
    assert [row.id for row in flat(epochs)] == [1, 2]


def test_a_file_shorter_than_the_position_reached_fails_naming_it(tmp_path):
    """Files must not change once visible; one replaced by a shorter one would otherwise end
    silently, as if read to its end."""
    path = tmp_path / "people.csv"
    path.write_text("1,a,b,true\n2,b,c,false\n")
    source = csv_source(people(), path)
    path.write_text("1,a,b,true\n")
    with pytest.raises(SourceError, match=r"people\.csv changed since it was listed: it has 11 "):
        list(source.read(SplitAssignment(str(path), 22, 10, False), None, {}))
