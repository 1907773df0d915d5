"""Split enumerators of from_collection and FileSource: snapshot, restore, resume exactly."""

from __future__ import annotations

import json
import uuid

import fsspec
import pytest

from lockgate.connectors.collection import CollectionEnumerator, CollectionSource
from lockgate.connectors.file_source import FileEnumerator, TextLineFileSource


def run_epoch(source, enumerator, max_records: int) -> list:
    """Plan one epoch, read every assignment as the tasks would, acknowledge it."""
    records, progress = [], {}
    for assignments in enumerator.plan(max_records).values():
        for assignment in assignments:
            records.extend(source.read(assignment, progress))
    enumerator.acknowledge(progress)
    return records


def through_json(snapshot: dict) -> dict:
    return json.loads(json.dumps(snapshot))


# from_collection ----------------------------------------------------------------------------------


def test_collection_splits_are_contiguous_chunks():
    enumerator = CollectionSource(range(10)).create_enumerator(3)
    assert enumerator.positions == {"0": 0, "1": 3, "2": 6}
    assert enumerator.ends == {"0": 3, "1": 6, "2": 10}
    assert enumerator.snapshot() == {"positions": {"0": 0, "1": 3, "2": 6}}


def test_collection_plan_reads_at_most_max_records_per_split():
    source = CollectionSource(list("abcdefg"))
    enumerator = source.create_enumerator(2)
    plan = enumerator.plan(2)
    assert plan == {
        0: [{"split": "0", "start": 0, "max_records": 2, "last": False, "records": ["a", "b"]}],
        1: [{"split": "1", "start": 3, "max_records": 2, "last": False, "records": ["d", "e"]}],
    }
    assert not enumerator.will_finish()


def test_collection_snapshot_and_restore_resume_exactly():
    data = list(range(23))
    source = CollectionSource(data)
    enumerator = source.create_enumerator(3)
    before = run_epoch(source, enumerator, 4) + run_epoch(source, enumerator, 4)
    snapshot = through_json(enumerator.snapshot())
    assert snapshot == {"positions": {"0": 7, "1": 15, "2": 23}}
    run_epoch(source, enumerator, 4)  # progress after the checkpoint: to be forgotten

    restored = CollectionSource(data).create_enumerator(3)
    restored.restore(snapshot)
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
    assert snapshot == {"positions": {"0": 0}}
    assert enumerator.snapshot() == {"positions": {"0": 2}}


def test_collection_finishing():
    source = CollectionSource([1, 2, 3])
    enumerator = source.create_enumerator(1)
    enumerator.plan(3)
    assert enumerator.will_finish()
    assert not enumerator.is_finished()
    enumerator.acknowledge({"0": {"position": 3, "finished": True}})
    assert enumerator.is_finished()
    assert enumerator.plan(3) == {}


def test_an_empty_collection_is_finished_at_once():
    enumerator = CollectionSource([]).create_enumerator(2)
    assert enumerator.is_finished()
    assert enumerator.plan(10) == {}


def test_a_restored_finished_collection_reads_nothing():
    enumerator = CollectionSource([1, 2]).create_enumerator(1)
    enumerator.restore({"positions": {"0": 2}})
    assert enumerator.is_finished()
    assert enumerator.plan(5) == {}


def test_collection_restore_with_other_splits_is_rejected():
    enumerator = CollectionEnumerator(list(range(6)), 2)
    with pytest.raises(ValueError, match=r"splits \['0', '1', '2'\].*now has \['0', '1'\]"):
        enumerator.restore({"positions": {"0": 1, "1": 3, "2": 5}})
    assert enumerator.snapshot() == {"positions": {"0": 0, "1": 3}}


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
    restored.restore(snapshot)
    assert restored.snapshot() == snapshot
    assert f"{files}/b.txt" not in {a["split"] for p in restored.plan(3).values() for a in p}
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
    enumerator.restore(snapshot)
    plan = enumerator.plan(100)
    assert plan == {1: [{"split": f"{files}/a.txt", "start": 9, "max_records": 100}]}


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
    restored.restore(snapshot)
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
    restored.restore(snapshot)
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
        restored.restore(through_json(enumerator.snapshot()))
        rest = run_epoch(source, restored, 10)
        assert sorted(first + rest) == ["x0", "x1", "x2", "y0"]
        assert restored.is_finished()
    finally:
        fs.rm(root.removeprefix("memory://"), recursive=True)


def test_file_enumerator_is_a_file_enumerator(files):
    assert isinstance(TextLineFileSource([str(files)]).create_enumerator(1), FileEnumerator)
