"""Split assignments and progress reports: typed JSON records, checked when read."""

from __future__ import annotations

import json

import pytest

from lockgate.common.records import RecordFormatError
from lockgate.core.source import SplitAssignment, SplitProgress


def through_json(raw):
    return json.loads(json.dumps(raw))


def test_an_assignment_round_trips_through_json():
    assignment = SplitAssignment("file:///in/a.txt", 120, 50, False)
    raw = through_json(assignment.to_json())
    assert raw == {
        "format": "lockgate-split-assignment",
        "version": 1,
        "split": "file:///in/a.txt",
        "start": 120,
        "max_records": 50,
        "last": False,
    }
    assert SplitAssignment.from_json(raw, "assignment 0") == assignment


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "lockgate-subtask-ack"}, "assignment 3 is not a lockgate-split-assignment"),
        ({"version": 2}, "of version 2; this lockgate reads version 1"),
        ({"split": None}, "assignment 3: field 'split' is NoneType None, not str"),
        ({"start": "7"}, "assignment 3: field 'start' is str '7', not int"),
        ({"start": -1}, "assignment 3: field 'start' is -1, not a position"),
        ({"max_records": 0}, "assignment 3: field 'max_records' is 0, not >= 1"),
        ({"max_records": True}, "field 'max_records' is True, not int"),
        ({"last": 1}, "assignment 3: field 'last' is int 1, not bool"),
    ],
)
def test_a_damaged_assignment_names_where_and_what(change, message):
    raw = {**SplitAssignment("0", 3, 10, True).to_json(), **change}
    with pytest.raises(RecordFormatError, match=message):
        SplitAssignment.from_json(raw, "assignment 3")


def test_an_assignment_lacking_a_field_names_it():
    raw = SplitAssignment("0", 3, 10, True).to_json()
    del raw["max_records"]
    with pytest.raises(RecordFormatError, match="assignment 3 lacks the field 'max_records'"):
        SplitAssignment.from_json(raw, "assignment 3")


def test_progress_round_trips_through_json():
    progress = SplitProgress(4096, True)
    raw = through_json(progress.to_json())
    assert raw == {"position": 4096, "finished": True}
    assert SplitProgress.from_json(raw, "ack") == progress


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([12, True], "ack, split '0' is not an object"),
        ({"finished": True}, "ack, split '0' lacks the field 'position'"),
        ({"position": 12}, "ack, split '0' lacks the field 'finished'"),
        ({"position": 1.5, "finished": False}, "field 'position' is float 1.5, not int"),
        ({"position": -3, "finished": False}, "field 'position' is -3, not a position"),
        ({"position": 3, "finished": "yes"}, "field 'finished' is str 'yes', not bool"),
    ],
)
def test_damaged_progress_names_where_and_what(raw, message):
    with pytest.raises(RecordFormatError, match=message):
        SplitProgress.from_json(raw, "ack, split '0'")
