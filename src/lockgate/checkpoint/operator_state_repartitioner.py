"""Operator state on a restore (Flink's RoundRobinOperatorStateRepartitioner).

Per state, by its mode:
- list state (SPLIT_DISTRIBUTE): at the same parallelism each subtask keeps its own
  elements; at another, the elements of all old subtasks, in old-subtask order, are cut
  into contiguous chunks of ``total // p``, and ``total % p`` subtasks get one more. The
  subtasks that get one more are counted from a start that moves on from state to state
  (to the first subtask that got none), so that the extras spread over the subtasks;
- union list state: every subtask gets the elements of all old subtasks;
- broadcast state: new subtask i gets the copy of old subtask ``i % old parallelism``.
"""

from __future__ import annotations

from collections.abc import Callable

from lockgate.checkpoint.metadata import CheckpointFormatError
from lockgate.state.operator_state_handle import (
    BROADCAST,
    KINDS,
    UNION,
    OperatorStateHandle,
    OperatorStatePart,
)


def repartition(
    handles: list[OperatorStateHandle | None], parallelism: int, where: str
) -> list[list[OperatorStatePart]]:
    """The parts of ``handles`` (one per old subtask, in order) each of ``parallelism`` new
    subtasks restores; ``where`` names the operator in errors."""
    old = len(handles)
    # new subtask -> old subtask -> state -> element range
    ranges: list[dict[int, dict[str, tuple[int, int]]]] = [{} for _ in range(parallelism)]

    def give(target: int, source: int, name: str, start: int, end: int) -> None:
        ranges[target].setdefault(source, {})[name] = (start, end)

    start = 0
    for name, mode in sorted(state_modes(handles, where).items()):
        counts = [
            (i, h.states[name].count) for i, h in enumerate(handles) if h and name in h.states
        ]
        if mode == UNION:
            for target in range(parallelism):
                for source, count in counts:
                    give(target, source, name, 0, count)
        elif mode == BROADCAST or old == parallelism:
            for target in range(parallelism):
                source = target % old
                handle = handles[source]
                if handle is not None and name in handle.states:
                    give(target, source, name, 0, handle.states[name].count)
        else:
            start = split_state(counts, parallelism, start, name, give)
    return [
        [_part(handles[source], spans) for source, spans in sorted(subtask.items())]
        for subtask in ranges
    ]


def _part(
    handle: OperatorStateHandle | None, spans: dict[str, tuple[int, int]]
) -> OperatorStatePart:
    assert handle is not None  # only handles that name a state give ranges
    return OperatorStatePart(handle, spans)


def split_state(
    counts: list[tuple[int, int]],
    parallelism: int,
    start: int,
    name: str,
    give: Callable[[int, int, str, int, int], None],
) -> int:
    """Cut the elements of old subtasks ``counts`` ((subtask, elements), in order) into
    chunks for the new subtasks, counted from ``start``: ``give(new subtask, old subtask,
    name, first, end)`` for each; returns the next state's start. (The state processor cuts
    a DataFrame's elements so, its Spark partitions in the place of old subtasks.)"""
    total = sum(count for _, count in counts)
    base, extra = divmod(total, parallelism)
    segments = iter(counts)
    source, left = next(segments, (0, 0))
    offset = 0  # into the current old subtask's elements
    next_start = start
    for step in range(parallelism):
        target = (start + step) % parallelism
        if step == extra:
            next_start = target
        take = base + (1 if step < extra else 0)
        while take:
            if not left:
                source, left = next(segments)
                offset = 0
            chunk = min(take, left)
            give(target, source, name, offset, offset + chunk)
            offset += chunk
            left -= chunk
            take -= chunk
    return next_start


def state_modes(handles: list[OperatorStateHandle | None], where: str) -> dict[str, str]:
    """State name -> mode of the states of ``handles`` (one per subtask, in order); a state
    in two modes fails naming the subtask."""
    modes: dict[str, str] = {}
    for index, handle in enumerate(handles):
        for name, meta in (handle.states if handle else {}).items():
            if modes.setdefault(name, meta.mode) != meta.mode:
                raise CheckpointFormatError(
                    f"{where}: state {name!r} of subtask {index} is {KINDS[meta.mode]} state, "
                    f"but {KINDS[modes[name]]} state in another subtask"
                )
    return modes
