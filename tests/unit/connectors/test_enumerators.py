"""Split enumerators of from_collection and FileSource: snapshot, restore, resume exactly."""

from __future__ import annotations

import json
import os
import uuid

import fsspec
import pytest

from lockgate.common.records import RecordFormatError
from lockgate.connectors.collection import CollectionEnumerator, CollectionSource
from lockgate.connectors.file.enumerator import FileEnumerator, FileEnumeratorState, FileSplit
from lockgate.connectors.file.reader import TextLineFormat
from lockgate.connectors.file.source import AbstractFileSource
from lockgate.connectors.offset_splits import OffsetSplitsState
from lockgate.core.source import SplitAssignment, SplitProgress


class TextLineFileSource(AbstractFileSource):
    def __init__(self, paths: list[str], monitor_interval_ms: int | None = None):
        super().__init__(paths, TextLineFormat(), monitor_interval_ms)


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


def test_a_collection_restored_at_another_parallelism_reads_on_from_its_old_splits():
    """Three chunks read at parallelism 3, restored at 2: the chunks stay, and subtask
    ``i % 2`` reads on from each one's position; nothing twice, nothing skipped."""
    enumerator = CollectionEnumerator(list(range(6)), 2)
    enumerator.restore(OffsetSplitsState({"0": 1, "1": 3, "2": 5}).to_json(), WHERE)
    plan = enumerator.plan(10)
    assert {i: [(a.split, a.start, a.max_records) for a in plan[i]] for i in plan} == {
        0: [("0", 1, 1), ("2", 5, 1)],
        1: [("1", 3, 1)],
    }
    assert [enumerator.payload(a) for a in plan[0]] == [[1], [5]]
    assert enumerator.will_finish()


def test_collection_restore_with_other_splits_is_rejected():
    enumerator = CollectionEnumerator(list(range(6)), 2)
    with pytest.raises(
        RecordFormatError, match=r"chk-3.*splits \['0', '1', 'x'\].*now has \['0', '1', '2'\]"
    ):
        enumerator.restore(OffsetSplitsState({"0": 1, "1": 3, "x": 5}).to_json(), WHERE)
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
            r"field 'positions'\['0'\] is str '1', not int",
        ),
        (
            {"format": "lockgate-offset-splits", "version": 1, "positions": {"0": -1}},
            r"field 'positions'\['0'\] is -1, not a position",
        ),
    ],
)
def test_a_damaged_collection_snapshot_names_where_and_what(snapshot, message):
    enumerator = CollectionEnumerator(list(range(6)), 1)
    with pytest.raises(RecordFormatError, match=message) as info:
        enumerator.restore(snapshot, WHERE)
    assert str(info.value).startswith(WHERE)


def test_a_collection_plans_the_epoch_after_the_one_it_planned():
    source = CollectionSource(list(range(25)))
    enumerator = source.create_enumerator(2)
    enumerator.plan(5)
    twin = enumerator.ahead()
    assert twin.snapshot() == OffsetSplitsState({"0": 5, "1": 17}).to_json()
    assert enumerator.snapshot() == OffsetSplitsState({"0": 0, "1": 12}).to_json()
    ahead = twin.plan(10)
    assert {i: [(a.start, a.max_records, a.last) for a in s] for i, s in ahead.items()} == {
        0: [(5, 7, True)],
        1: [(17, 8, True)],
    }
    assert twin.will_finish() and not enumerator.will_finish()
    run_epoch(source, enumerator, 5)  # the epoch, read and acknowledged
    assert enumerator.snapshot() == OffsetSplitsState({"0": 5, "1": 17}).to_json()


def test_a_file_source_cannot_plan_ahead(files):
    enumerator = TextLineFileSource([str(files)]).create_enumerator(1)
    enumerator.plan(10)
    assert enumerator.ahead() is None  # how many bytes 10 lines are is known when read


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


def file_state(snapshot: dict) -> FileEnumeratorState:
    return FileEnumeratorState.from_json(through_json(snapshot), "test")


def readers(plan: dict[int, list[SplitAssignment]]) -> dict[str, int]:
    return {a.split: subtask for subtask, assignments in plan.items() for a in assignments}


def test_file_enumerator_spreads_visible_files_over_the_subtasks(files):
    enumerator = TextLineFileSource([str(files)]).create_enumerator(2)
    assert readers(enumerator.plan(10)) == {
        f"{files}/a.txt": 0,
        f"{files}/b.txt": 1,
        f"{files}/sub/c.txt": 0,
    }
    assert file_state(enumerator.snapshot()) == FileEnumeratorState(
        (
            FileSplit(f"{files}/a.txt", 0, 0),
            FileSplit(f"{files}/b.txt", 1, 0),
            FileSplit(f"{files}/sub/c.txt", 0, 0),
        ),
        (),
        parallelism=2,
    )


def test_file_positions_are_byte_offsets(files):
    source = TextLineFileSource([str(files)])
    enumerator = source.create_enumerator(1)
    assert run_epoch(source, enumerator, 2) == ["a0", "a1", "b0", "b1", "c0", "c1"]
    state = file_state(enumerator.snapshot())
    assert state.reading == (
        FileSplit(f"{files}/a.txt", 0, 6),
        FileSplit(f"{files}/b.txt", 0, 7),  # "b0\r\n" + "b1\r"
        FileSplit(f"{files}/sub/c.txt", 0, 6),
    )
    assert state.finished == ()


def test_file_snapshot_and_restore_resume_exactly(files):
    source = TextLineFileSource([str(files)])
    enumerator = source.create_enumerator(2)
    before = run_epoch(source, enumerator, 3)
    before += run_epoch(source, enumerator, 3)
    snapshot = through_json(enumerator.snapshot())
    state = file_state(snapshot)
    assert state.finished == (f"{files}/b.txt", f"{files}/sub/c.txt")
    assert state.reading == (FileSplit(f"{files}/a.txt", 0, 18),)  # six lines of "aN\n"
    run_epoch(source, enumerator, 3)  # after the checkpoint: forgotten on restore

    fresh = TextLineFileSource([str(files)])
    restored = fresh.create_enumerator(2)
    restored.restore(snapshot, WHERE)
    assert restored.snapshot() == snapshot
    assert readers(restored.plan(3)) == {f"{files}/a.txt": 0}
    after = []
    while not restored.is_finished():
        after += run_epoch(fresh, restored, 3)
    assert sorted(before + after) == sorted(ALL_LINES)
    assert len(before + after) == len(ALL_LINES)


def test_file_restore_keeps_the_checkpointed_readers(files):
    snapshot = FileEnumeratorState((FileSplit(f"{files}/a.txt", 1, 9),), ()).to_json()
    enumerator = TextLineFileSource([str(files)]).create_enumerator(2)
    enumerator.restore(snapshot, WHERE)
    assert enumerator.plan(100) == {1: [SplitAssignment(f"{files}/a.txt", 9, 100, False)]}


def test_a_file_restore_at_lower_parallelism_moves_readers_on(files):
    """A file read by subtask 2 of 3 goes on from its position on the least busy one."""
    snapshot = FileEnumeratorState(
        (FileSplit(f"{files}/a.txt", 2, 9), FileSplit(f"{files}/b.txt", 1, 4)), ()
    ).to_json()
    enumerator = TextLineFileSource([str(files)]).create_enumerator(2)
    enumerator.restore(snapshot, WHERE)
    assert enumerator.plan(100) == {
        0: [SplitAssignment(f"{files}/a.txt", 9, 100, False)],
        1: [SplitAssignment(f"{files}/b.txt", 4, 100, False)],
    }


def test_a_file_restore_at_higher_parallelism_gives_new_subtasks_splits(files):
    """Four files read by two subtasks, restored at four: each subtask reads one, from the
    checkpointed positions."""
    paths = [f"{files}/{name}" for name in ("a.txt", "b.txt", "sub/c.txt", "sub/d.txt")]
    splits = tuple(FileSplit(path, i % 2, i + 1) for i, path in enumerate(paths))
    snapshot = FileEnumeratorState(splits, (), parallelism=2).to_json()
    enumerator = TextLineFileSource([str(files)]).create_enumerator(4)
    enumerator.restore(snapshot, WHERE)
    plan = enumerator.plan(100)
    assert sorted(plan) == [0, 1, 2, 3] and all(len(s) == 1 for s in plan.values())
    assert {a.split: a.start for s in plan.values() for a in s} == {
        path: i + 1 for i, path in enumerate(paths)
    }
    assert plan[0][0].split == paths[0] and plan[1][0].split == paths[1]  # stayed
    assert file_state(enumerator.snapshot()).parallelism == 4


def test_bounded_file_source_finishes_when_every_file_is_read(files):
    source = TextLineFileSource([str(files)])
    enumerator = source.create_enumerator(3)
    assert not enumerator.is_finished()
    lines = run_epoch(source, enumerator, 1000)
    assert sorted(lines) == sorted(ALL_LINES)
    assert enumerator.is_finished()
    assert enumerator.plan(1000) == {}


def test_a_bounded_source_reads_the_files_of_its_first_listing_only(files):
    source = TextLineFileSource([str(files)])
    enumerator = source.create_enumerator(1)
    snapshot = through_json(enumerator.snapshot())  # before the first epoch was planned
    (files / "late.txt").write_text("late\n")
    restored = source.create_enumerator(1)
    restored.restore(snapshot, WHERE)
    assert sorted(run_epoch(source, restored, 1000)) == sorted(ALL_LINES)
    assert restored.is_finished()


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
    assert f"{files}/d.txt" in file_state(restored.snapshot()).finished


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
        first = run_epoch(source, enumerator, 2)
        assert file_state(enumerator.snapshot()) == FileEnumeratorState(
            (FileSplit(f"{absolute}/x.txt", 0, 6),), (f"{absolute}/y.txt",), parallelism=1
        )
        restored = TextLineFileSource([root]).create_enumerator(1)
        restored.restore(through_json(enumerator.snapshot()), WHERE)
        rest = run_epoch(source, restored, 10)
        assert sorted(first + rest) == ["x0", "x1", "x2", "y0"]
        assert restored.is_finished()
    finally:
        fs.rm(root.removeprefix("memory://"), recursive=True)


def test_file_enumerator_is_a_file_enumerator(files):
    assert isinstance(TextLineFileSource([str(files)]).create_enumerator(1), FileEnumerator)


# FileSource over months: what the enumerator keeps ------------------------------------------------


class ListedSource(TextLineFileSource):
    """A continuous source whose listing is set by the test: enumerator state at scale,
    without files (the tests acknowledge instead of reading)."""

    def __init__(self, names: list[str], monitor_interval_ms: int = 0):
        super().__init__(["/in"], monitor_interval_ms=monitor_interval_ms)
        self.names = names
        self.listings = 0

    def list_files(self) -> list[str]:
        self.listings += 1
        return list(self.names)


def finish(enumerator: FileEnumerator, paths: list[str]) -> None:
    enumerator.acknowledge({path: SplitProgress(100, True) for path in paths})


def encoded_size(snapshot: dict) -> int:
    return len(json.dumps(snapshot, separators=(",", ":")))  # as _metadata writes it


def day(n: int, count: int) -> list[str]:
    return [f"/in/2024-05-{n:02d}/events-{i:05d}.json" for i in range(count)]


def test_ten_thousand_finished_files_still_listed_are_stored_compactly():
    names = day(1, 10_000)
    source = ListedSource(names)
    enumerator = source.create_enumerator(4)
    assert len(readers(enumerator.plan(100))) == 10_000
    finish(enumerator, names)
    snapshot = enumerator.snapshot()
    state = file_state(snapshot)
    assert state.reading == ()
    assert state.finished == tuple(sorted(names))
    plain = sum(len(json.dumps(name)) + 1 for name in names)  # a plain JSON list of the paths
    assert encoded_size(snapshot) < plain / 2
    assert encoded_size(snapshot) < 16 * len(names)


def test_finished_files_that_were_deleted_are_forgotten():
    source = ListedSource(day(1, 10_000))
    enumerator = source.create_enumerator(4)
    enumerator.plan(100)
    finish(enumerator, source.names)
    source.names = day(2, 3)  # the user deleted the first day, the second day began
    assert len(readers(enumerator.plan(100))) == 3
    snapshot = enumerator.snapshot()
    assert file_state(snapshot).finished == ()
    assert len(file_state(snapshot).reading) == 3
    assert encoded_size(snapshot) < 400


def test_planning_between_listings_looks_only_at_the_files_being_read():
    class CountingSet(set):
        lookups = 0

        def __contains__(self, item):
            CountingSet.lookups += 1
            return super().__contains__(item)

        def __iter__(self):
            CountingSet.lookups += 1
            return super().__iter__()

    source = ListedSource([*day(1, 10_000), *day(2, 3)], monitor_interval_ms=3_600_000)
    enumerator = source.create_enumerator(2)
    enumerator.plan(100)
    finish(enumerator, day(1, 10_000))
    enumerator.finished = CountingSet(enumerator.finished)
    for _ in range(5):
        assert sorted(readers(enumerator.plan(100))) == day(2, 3)
    enumerator.acknowledge({day(2, 3)[0]: SplitProgress(50, False)})
    assert source.listings == 1
    assert CountingSet.lookups == 0


def test_a_restore_after_forgetting_reads_every_new_file_once_and_no_finished_one(tmp_path):
    directory = tmp_path / "incoming"
    directory.mkdir()
    for name in ("a", "b", "c", "d"):
        (directory / f"{name}.txt").write_text(f"{name}0\n{name}1\n")
    source = TextLineFileSource([str(directory)], monitor_interval_ms=0)
    enumerator = source.create_enumerator(2)
    assert sorted(run_epoch(source, enumerator, 100)) == [
        "a0",
        "a1",
        "b0",
        "b1",
        "c0",
        "c1",
        "d0",
        "d1",
    ]
    (directory / "a.txt").unlink()
    (directory / "b.txt").unlink()
    assert run_epoch(source, enumerator, 100) == []
    snapshot = through_json(enumerator.snapshot())
    assert file_state(snapshot).finished == (f"{directory}/c.txt", f"{directory}/d.txt")

    # Meanwhile: a new file under a deleted (forgotten) name, and a file written elsewhere
    # long ago and moved in, keeping its old modification time.
    (directory / "a.txt").write_text("new a\n")
    staged = tmp_path / "staging" / "old.txt"
    staged.parent.mkdir()
    staged.write_text("old0\nold1\n")
    os.utime(staged, (1_000_000, 1_000_000))
    os.rename(staged, directory / "old.txt")

    restored = TextLineFileSource([str(directory)], monitor_interval_ms=0).create_enumerator(2)
    restored.restore(snapshot, WHERE)
    assert sorted(run_epoch(source, restored, 100)) == ["new a", "old0", "old1"]
    assert run_epoch(source, restored, 100) == []
    assert file_state(restored.snapshot()).finished == tuple(
        f"{directory}/{name}.txt" for name in ("a", "c", "d", "old")
    )


def test_a_restore_of_a_checkpoint_from_before_a_deletion_forgets_the_deleted_file(tmp_path):
    directory = tmp_path / "incoming"
    directory.mkdir()
    (directory / "a.txt").write_text("a0\n")
    (directory / "b.txt").write_text("b0\n")
    source = TextLineFileSource([str(directory)], monitor_interval_ms=0)
    enumerator = source.create_enumerator(1)
    run_epoch(source, enumerator, 100)
    snapshot = through_json(enumerator.snapshot())
    (directory / "a.txt").unlink()
    restored = source.create_enumerator(1)
    restored.restore(snapshot, WHERE)
    assert run_epoch(source, restored, 100) == []
    assert file_state(restored.snapshot()).finished == (f"{directory}/b.txt",)


def test_new_files_go_to_the_subtasks_reading_the_fewest():
    source = ListedSource(["/in/big-0", "/in/big-1", "/in/big-2"])
    enumerator = source.create_enumerator(3)
    enumerator.plan(10)
    finish(enumerator, ["/in/big-1"])
    source.names = ["/in/big-0", "/in/big-1", "/in/big-2", "/in/n-0", "/in/n-1", "/in/n-2"]
    assert readers(enumerator.plan(10)) == {
        "/in/big-0": 0,
        "/in/big-2": 2,
        "/in/n-0": 1,
        "/in/n-1": 0,
        "/in/n-2": 1,
    }


def test_finished_paths_survive_front_coding():
    names = ["/in/a", "/in/a.txt", "/in/a/b", "/in/a/b.txt", "/in/ä/日本.txt", "/in/b"]
    state = FileEnumeratorState((), tuple(sorted(names)))
    raw = through_json(state.to_json())
    assert raw["finished"][:3] == [[0, "/in/a"], [5, ".txt"], [5, "/b"]]
    assert FileEnumeratorState.from_json(raw, "test") == state


def file_snapshot(**changes) -> dict:
    raw = FileEnumeratorState(
        (FileSplit("/in/a", 0, 10), FileSplit("/in/b", 1, 0)), ("/in/c", "/in/d")
    ).to_json()
    return {**raw, **changes}


@pytest.mark.parametrize(
    ("snapshot", "message"),
    [
        ({"positions": {}, "owner": {}, "finished": []}, "is not a lockgate-file-source-splits"),
        (file_snapshot(format="lockgate-offset-splits"), "is not a lockgate-file-source-splits"),
        (file_snapshot(version=2), "of version 2; this lockgate reads version 1"),
        (file_snapshot(reading={}), "field 'reading' is dict {}, not a list"),
        (file_snapshot(reading=[["/in/a", 0, 1]]), r"reading\[0\] is not an object"),
        (
            file_snapshot(reading=[{"path": "/in/a", "subtask": 0}]),
            r"reading\[0\] lacks the field 'position'",
        ),
        (
            file_snapshot(reading=[{"path": "/in/a", "subtask": 0, "position": -5}]),
            r"reading\[0\]: field 'position' is -5, not a position",
        ),
        (
            file_snapshot(reading=[{"path": "/in/a", "subtask": -1, "position": 0}]),
            "/in/a is read by subtask -1",
        ),
        (
            file_snapshot(reading=[{"path": "/in/a", "subtask": 0, "position": 0}] * 2),
            "/in/a is in 'reading' 2 times",
        ),
        (file_snapshot(finished=[[0, "/in/a"]]), "/in/a is both being read and finished"),
        (file_snapshot(finished=[[0, "/in/c"], [9, "x"]]), "finished: entry 1 is \\[9, 'x'\\]"),
        (file_snapshot(finished=[[0, "/in/c"], "/in/d"]), "finished: entry 1 is '/in/d', not"),
        (file_snapshot(finished=[[0, "/in/d"], [4, "c"]]), "entry 1 \\('/in/c'\\) does not sort"),
        (file_snapshot(finished=[[0, "/in/d"], [5, ""]]), "entry 1 \\('/in/d'\\) does not sort"),
    ],
)
def test_a_damaged_file_snapshot_names_where_and_what(files, snapshot, message):
    source = TextLineFileSource([str(files)], monitor_interval_ms=0)
    enumerator = source.create_enumerator(2)
    run_epoch(source, enumerator, 2)
    before = enumerator.snapshot()
    with pytest.raises(RecordFormatError, match=message) as info:
        enumerator.restore(snapshot, WHERE)
    assert str(info.value).startswith(WHERE)
    assert enumerator.snapshot() == before


def test_text_lines_of_a_charset_are_decoded_and_unusable_charsets_refused(tmp_path):
    path = tmp_path / "latin.txt"
    path.write_bytes("caf\xe9\nna\xefve\n".encode("latin-1"))
    source = AbstractFileSource([str(path)], TextLineFormat("ISO-8859-1"))
    assert run_epoch(source, source.create_enumerator(1), 10) == ["caf\xe9", "na\xefve"]
    with pytest.raises(ValueError, match="'UTF-99' is not a known charset"):
        TextLineFormat("UTF-99")
    for charset in ("UTF-16", "UTF-32LE", "cp500"):  # line ends are other bytes
        with pytest.raises(ValueError, match=f"charset '{charset}' writes line ends as other"):
            TextLineFormat(charset)
