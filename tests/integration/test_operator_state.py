"""Operator state of user functions (``CheckpointedFunction``): list state spread over the
subtasks round-robin, union state whole to each, broadcast state copied; across
savepoints at parallelism 2, 3 and 1, with no element lost or repeated; and read by the
state processor, mode by mode."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest
from exactly_once_job import (
    MAX_RECORDS,
    PER_SPLIT,
    checkpointed_env,
    records,
    recovery_settings,
    stop_with_savepoint_at_first_epoch,
)
from pyspark.sql import types as T

from lockgate.common import Types
from lockgate.datastream import CheckpointedFunction, MapFunction
from lockgate.datastream.connectors import DiscardingSink
from lockgate.datastream.state import ListStateDescriptor, MapStateDescriptor
from lockgate.state_processor import SavepointReader, SavepointWriter, StateProcessorError

SPLITS = 2


class Tally(MapFunction, CheckpointedFunction):
    """Keeps every record it saw in list state, its count in union state, and the latest
    epoch in broadcast state; reports what it restored, and at the end what it holds."""

    def __init__(self, reports: Path, run: str):
        self.reports = str(reports)
        self.run = run

    def initialize_state(self, context):
        store = context.get_operator_state_store()
        self.seen_state = store.get_list_state(ListStateDescriptor("seen"))
        self.counts = store.get_union_list_state(ListStateDescriptor("counts"))
        self.latest = store.get_broadcast_state(MapStateDescriptor("latest"))
        self.seen = [tuple(r) for r in self.seen_state.get()]
        self.restored = {
            "is_restored": context.is_restored(),
            "seen": self.seen[:],
            "counts": sorted(self.counts.get()),
            "latest": dict(self.latest.items()),
        }

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()
        self._report("open", self.restored)

    def map(self, value):
        self.seen.append(tuple(value))
        return value

    def snapshot_state(self, context):
        self.seen_state.update(self.seen)
        self.counts.update([[self.index, len(self.seen)]])
        self.latest.put("epoch", context.get_checkpoint_id())

    def close(self):
        self._report("close", {"seen": self.seen})

    def _report(self, when, body):
        name = f"{self.run}-{when}-{self.index}-{uuid.uuid4().hex}.json"
        (Path(self.reports) / name).write_text(json.dumps(body))


def reports(directory: Path, run: str, when: str) -> dict[int, dict]:
    found = {}
    for path in directory.glob(f"{run}-{when}-*.json"):
        index = int(path.name.split("-")[2])
        assert index not in found, f"subtask {index} of {run} opened twice"
        found[index] = json.loads(path.read_text())
    return found


def build(env, reports_dir: Path, run: str, parallelism: int) -> None:
    (
        env.from_collection(records(SPLITS))
        .set_parallelism(SPLITS)
        .uid("numbers")
        .rebalance()
        .map(Tally(reports_dir, run))
        .set_parallelism(parallelism)
        .uid("tally")
        .sink_to(DiscardingSink())
    )


def test_operator_state_is_redistributed_by_mode_across_savepoints(make_env, spark, tmp_path):
    report_dir = tmp_path / "reports"
    report_dir.mkdir()

    env = checkpointed_env(make_env, tmp_path / "checkpoints-1", 2)
    build(env, report_dir, "one", 2)
    first = stop_with_savepoint_at_first_epoch(env, tmp_path / "savepoints")
    opened = reports(report_dir, "one", "open")
    assert sorted(opened) == [0, 1] and not any(r["is_restored"] for r in opened.values())
    closed = reports(report_dir, "one", "close")
    before = [tuple(r) for i in sorted(closed) for r in closed[i]["seen"]]
    assert len(before) == SPLITS * MAX_RECORDS

    env = checkpointed_env(
        make_env, tmp_path / "checkpoints-2", 3, settings=recovery_settings(first)
    )
    build(env, report_dir, "two", 3)
    second = stop_with_savepoint_at_first_epoch(env, tmp_path / "savepoints")
    opened = reports(report_dir, "two", "open")
    assert sorted(opened) == [0, 1, 2] and all(r["is_restored"] for r in opened.values())
    # list state: the old subtasks' elements in order, in chunks of 27, 27 and 26
    chunks = [[tuple(r) for r in opened[i]["seen"]] for i in range(3)]
    assert [len(c) for c in chunks] == [27, 27, 26]
    assert [r for chunk in chunks for r in chunk] == before
    # union state: every subtask has both old subtasks' counts; broadcast state: a copy
    assert all(r["counts"] == [[0, 40], [1, 40]] for r in opened.values())
    assert all(r["latest"] == {"epoch": 1} for r in opened.values())
    closed = reports(report_dir, "two", "close")
    after_two = [tuple(r) for i in sorted(closed) for r in closed[i]["seen"]]
    assert len(after_two) == len(set(after_two)) == 2 * SPLITS * MAX_RECORDS

    # the state processor's copy of the savepoint holds the operator state itself
    copied = SavepointWriter.from_existing_savepoint(spark, second).write(str(tmp_path / "copy"))
    shutil.rmtree(second.removeprefix("file://"))
    check_read_by_the_state_processor(SavepointReader.read(spark, copied), closed)
    env = checkpointed_env(
        make_env, tmp_path / "checkpoints-3", 1, settings=recovery_settings(copied)
    )
    build(env, report_dir, "three", 1)
    env.execute("third run")
    (opened,) = reports(report_dir, "three", "open").values()
    assert sorted(map(tuple, opened["seen"])) == sorted(after_two)
    assert [c for _, c in opened["counts"]] == [len(closed[i]["seen"]) for i in range(3)]
    assert opened["latest"] == {"epoch": 2}
    (final,) = reports(report_dir, "three", "close").values()
    assert sorted(map(tuple, final["seen"])) == sorted(records(SPLITS))  # each record once
    assert len(final["seen"]) == SPLITS * PER_SPLIT


def check_read_by_the_state_processor(reader: SavepointReader, closed: dict[int, dict]) -> None:
    """The operator state of the second run's savepoint (``closed``: what its subtasks held)
    as the state processor reads it."""
    modes = (("counts", "union list"), ("latest", "broadcast"), ("seen", "list"))
    metadata = reader.metadata().filter("uid = 'tally'").collect()
    assert {(r.subtask, tuple(sorted(r.operator_states.items()))) for r in metadata} == {
        (i, modes) for i in range(3)
    }
    # list state: every subtask's elements, in order, typed by the descriptor
    element = Types.TUPLE([Types.INT(), Types.INT()])
    seen = reader.list_state("tally", ListStateDescriptor("seen", element))
    assert seen.schema.simpleString() == "struct<subtask:int,value:struct<f0:int,f1:int>>"
    assert [(r.subtask, tuple(r.value)) for r in seen.collect()] == [
        (i, tuple(r)) for i in range(3) for r in closed[i]["seen"]
    ]
    # union state: each subtask's [index, count] once; its type inferred
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
