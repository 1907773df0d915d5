"""Rescaling through savepoints, in the spirit of Flink's RescaleCheckpointManuallyITCase:
one job with keyed state of every kind, timers, window state and operator list, union and
broadcast state is stopped with a savepoint at parallelism 2, resumed at 3 from a moved copy
of it, stopped again, and resumed at 1 to the end from the state processor's copy of that
savepoint, on both backends and across them. Every key's state is on the subtask the
key-group formulas give, counts go on exactly, the state processor reads what each subtask
held, and the exactly-once output of the three runs has no loss and no duplicate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from exactly_once_job import (
    assert_same_lines,
    checkpointed_env,
    committed_lines,
    recovery_settings,
    stop_with_savepoint_at_first_epoch,
)
from pyspark.sql import types as T
from rescale_job import (
    MAX_PARALLELISM,
    PER_EPOCH,
    RECORDS,
    build,
    expected_lines,
    reports,
)
from state_processor_job import replay

from lockgate.common import Types
from lockgate.datastream.state import ListStateDescriptor
from lockgate.state.key_groups import key_group_range
from lockgate.state_processor import SavepointReader, SavepointWriter, StateProcessorError

PARALLELISMS = [2, 3, 1]


def check_savepoint(spark, path: str, parallelism: int, records_read: int) -> None:
    """Its keyed state by key group as the formulas give, and each key's count."""
    reader = SavepointReader.read(spark, path)
    ranges = {
        r.subtask: (r.key_group_start, r.key_group_end)
        for r in reader.metadata().collect()
        if r.uid == "state-kinds"
    }
    expected_ranges = {}
    for index in range(parallelism):
        kg = key_group_range(MAX_PARALLELISM, parallelism, index)
        expected_ranges[index] = (kg.start, kg.end)
    assert ranges == expected_ranges
    states, _ = replay({}, RECORDS[:records_read])
    counts = {r.key: r.value for r in reader.keyed_state("state-kinds", "count").collect()}
    assert counts == {user: s["count"] for user, s in states.items()}


def check_operator_state_read(reader: SavepointReader, closed: dict[int, dict]) -> None:
    """The operator state of the second run's savepoint (``closed``: what its subtasks held)
    as the state processor reads it."""
    modes = (("counts", "union list"), ("latest", "broadcast"), ("seen", "list"))
    metadata = reader.metadata().filter("uid = 'tally'").collect()
    assert {(r.subtask, tuple(sorted(r.operator_states.items()))) for r in metadata} == {
        (i, modes) for i in range(3)
    }
    # list state: every subtask's elements, in order, typed by the descriptor
    element = Types.TUPLE([Types.STRING(), Types.INT(), Types.LONG()])
    seen_state = reader.list_state("tally", ListStateDescriptor("seen", element))
    assert seen_state.schema.simpleString() == (
        "struct<subtask:int,value:struct<f0:string,f1:int,f2:bigint>>"
    )
    assert [(r.subtask, tuple(r.value)) for r in seen_state.collect()] == [
        (i, r) for i in range(3) for r in seen(closed[i])
    ]
    # union state: each subtask's [index, count] once, its type inferred
    counts = reader.union_state("tally", "counts")
    assert counts.schema["value"].dataType == T.ArrayType(T.LongType())
    assert sorted((r.subtask, tuple(r.value)) for r in counts.collect()) == [
        (i, (i, len(closed[i]["seen"]))) for i in range(3)
    ]
    # broadcast state: one copy
    assert [tuple(r) for r in reader.broadcast_state("tally", "latest").collect()] == [("epoch", 2)]
    with pytest.raises(StateProcessorError, match=r"'counts' of operator 'tally' is union list"):
        reader.list_state("tally", "counts")
    listed = r"'counts' \(union list\), 'latest' \(broadcast\), 'seen' \(list\)"
    with pytest.raises(StateProcessorError, match=rf"no operator state 'nope'; .*: {listed}$"):
        reader.broadcast_state("tally", "nope")


def seen(report: dict) -> list[tuple]:
    return [tuple(r) for r in report["seen"]]


@pytest.mark.parametrize(
    "backends",
    [("hashmap", "hashmap", "rocksdb"), ("rocksdb", "rocksdb", "hashmap")],
    ids=["hashmap-then-rocksdb", "rocksdb-then-hashmap"],
)
def test_every_kind_of_state_moves_through_savepoints_at_2_3_and_1(
    make_env, spark, tmp_path, backends
):
    out, report_dir = tmp_path / "out", tmp_path / "reports"
    report_dir.mkdir()

    def env_for(run: int, resume: str | Path | None):
        settings = {"state.backend.type": backends[run]}
        if resume is not None:
            settings.update(recovery_settings(resume))
        env = checkpointed_env(
            make_env, tmp_path / f"checkpoints-{run}", PARALLELISMS[run], settings=settings
        )
        build(env, out, report_dir, f"run{run}", PARALLELISMS[run])
        return env

    first = stop_with_savepoint_at_first_epoch(env_for(0, None), tmp_path / "savepoints")
    check_savepoint(spark, first, 2, PER_EPOCH)
    assert first.rpartition("/")[2].startswith("savepoint-")
    meta = json.loads(Path(first.removeprefix("file://"), "_metadata").read_text())["body"]
    keyed = [s["keyed"] for s in meta["operators"]["state-kinds"]["subtasks"]]
    assert {k["backend"] for k in keyed} == {"canonical"}
    files = {h[0] for k in keyed for h in k["groups"].values()}
    assert files and not any(f.startswith(("/", "file:")) for f in files)  # relative paths
    moved = tmp_path / "elsewhere" / "first"
    shutil.copytree(first.removeprefix("file://"), moved)
    shutil.rmtree(first.removeprefix("file://"))
    closed = reports(report_dir, "run0", "close")
    before = [r for i in sorted(closed) for r in seen(closed[i])]
    assert sorted(before) == sorted(RECORDS[:PER_EPOCH])

    second = stop_with_savepoint_at_first_epoch(env_for(1, moved), tmp_path / "savepoints")
    check_savepoint(spark, second, 3, 2 * PER_EPOCH)
    opened = reports(report_dir, "run1", "open")
    assert sorted(opened) == [0, 1, 2] and all(r["is_restored"] for r in opened.values())
    # list state: the old subtasks' elements in their order, in round-robin chunks
    chunks = [seen(opened[i]) for i in range(3)]
    share, extra = divmod(len(before), 3)
    assert [len(c) for c in chunks] == [share + (i < extra) for i in range(3)]
    assert [r for chunk in chunks for r in chunk] == before
    # union state: both old subtasks' counts everywhere; broadcast state: a copy
    old_counts = sorted([i, len(closed[i]["seen"])] for i in closed)
    assert all(r["counts"] == old_counts for r in opened.values())
    assert all(r["latest"] == {"epoch": 1} for r in opened.values())
    closed = reports(report_dir, "run1", "close")
    after_two = [r for i in sorted(closed) for r in seen(closed[i])]

    # the state processor's copy of the savepoint holds the operator state itself
    copied = SavepointWriter.from_existing_savepoint(spark, second).write(str(tmp_path / "copy"))
    shutil.rmtree(second.removeprefix("file://"))
    check_operator_state_read(SavepointReader.read(spark, copied), closed)

    env_for(2, copied).execute("third run")
    (opened,) = reports(report_dir, "run2", "open").values()
    assert sorted(seen(opened)) == sorted(after_two)
    assert [c for _, c in opened["counts"]] == [len(closed[i]["seen"]) for i in range(3)]
    assert opened["latest"] == {"epoch": 2}
    (final,) = reports(report_dir, "run2", "close").values()
    assert sorted(seen(final)) == sorted(RECORDS)  # each record once

    assert_same_lines(committed_lines(out), expected_lines(PARALLELISMS))
