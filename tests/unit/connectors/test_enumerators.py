"""Split enumerators of from_collection and FileSource: snapshot, restore, resume exactly."""

from __future__ import annotations

import json
import uuid

import fsspec
import pytest

from lockgate.common.records import RecordFormatError
from lockgate.connectors.base import OffsetSplitsState, SplitAssignment, SplitProgress
from lockgate.connectors.collection import CollectionEnumerator, CollectionSource
from lockgate.connectors.file_source import FileEnumerator, TextLineFileSource

WHERE = "checkpoint chk-3: the split enumerator of 'src' (uid 'src')"


def run_epoch(source, enumerator, max_records: int) -> list:
    """Plan one epoch, read every assignment as the tasks would (its control record through
    JSON, its payload beside it), acknowledge it through JSON."""
    records, progress = [], {}
    for assignments in enumerator.plan(max_records).values():
        for assignment in assignments:
            payload = enumerator.payload(assignment)
            received = SplitAssignment.from_json(through_json(assignment.to_json()), "test")
            records.extend(source.read(received, payload, progress))
    enumerator.acknowledge(
        {
            split: SplitProgress.from_json(through_json(report.to_json()), "test")
            for split, report in progress.items()
        }
    )
    return records


def through_json(snapshot: dict) -> dict:
    return json.loads(json.dumps(snapshot))


def positions(snapshot: dict) -> dict[str, int]:
    return OffsetSplitsState.from_json(snapshot, "test").positions


# from_collection ----------------------------------------------------------------------------------


def test_collection_splits_are_contiguous_chunks():
    enumerator = CollectionSource(range(10)).create_enumerator(3)
    assert enumerator.positions == {"0": 0, "1": 3, "2": 6}
    assert enumerator.ends == {"0": 3, "1": 6, "2": 10}
    assert enumerator.snapshot() == {
        "format": "lockgate-offset-splits",
        "version": 1,
        "positions": {"0": 0, "1": 3, "2": 6},
    }


def test_collection_plan_reads_at_most_max_records_per_split():
    source = CollectionSource(list("abcdefg"))
    enumerator = source.create_enumerator(2)
    plan = enumerator.plan(2)
    assert plan == {
        0: [SplitAssignment("0", 0, 2, False)],
        1: [SplitAssignment("1", 3, 2, False)],
    }
    assert [enumerator.payload(a) for [a] in plan.values()] == [["a", "b"], ["d", "e"]]
    assert not enumerator.will_finish()


def test_collection_records_travel_beside_the_control_record_not_in_it():
    enumerator = CollectionSource(["secret", "data"]).create_enumerator(1)
    [[assignment]] = enumerator.plan(10).values()
    assert "secret" not in json.dumps(assignment.to_json())
    assert enumerator.payload(assignment) == ["secret", "data"]


def test_collection_snapshot_and_restore_resume_exactly():
    data = list(range(23))
    source = CollectionSource(data)
    enumerator = source.create_enumerator(3)
    before = run_epoch(source, enumerator, 4) + run_epoch(source, enumerator, 4)
    snapshot = through_json(enumerator.snapshot())
    assert positions(snapshot) == {"0": 7, "1": 15, "2": 23}
    run_epoch(source, enumerator, 4)  # progress after the checkpoint: to be forgotten

    restored = CollectionSource(data).create_enumerator(3)
    restored.restore(snapshot, WHERE)
    assert restored.snapshot() == snapshot
    after = []
    while not restored.is_finished():
        after += run_epoch(source, restored, 4)
    assert sorted(before + after) == data
    assert len(before + after) == len(data)


def test_collection_snapshot_is_a_copy():
    source = CollectionSource([1, 2, 3])
    enumerator = source.create_enumerator(1)
    snapshot = enumerator.snapshot()
    run_epoch(source, enumerator, 2)
    assert positions(snapshot) == {"0": 0}
    assert positions(enumerator.snapshot()) == {"0": 2}


def test_collection_finishing():
    source = CollectionSource([1, 2, 3])
    enumerator = source.create_enumerator(1)
    enumerator.plan(3)
    assert enumerator.will_finish()
    assert not enumerator.is_finished()
    enumerator.acknowledge({"0": SplitProgress(3, True)})
    assert enumerator.is_finished()
    assert enumerator.plan(3) == {}


def test_an_empty_collection_is_finished_at_once():
    enumerator = CollectionSource([]).create_enumerator(2)
    assert enumerator.is_finished()
    assert enumerator.plan(10) == {}


def test_a_restored_finished_collection_reads_nothing():
    enumerator = CollectionSource([1, 2]).create_enumerator(1)
    enumerator.restore(OffsetSplitsState({"0": 2}).to_json(), WHERE)
    assert enumerator.is_finished()
    assert enumerator.plan(5) == {}


def test_collection_restore_with_other_splits_is_rejected():
    enumerator = CollectionEnumerator(list(range(6)), 2)
    with pytest.raises(
        RecordFormatError, match=r"chk-3.*splits \['0', '1', '2'\].*now has \['0', '1'\]"
    ):
        enumerator.restore(OffsetSplitsState({"0": 1, "1": 3, "2": 5}).to_json(), WHERE)
    assert positions(enumerator.snapshot()) == {"0": 0, "1": 3}


def test_collection_restore_of_a_position_past_the_split_is_rejected():
    enumerator = CollectionEnumerator(list(range(6)), 2)
    with pytest.raises(RecordFormatError) as info:
        enumerator.restore(OffsetSplitsState({"0": 3, "1": 7}).to_json(), WHERE)
    assert str(info.value) == (
        f"{WHERE}: position 7 of split '1' is outside its range [3, 6] (the collection source "
        "has other input than when it was checkpointed)"
    )
    assert positions(enumerator.snapshot()) == {"0": 0, "1": 3}


@pytest.mark.parametrize(
    ("snapshot", "message"),
    [
        (None, "is not a lockgate-offset-splits record"),
        ({"positions": {"0": 1}}, "is not a lockgate-offset-splits record"),  # before versions
        ({"format": "lockgate-file-source-splits", "version": 1}, "is not a lockgate-offset"),
        ({"format": "lockgate-offset-splits", "version": 9}, "of version 9"),
        ({"format": "lockgate-offset-splits", "version": 1}, "lacks the field 'positions'"),
        (
            {"format": "lockgate-offset-splits", "version": 1, "positions": {"0": "1"}},
            "positions: field '0' is str '1', not int",
        ),
        (
            {"format": "lockgate-offset-splits", "version": 1, "positions": {"0": -1}},
            "positions: field '0' is -1, not a position",
        ),
    ],
)
def test_a_damaged_collection_snapshot_names_where_and_what(snapshot, message):
    enumerator = CollectionEnumerator(list(range(6)), 1)
    with pytest.raises(RecordFormatError, match=message) as info:
        enumerator.restore(snapshot, WHERE)
    assert str(info.value).startswith(WHERE)


def test_the_collection_source_does_not_ship_its_records():
    assert CollectionSource([1, 2, 3]).__getstate__() == {"collection": None}


# FileSource ---------------------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path):
    root = tmp_path / "in"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("".join(f"a{i}\n" for i in range(7)))
    (root / "b.txt").write_text("b0\r\nb1\rb2\nb3")  # mixed line ends, no final newline
    (root / "sub" / "c.txt").write_text("".join(f"c{i}\n" for i in range(5)))
    (root / ".hidden.txt").write_text("never\n")
    (root / "_SUCCESS").write_text("never\n")
    return root


ALL_LINES = [f"a{i}" for i in range(7)] + ["b0", "b1", "b2", "b3"] + [f"c{i}" for i in range(5)]


def test_file_enumerator_assigns_visible_files_round_robin(files):
    enumerator = TextLineFileSource([str(files)]).create_enumerator(2)
    assert enumerator.owner == {
        f"{files}/a.txt": 0,
        f"{files}/b.txt": 1,
        f"{files}/sub/c.txt": 0,
    }
    assert enumerator.snapshot() == {
        "positions": {f"{files}/a.txt": 0, f"{files}/b.txt": 0, f"{files}/sub/c.txt": 0},
        "owner": {f"{files}/a.txt": 0, f"{files}/b.txt": 1, f"{files}/sub/c.txt": 0},
        "finished": [],
    }


def test_file_positions_are_byte_offsets(files):
    source = TextLineFileSource([str(files)])
    enumerator = source.create_enumerator(1)
    assert run_epoch(source, enumerator, 2) == ["a0", "a1", "b0", "b1", "c0", "c1"]
    snapshot = enumerator.snapshot()
    assert snapshot["positions"] == {
        f"{files}/a.txt": 6,
        f"{files}/b.txt": 7,  # "b0\r\n" + "b1\r"
        f"{files}/sub/c.txt": 6,
    }
    assert snapshot["finished"] == []


def test_file_snapshot_and_restore_resume_exactly(files):
    source = TextLineFileSource([str(files)])
    enumerator = source.create_enumerator(2)
    before = run_epoch(source, enumerator, 3)
    before += run_epoch(source, enumerator, 3)
    snapshot = through_json(enumerator.snapshot())
    assert snapshot["finished"] == [f"{files}/b.txt", f"{files}/sub/c.txt"]
    assert snapshot["positions"][f"{files}/a.txt"] == 18  # six lines of "aN\n"
    run_epoch(source, enumerator, 3)  # after the checkpoint: forgotten on restore

    fresh = TextLineFileSource([str(files)])
    restored = fresh.create_enumerator(2)
    restored.restore(snapshot, WHERE)
    assert restored.snapshot() == snapshot
    assert f"{files}/b.txt" not in {a.split for p in restored.plan(3).values() for a in p}
    after = []
    while not restored.is_finished():
        after += run_epoch(fresh, restored, 3)
    assert sorted(before + after) == sorted(ALL_LINES)
    assert len(before + after) == len(ALL_LINES)


def test_file_restore_keeps_the_checkpointed_owners(files):
    snapshot = {
        "positions": {f"{files}/a.txt": 9},
        "owner": {f"{files}/a.txt": 1},
        "finished": [],
    }
    enumerator = TextLineFileSource([str(files)]).create_enumerator(2)
    enumerator.restore(snapshot, WHERE)
    plan = enumerator.plan(100)
    assert plan == {1: [SplitAssignment(f"{files}/a.txt", 9, 100, False)]}


def test_bounded_file_source_finishes_when_every_file_is_read(files):
    source = TextLineFileSource([str(files)])
    enumerator = source.create_enumerator(3)
    lines = run_epoch(source, enumerator, 1000)
    assert sorted(lines) == sorted(ALL_LINES)
    assert enumerator.is_finished()
    assert enumerator.plan(1000) == {}


def test_a_continuous_source_discovers_files_added_after_the_checkpoint(files):
    source = TextLineFileSource([str(files)], monitor_interval_ms=0)
    enumerator = source.create_enumerator(2)
    run_epoch(source, enumerator, 1000)
    snapshot = through_json(enumerator.snapshot())
    assert not enumerator.is_finished()  # continuous: never finished

    (files / "d.txt").write_text("d0\nd1\n")
    restored = TextLineFileSource([str(files)], monitor_interval_ms=0).create_enumerator(2)
    restored.restore(snapshot, WHERE)
    assert run_epoch(source, restored, 1000) == ["d0", "d1"]
    assert restored.snapshot()["owner"][f"{files}/d.txt"] in (0, 1)


def test_an_appended_line_is_read_once_by_a_continuous_source(tmp_path):
    path = tmp_path / "log.txt"
    path.write_text("one\ntwo\n")
    source = TextLineFileSource([str(path)], monitor_interval_ms=0)
    enumerator = source.create_enumerator(1)
    assert run_epoch(source, enumerator, 1) == ["one"]
    snapshot = through_json(enumerator.snapshot())
    restored = source.create_enumerator(1)
    restored.restore(snapshot, WHERE)
    assert run_epoch(source, restored, 10) == ["two"]


def test_file_enumerator_over_a_memory_url():
    root = f"memory://lockgate-tests/{uuid.uuid4().hex}"
    fs = fsspec.filesystem("memory")
    try:
        fs.pipe(f"{root}/x.txt", b"x0\nx1\nx2\n")
        fs.pipe(f"{root}/y.txt", b"y0\n")
        source = TextLineFileSource([root])
        enumerator = source.create_enumerator(1)
        absolute = "memory:///" + root.removeprefix("memory://")
        assert sorted(enumerator.owner) == [f"{absolute}/x.txt", f"{absolute}/y.txt"]
        first = run_epoch(source, enumerator, 2)
        restored = TextLineFileSource([root]).create_enumerator(1)
        restored.restore(through_json(enumerator.snapshot()), WHERE)
        rest = run_epoch(source, restored, 10)
        assert sorted(first + rest) == ["x0", "x1", "x2", "y0"]
        assert restored.is_finished()
    finally:
        fs.rm(root.removeprefix("memory://"), recursive=True)


def test_file_enumerator_is_a_file_enumerator(files):
    assert isinstance(TextLineFileSource([str(files)]).create_enumerator(1), FileEnumerator)
