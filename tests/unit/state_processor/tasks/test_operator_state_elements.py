"""Operator state on its way into a new savepoint, inside the Spark tasks: DataFrame rows
become elements placed on subtasks (cut into chunks as a restore cuts list state, by a
subtask column, or copied to every subtask for broadcast state), kept elements go on as
they are, and each subtask's elements become an operator-state file that a restore reads."""

from __future__ import annotations

import pytest
from pyspark.sql import Row as SparkRow

from lockgate.checkpoint.operator_state_repartitioner import repartition
from lockgate.common.types import Row
from lockgate.core.fs.storage import Storage
from lockgate.state.descriptors import ListStateDescriptor, MapStateDescriptor
from lockgate.state.operator_state_backend import OperatorStateBackend
from lockgate.state.operator_state_handle import (
    BROADCAST,
    SPLIT_DISTRIBUTE,
    UNION,
    OperatorStateHandle,
    OperatorStatePart,
    pickled,
    read_pickled_part,
)
from lockgate.state_processor.errors import StateProcessorError
from lockgate.state_processor.savepoint_writer import chunks_of
from lockgate.state_processor.task_records import (
    CountedPartition,
    OperatorStateBootstrapTask,
    OperatorStateReadTask,
    OperatorStateWriteTask,
    WrittenOperatorState,
    dump,
)
from lockgate.state_processor.tasks.operator_state_elements import (
    bootstrap_elements,
    count_rows,
    existing_elements,
    write_operator_state_subtask,
)


def bootstrap_task(mode=SPLIT_DISTRIBUTE, by_subtask=False, parallelism=2, chunks=(), state="seen"):
    key_column = "key" if mode == BROADCAST else ""
    return OperatorStateBootstrapTask(
        "tally", state, mode, key_column, "value", by_subtask, parallelism, tuple(chunks)
    )


def elements(task, partitions):
    """The elements of Spark partitions ``partitions`` (lists of rows)."""
    return [
        element
        for index, rows in enumerate(partitions)
        for element in bootstrap_elements(dump(task), index, rows)
    ]


def chunked(partitions, parallelism):
    counted = [
        CountedPartition.load(text)
        for index, rows in enumerate(partitions)
        for text in count_rows(index, iter(rows))
    ]
    return bootstrap_task(parallelism=parallelism, chunks=chunks_of(counted, parallelism))


def by_subtask(found):
    """Subtask -> its elements, in the order the write sorts them into."""
    placed: dict[int, list] = {}
    for (subtask, _, _), blob in sorted(found):
        placed.setdefault(subtask, []).append(blob)
    return placed


def test_elements_are_cut_into_contiguous_chunks_in_partition_order():
    # 7 rows in Spark partitions of 3, 0 and 4 rows, over 3 subtasks: 3, 2 and 2 elements
    partitions = [[(0,), (1,), (2,)], [], [(3,), (4,), (5,), (6,)]]
    task = chunked(partitions, 3)
    assert task.chunks == ((0, 0, 0, 3), (1, 1, 0, 0), (2, 1, 0, 2), (2, 2, 2, 4))
    placed = by_subtask(elements(task, partitions))
    assert placed == {
        0: [pickled(n) for n in (0, 1, 2)],
        1: [pickled(3), pickled(4)],
        2: [pickled(5), pickled(6)],
    }
    # fewer elements than subtasks: the first subtasks get one each, the others none
    few = [[("a",)], [("b",)]]
    assert by_subtask(elements(chunked(few, 3), few)) == {0: [pickled("a")], 1: [pickled("b")]}


def test_a_subtask_column_places_each_element_in_partition_order():
    task = bootstrap_task(by_subtask=True, parallelism=2)
    partitions = [[("x", 1), ("y", 0)], [("z", 1)]]
    assert by_subtask(elements(task, partitions)) == {
        0: [pickled("y")],
        1: [pickled("x"), pickled("z")],  # partition 0's before partition 1's
    }
    for bad in (2, -1, None):
        with pytest.raises(
            StateProcessorError,
            match=rf"operator 'tally', list state 'seen': column 'subtask' has {bad}, not a "
            r"subtask of the operator's 2 \(drop the column",
        ):
            elements(task, [[("x", bad)]])


def test_struct_values_are_tuples_or_rows_again_and_nulls_are_refused():
    task = bootstrap_task(UNION, by_subtask=True, parallelism=1)
    rows = [(SparkRow(f0="u0", f1=1), 0), (SparkRow(split=3, at=bytearray(b"z")), 0), ([1, 2], 0)]
    blobs = [blob for _, blob in elements(task, [rows])]
    assert blobs == [pickled(("u0", 1)), pickled(Row(split=3, at=b"z")), pickled([1, 2])]
    with pytest.raises(
        StateProcessorError,
        match=r"operator 'tally', union list state 'seen': column 'value' is null in a row",
    ):
        elements(task, [[(None, 0)]])


def test_rows_other_than_those_counted_fail_the_task():
    task = chunked([[(1,), (2,)]], 2)
    for rows in ([(1,), (2,), (3,)], [(1,)]):
        with pytest.raises(
            StateProcessorError, match=r"Spark partition 0 of the DataFrame has other rows than"
        ):
            elements(task, [rows])


def test_broadcast_entries_go_to_every_subtask():
    task = bootstrap_task(BROADCAST, parallelism=3)
    found = elements(task, [[("b", 2)], [("a", SparkRow(_1=1, _2="x"))]])
    assert by_subtask(found) == {
        i: [pickled(("a", (1, "x"))), pickled(("b", 2))] for i in range(3)
    }  # ordered by key
    with pytest.raises(
        StateProcessorError,
        match=r"broadcast state 'seen': the key \[1\] in column 'key' is not hashable",
    ):
        elements(task, [[([1], 2)]])


def write(tmp_path, found, modes, index=0, key_columns=None):
    task = OperatorStateWriteTask("tally", str(tmp_path), "tally", modes, key_columns or {}, False)
    mine = sorted(e for e in found if e[0][0] == index)
    (text,) = write_operator_state_subtask(dump(task), index, mine)
    written = WrittenOperatorState.load(text)
    assert written.subtask == index
    return written.handle


def restored(tmp_path, handle: OperatorStateHandle) -> OperatorStateBackend:
    absolute = handle.map_url(Storage(str(tmp_path)).url_of)
    return OperatorStateBackend("tally subtask", [OperatorStatePart.whole(absolute)])


MODES = {"seen": SPLIT_DISTRIBUTE, "counts": UNION, "latest": BROADCAST}


def every_state(parallelism):
    """Elements of list state "seen" (cut into chunks), union state "counts" (by a subtask
    column) and broadcast state "latest"."""
    seen = [[(("u0", 0),), (("u1", 1),)], [(("u2", 2),)]]
    found = elements(chunked(seen, parallelism), seen)
    counts = bootstrap_task(UNION, by_subtask=True, parallelism=parallelism, state="counts")
    found += elements(counts, [[([0, 5], 0)]])
    latest = bootstrap_task(BROADCAST, parallelism=parallelism, state="latest")
    return found + elements(latest, [[("epoch", 7)], [("rules", {"a": 1})]])


def test_written_subtasks_restore_into_the_operator_state_backend(tmp_path):
    handles = [write(tmp_path, every_state(2), MODES, index) for index in range(2)]
    assert [h.file.rpartition("-")[0] for h in handles] == ["tally/0", "tally/1"]
    assert all(h.file.endswith(".lgos") for h in handles)
    # every subtask's file names every state, with elements or not
    assert [{n: m.count for n, m in h.states.items()} for h in handles] == [
        {"seen": 2, "counts": 1, "latest": 2},
        {"seen": 1, "counts": 0, "latest": 2},
    ]
    first, second = (restored(tmp_path, h) for h in handles)
    assert first.get_list_state(ListStateDescriptor("seen")).get() == [("u0", 0), ("u1", 1)]
    assert second.get_list_state(ListStateDescriptor("seen")).get() == [("u2", 2)]
    assert first.get_union_list_state(ListStateDescriptor("counts")).get() == [[0, 5]]
    for backend in (first, second):
        latest = backend.get_broadcast_state(MapStateDescriptor("latest"))
        assert dict(latest.items()) == {"epoch": 7, "rules": {"a": 1}}

    # a restore at 3 cuts the list state again and gives the union to all
    absolute = [h.map_url(Storage(str(tmp_path)).url_of) for h in handles]
    parts = repartition(absolute, 3, "tally")
    at_three = [OperatorStateBackend(f"subtask {i}", p) for i, p in enumerate(parts)]
    seen = [b.get_list_state(ListStateDescriptor("seen")).get() for b in at_three]
    assert seen == [[("u0", 0)], [("u1", 1)], [("u2", 2)]]
    assert all(
        b.get_union_list_state(ListStateDescriptor("counts")).get() == [[0, 5]] for b in at_three
    )


def test_two_rows_of_one_broadcast_key_fail_naming_it(tmp_path):
    latest = bootstrap_task(BROADCAST, parallelism=1, state="latest")
    found = elements(latest, [[("epoch", 1)], [("epoch", 2)]])
    with pytest.raises(
        StateProcessorError,
        match=r"operator 'tally', broadcast state 'latest': the key 'epoch' is in more than "
        r"one row \(column 'k'\)",
    ):
        write(tmp_path, found, {"latest": BROADCAST}, key_columns={"latest": "k"})
    # equal keys are one key, as in a dict
    with pytest.raises(StateProcessorError, match=r"the key 1 is in more than one row"):
        write(
            tmp_path,
            elements(latest, [[(1, "a"), (1.0, "b")]]),
            {"latest": BROADCAST},
            key_columns={"latest": "key"},
        )


def test_kept_elements_go_on_as_they_are(tmp_path):
    handle = write(tmp_path, every_state(1), MODES)
    absolute = handle.map_url(Storage(str(tmp_path)).url_of)
    task = OperatorStateReadTask(4, "seen", OperatorStatePart(absolute, {"seen": (0, 3)}))
    kept = list(existing_elements(dump(task)))
    assert [(subtask, name) for (subtask, name, _), _ in kept] == [(4, "seen")] * 3
    ((_, _, blobs),) = read_pickled_part(OperatorStatePart(absolute, {"seen": (0, 3)}))
    assert [blob for _, blob in sorted(kept)] == blobs  # the same bytes, in their order
