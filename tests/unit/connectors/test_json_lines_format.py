"""JsonLinesReaderFormat: one JSON object per line as a Row of a row type, across epochs,
with errors naming file and line, and PyFlink's JSON options."""

from __future__ import annotations

import datetime
import decimal
import json

import pytest
from file_source_epochs import flat, read_epochs

from lockgate.common import Row, Types
from lockgate.common.time import Instant
from lockgate.core.source import SourceError, SplitAssignment
from lockgate.datastream.connectors.file_system import FileSource
from lockgate.datastream.formats.json import JsonLinesReaderFormat

EVENT = Types.ROW_NAMED(
    ["id", "user", "tags", "counts", "when"],
    [
        Types.LONG(),
        Types.ROW_NAMED(["name", "score"], [Types.STRING(), Types.DOUBLE()]),
        Types.LIST(Types.STRING()),
        Types.MAP(Types.STRING(), Types.INT()),
        Types.SQL_DATE(),
    ],
)


def json_source(row_type=EVENT, *paths, **options) -> FileSource:
    return FileSource.for_record_stream_format(
        JsonLinesReaderFormat.for_row_type(row_type, **options), *(str(p) for p in paths)
    ).build()


def event(i: int) -> dict:
    return {
        "id": i,
        "user": {"name": f"u{i}", "score": i / 2},
        "tags": ["a"] * (i % 3),
        "counts": {"x": i},
        "when": f"2024-05-{i % 28 + 1:02d}",
    }


def event_row(i: int) -> Row:
    return Row(
        id=i,
        user=Row(name=f"u{i}", score=i / 2),
        tags=["a"] * (i % 3),
        counts={"x": i},
        when=datetime.date(2024, 5, i % 28 + 1),
    )


@pytest.mark.parametrize("max_records", [1, 3, 100])
def test_lines_come_once_and_in_order_across_epochs(tmp_path, max_records):
    path = tmp_path / "events.jsonl"
    lines = [json.dumps(event(i)) for i in range(7)]
    lines.insert(3, "")  # blank lines hold no record
    lines.insert(5, "   ")
    path.write_bytes(("\r\n".join(lines[:4]) + "\n" + "\n".join(lines[4:])).encode())
    epochs = read_epochs(json_source(EVENT, path), 1, max_records)
    assert flat(epochs) == [event_row(i) for i in range(7)]
    assert all(len(epoch) <= max_records for epoch in epochs)


def test_values_of_every_kind(tmp_path):
    row_type = Types.ROW_NAMED(
        ["b", "f", "dec", "bytes", "ts", "t", "at", "ids", "nested"],
        [
            Types.BOOLEAN(),
            Types.FLOAT(),
            Types.BIG_DEC(),
            Types.PRIMITIVE_ARRAY(Types.BYTE()),
            Types.SQL_TIMESTAMP(),
            Types.SQL_TIME(),
            Types.INSTANT(),
            Types.MAP(Types.INT(), Types.LIST(Types.LONG())),
            Types.LIST(Types.ROW_NAMED(["k"], [Types.STRING()])),
        ],
    )
    path = tmp_path / "kinds.jsonl"
    path.write_text(
        json.dumps(
            {
                "b": True,
                "f": 0.1,
                "dec": "12.345",
                "bytes": "AAH/",
                "ts": "2024-05-01 12:30:00.250999",
                "t": "12:30:01",
                "at": "2024-05-01T00:00:01.5Z",
                "ids": {"7": [1, None, 3]},
                "nested": [{"k": "v"}, None],
                "unknown": "ignored",
            }
        )
        + "\n"
    )
    [row] = flat(read_epochs(json_source(row_type, path), 1, 10))
    assert row.b is True
    assert row.f == pytest.approx(0.1) and row.f != 0.1  # single precision, as PyFlink
    assert row.dec == decimal.Decimal("12.345")
    assert row.bytes == b"\x00\x01\xff"
    assert row.ts == datetime.datetime(2024, 5, 1, 12, 30, 0, 250000)  # milliseconds
    assert row.t == datetime.time(12, 30, 1)
    assert row.at == Instant(1714521601, 500_000_000)
    assert row.ids == {7: [1, None, 3]}
    assert row.nested == [Row(k="v"), None]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"id": 1,', "not JSON"),
        ("[1, 2]", "a JSON list, not an object"),
        ('{"id": "one"}', "field 'id' (Long) cannot hold the JSON str \"one\""),
        ('{"id": true}', "field 'id' (Long) cannot hold the JSON bool true"),
        ('{"user": {"score": "high"}}', "field 'user.score' (Double) cannot hold"),
        ('{"counts": {"x": 3000000000}}', "field 'counts{}' (Integer)"),
        ('{"when": "yesterday"}', "field 'when' (DateTypeInfo) cannot hold"),
    ],
)
def test_a_bad_line_names_the_file_the_line_and_its_text(tmp_path, line, problem):
    path = tmp_path / "bad.jsonl"
    path.write_text(f'{{"id": 1}}\r\n\n{{"id": 2}}\r{line}\n{{"id": 4}}\n')
    with pytest.raises(SourceError) as failure:
        flat(read_epochs(json_source(EVENT, path), 1, 1))
    message = str(failure.value)
    assert message.startswith(f"JsonLinesReaderFormat cannot read {path}, line 4: ")
    assert problem in message
    assert repr(line) in message


def test_missing_fields_are_none_or_fail(tmp_path):
    path = tmp_path / "missing.jsonl"
    path.write_text('{"id": 1, "user": {"name": "a"}}\n')
    [row] = flat(read_epochs(json_source(EVENT, path), 1, 10))
    assert row == Row(id=1, user=Row(name="a", score=None), tags=None, counts=None, when=None)
    with pytest.raises(SourceError, match=r"line 1: field 'user.score' is missing"):
        flat(read_epochs(json_source(EVENT, path, fail_on_missing_field=True), 1, 10))


def test_ignore_parse_errors_skips_lines_and_nulls_fields(tmp_path):
    path = tmp_path / "lenient.jsonl"
    path.write_text('{"id": 1}\nnot json\n[3]\n{"id": "x", "user": {"name": 5, "score": 1}}\n')
    rows = flat(read_epochs(json_source(EVENT, path, ignore_parse_errors=True), 1, 10))
    assert [row.id for row in rows] == [1, None]
    assert rows[1].user == Row(name=None, score=1.0)


def test_the_format_refuses_what_it_cannot_read():
    with pytest.raises(TypeError, match="needs a row type"):
        JsonLinesReaderFormat.for_row_type(Types.LIST(Types.INT()))
    with pytest.raises(TypeError, match="keys of type"):
        JsonLinesReaderFormat.for_row_type(
            Types.ROW_NAMED(["m"], [Types.MAP(Types.DOUBLE(), Types.INT())])
        )
    with pytest.raises(TypeError, match="field 'p'"):
        JsonLinesReaderFormat.for_row_type(Types.ROW_NAMED(["p"], [Types.PICKLED_BYTE_ARRAY()]))
    with pytest.raises(ValueError, match="choose one"):
        JsonLinesReaderFormat.for_row_type(
            EVENT, fail_on_missing_field=True, ignore_parse_errors=True
        )


def test_a_byte_order_mark_at_the_files_start_is_skipped(tmp_path):
    """As Jackson does; only at the start of the file (one inside is not JSON)."""
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + f"{json.dumps(event(0))}\n{json.dumps(event(1))}\n".encode())
    assert flat(read_epochs(json_source(EVENT, path), 1, 1)) == [event_row(0), event_row(1)]


def test_a_file_shorter_than_the_position_reached_fails_naming_it(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(event(0)) + "\n")
    source = json_source(EVENT, path)
    with pytest.raises(SourceError, match=r"events\.jsonl changed since it was listed"):
        list(source.read(SplitAssignment(str(path), 10_000, 10, False), None, {}))
