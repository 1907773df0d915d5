"""Operator state (list, union list, broadcast) of a savepoint's subtasks: which subtask
files the reader's Spark tasks read for each mode, the rows they decode, and the errors of
an unknown state or one asked for in another mode (all before Spark is needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.checkpoint.metadata import (
    CheckpointFormatError,
    CheckpointMetadata,
    OperatorState,
    OperatorSubtaskState,
)
from lockgate.common.types import Row
from lockgate.core.fs.storage import Storage
from lockgate.state.descriptors import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor
from lockgate.state.manifests import CanonicalManifest
from lockgate.state.operator_state_backend import OperatorStateBackend
from lockgate.state.operator_state_handle import (
    BROADCAST,
    SPLIT_DISTRIBUTE,
    UNION,
    OperatorStateHandle,
    StateMeta,
)
from lockgate.state_processor.errors import StateProcessorError, task_failure
from lockgate.state_processor.savepoint_reader import SavepointReader, operator_state_tasks
from lockgate.state_processor.task_records import dump
from lockgate.state_processor.tasks.operator_state_rows import read_operator_state_rows

RULES = {"limit": 10, "names": ("a", "b")}


def subtask_file(storage: Storage, index: int) -> OperatorStateHandle:
    """Subtask ``index``'s operator state as a CheckpointedFunction leaves it: its own
    buffered elements (list), its own offset (union), and the shared rules (broadcast)."""
    backend = OperatorStateBackend(f"subtask {index}", [])
    backend.get_list_state(ListStateDescriptor("buffer")).update(
        [(index, n) for n in range(index + 1)]
    )
    backend.get_union_list_state(ListStateDescriptor("offsets")).add(Row(split=index, at=index))
    backend.get_broadcast_state(MapStateDescriptor("rules")).put_all(RULES)
    handle = backend.snapshot(storage, f"op/{index}-operator.lgos", reuse=False)
    assert handle is not None
    return handle


def operator(handles: list[OperatorStateHandle | None], uid: str = "buffering") -> OperatorState:
    subtasks = tuple(
        OperatorSubtaskState(index, None, None, None, managed=handle)
        for index, handle in enumerate(handles)
    )
    # in reverse order: the reader goes by subtask index, not by the order in _metadata
    return OperatorState(uid, "Buffering", len(handles), 128, subtasks[::-1])


@pytest.fixture
def three(tmp_path: Path) -> OperatorState:
    storage = Storage(str(tmp_path))
    return operator([subtask_file(storage, index) for index in range(3)])


def rows(state: OperatorState, name: str, mode: str) -> list[tuple]:
    tasks = operator_state_tasks(state, name, mode, "savepoint sp")
    return [row for task in tasks for row in read_operator_state_rows(dump(task))]


def test_list_state_is_every_element_of_every_subtask(three):
    tasks = operator_state_tasks(three, "buffer", SPLIT_DISTRIBUTE, "")
    assert [task.subtask for task in tasks] == [0, 1, 2]  # a Spark task per subtask file
    assert rows(three, "buffer", SPLIT_DISTRIBUTE) == [
        (0, (0, 0)),
        (1, (1, 0)),
        (1, (1, 1)),
        (2, (2, 0)),
        (2, (2, 1)),
        (2, (2, 2)),
    ]


def test_union_state_is_what_each_subtask_wrote_once(three):
    found = rows(three, "offsets", UNION)
    assert [(subtask, value.asDict()) for subtask, value in found] == [
        (i, {"split": i, "at": i}) for i in range(3)
    ]  # a Row reaches Spark with its field names


def test_broadcast_state_is_one_subtask_copy(three):
    (task,) = operator_state_tasks(three, "rules", BROADCAST, "")
    assert task.subtask == 0
    assert sorted(read_operator_state_rows(dump(task))) == [
        ("limit", 10),
        ("names", ("a", "b")),
    ]


def test_subtasks_without_the_state_are_left_out(tmp_path):
    storage = Storage(str(tmp_path))
    later = operator([None, subtask_file(storage, 1), None, subtask_file(storage, 3)])
    (task,) = operator_state_tasks(later, "rules", BROADCAST, "")
    assert task.subtask == 1  # the first copy there is
    assert [s for s, _ in rows(later, "buffer", SPLIT_DISTRIBUTE)] == [1, 1, 3, 3, 3, 3]


def test_an_unknown_state_fails_listing_the_operator_states_with_their_modes(three):
    listed = r"'buffer' \(list\), 'offsets' \(union list\), 'rules' \(broadcast\)"
    with pytest.raises(
        StateProcessorError,
        match=rf"savepoint sp: operator 'buffering' has no operator state 'nope'; its operator "
        rf"states: {listed}$",
    ):
        operator_state_tasks(three, "nope", SPLIT_DISTRIBUTE, "savepoint sp")
    with pytest.raises(
        StateProcessorError, match=r"no operator state 'x'; its operator states: none"
    ):
        operator_state_tasks(operator([None, None]), "x", UNION, "savepoint sp")


def test_keyed_state_asked_for_as_operator_state_says_so():
    keyed = OperatorSubtaskState(
        0, None, CanonicalManifest({"count": "value"}, {}), (0, 127), managed=None
    )
    mixed = OperatorState("counting", "Counting", 1, 128, (keyed,))
    with pytest.raises(
        StateProcessorError, match=r"no operator state 'count' \(it is keyed state: read it with"
    ):
        operator_state_tasks(mixed, "count", SPLIT_DISTRIBUTE, "savepoint sp")


@pytest.mark.parametrize(
    ("name", "mode", "message"),
    [
        (
            "offsets",
            SPLIT_DISTRIBUTE,
            "is union list state, not list state: read it with union_state",
        ),
        ("buffer", UNION, "is list state, not union list state: read it with list_state"),
        ("buffer", BROADCAST, "is list state, not broadcast state: read it with list_state"),
        ("rules", UNION, "is broadcast state, not union list state: read it with broadcast_state"),
    ],
)
def test_a_state_asked_for_in_another_mode_fails_naming_both(three, name, mode, message):
    with pytest.raises(
        StateProcessorError,
        match=rf"^savepoint sp: state '{name}' of operator 'buffering' {message}$",
    ):
        operator_state_tasks(three, name, mode, "savepoint sp")


def test_a_state_in_two_modes_is_a_damaged_checkpoint():
    first = OperatorStateHandle("file:///a", 1, 2, {"s": StateMeta(SPLIT_DISTRIBUTE, 1)})
    second = OperatorStateHandle("file:///b", 1, 2, {"s": StateMeta(UNION, 1)})
    with pytest.raises(
        CheckpointFormatError, match=r"operator 'buffering': state 's' of subtask 1 is union list"
    ):
        operator_state_tasks(operator([first, second]), "s", UNION, "savepoint sp")


def test_the_reader_checks_uid_state_and_descriptor_before_spark(three):
    reader = SavepointReader(None, CheckpointMetadata("job", 3, 3, {"buffering": three}), "sp")
    with pytest.raises(StateProcessorError, match=r"no operator with uid 'nope'.*'buffering'"):
        reader.list_state("nope", "buffer")
    with pytest.raises(StateProcessorError, match=r"'offsets' of operator 'buffering' is union"):
        reader.list_state("buffering", ListStateDescriptor("offsets"))
    with pytest.raises(StateProcessorError, match=r"'buffer' of operator 'buffering' is list"):
        reader.broadcast_state("buffering", MapStateDescriptor("buffer"))
    with pytest.raises(
        StateProcessorError, match=r"union_state takes a state name or a ListStateDescriptor"
    ):
        reader.union_state("buffering", ValueStateDescriptor("offsets"))


def test_a_damaged_file_fails_the_task_naming_it(tmp_path):
    storage = Storage(str(tmp_path))
    handle = subtask_file(storage, 0)
    (tmp_path / "op" / "0-operator.lgos").write_bytes(b"LGOS")
    (task,) = operator_state_tasks(operator([handle]), "rules", BROADCAST, "")
    with pytest.raises(ValueError, match=r"0-operator.lgos is damaged") as failed:
        list(read_operator_state_rows(dump(task)))
    # as a Spark job's failure carries it, inside the task's traceback
    reported = task_failure(Exception(f"Traceback ...\n{failed.exconly()}\n\tat org.apache"))
    assert reported is not None and str(reported) == str(failed.value)
