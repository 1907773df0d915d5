"""Operator state on a restore, as Flink's RoundRobinOperatorStateRepartitioner spreads it."""

from __future__ import annotations

import pytest

from lockgate.checkpoint.metadata import CheckpointFormatError
from lockgate.checkpoint.operator_state_repartitioner import repartition
from lockgate.state.operator_state_handle import OperatorStateHandle, StateMeta


def handle(name: str, **states: tuple[str, int]) -> OperatorStateHandle:
    return OperatorStateHandle(name, 0, 0, {n: StateMeta(*meta) for n, meta in states.items()})


def taken(parts, state: str) -> list[tuple[str, int, int]]:
    return [(p.handle.file, *p.ranges[state]) for p in parts if state in p.ranges]


def test_list_state_is_cut_into_contiguous_chunks_in_old_subtask_order():
    old = [handle("h0", s=("split", 5)), handle("h1", s=("split", 2))]
    new = repartition(old, 3, "op")
    assert [taken(parts, "s") for parts in new] == [
        [("h0", 0, 3)],
        [("h0", 3, 5)],
        [("h1", 0, 2)],
    ]


def test_the_subtasks_with_an_extra_element_rotate_from_state_to_state():
    # 4 elements over 3 subtasks: one extra each time, given from where the last one stopped
    old = [handle("h0", a=("split", 4), b=("split", 4), c=("split", 4))]
    new = repartition(old, 3, "op")
    sizes = {
        state: [sum(end - start for _, start, end in taken(parts, state)) for parts in new]
        for state in "abc"
    }
    assert sizes == {"a": [2, 1, 1], "b": [1, 2, 1], "c": [1, 1, 2]}
    assert taken(new[1], "b") == [("h0", 0, 2)]  # b's first chunk went to subtask 1


def test_union_state_goes_whole_to_every_subtask_even_at_the_same_parallelism():
    old = [handle("h0", u=("union", 2), s=("split", 1)), handle("h1", u=("union", 1))]
    for parallelism in (2, 3):
        new = repartition(old, parallelism, "op")
        assert all(taken(parts, "u") == [("h0", 0, 2), ("h1", 0, 1)] for parts in new)
    same = repartition(old, 2, "op")
    assert [taken(parts, "s") for parts in same] == [[("h0", 0, 1)], []]


def test_broadcast_state_is_copied_from_subtask_i_modulo_the_old_parallelism():
    old = [handle(f"h{i}", r=("broadcast", 3)) for i in range(2)]
    new = repartition(old, 5, "op")
    assert [taken(parts, "r") for parts in new] == [[(f"h{i % 2}", 0, 3)] for i in range(5)]


def test_a_state_with_two_modes_is_refused():
    old = [handle("h0", s=("split", 1)), handle("h1", s=("union", 1))]
    with pytest.raises(
        CheckpointFormatError,
        match=r"op: state 's' of subtask 1 is union list state, but list state in another",
    ):
        repartition(old, 2, "op")


def test_no_state_and_missing_subtasks_give_empty_parts():
    assert repartition([None, None], 3, "op") == [[], [], []]
    new = repartition([None, handle("h1", s=("split", 3))], 1, "op")
    assert taken(new[0], "s") == [("h1", 0, 3)]
