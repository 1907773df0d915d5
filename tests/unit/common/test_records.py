"""Typed control records: format, version and every field are checked when read."""

from __future__ import annotations

import pytest

from lockgate.common.records import RecordFormatError, envelope, field, open_envelope


def test_an_envelope_round_trips():
    raw = envelope("lockgate-test", 2, {"a": 1})
    assert open_envelope(raw, "lockgate-test", 2, "test.json") == raw


@pytest.mark.parametrize(
    "raw, message",
    [
        ([], "test.json is not a lockgate-test record"),
        ({"format": "other", "version": 2}, "test.json is not a lockgate-test record"),
        ({"format": "lockgate-test", "version": 3}, "of version 3; this lockgate reads version 2"),
    ],
)
def test_foreign_or_newer_records_are_rejected_naming_the_file(raw, message):
    with pytest.raises(RecordFormatError, match=message):
        open_envelope(raw, "lockgate-test", 2, "test.json")


def test_fields_are_type_checked_naming_the_field():
    raw = {"epoch": 3, "flag": True, "name": None}
    assert field(raw, "epoch", int, "ack.json") == 3
    assert field(raw, "name", (str, type(None)), "ack.json") is None
    with pytest.raises(RecordFormatError, match=r"ack.json lacks the field 'subtask'"):
        field(raw, "subtask", int, "ack.json")
    with pytest.raises(RecordFormatError, match="field 'flag' is True, not int"):
        field(raw, "flag", int, "ack.json")
    with pytest.raises(RecordFormatError, match="field 'epoch' is int 3, not str"):
        field(raw, "epoch", str, "ack.json")
