"""Which state each subtask of a restored operator gets (Flink's StateAssignmentOperation).

At the parallelism the state was taken at, subtask i gets what subtask i had. At another
parallelism (a rescale), keyed state moves by key group with Flink's formulas: new subtask
i takes the key groups of its range from every old subtask whose range overlaps it. The
per-subtask state of the built-in operators starts over, as Flink's watermark generators
do: a source's split watermarks, an assigner's highest timestamp, a sink's part counter (a
sink's pending committables are committed by the restore itself). An operator's watermark
becomes the lowest of its old subtasks', so that nothing that was on time becomes late.
The operator state of user functions is redistributed by its mode
(``operator_state_repartitioner``), at the same parallelism too: union state goes to all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lockgate.checkpoint.metadata import CheckpointFormatError, OperatorState
from lockgate.checkpoint.operator_state_repartitioner import repartition
from lockgate.state.key_groups import KeyGroupRange, key_group_range
from lockgate.state.manifests import (
    KeyedStateManifest,
    KeyGroupsManifest,
    RescalePart,
    RocksDBManifest,
    RocksDBRescaleManifest,
)
from lockgate.state.operator_state_handle import OperatorStatePart
from lockgate.state.snapshot import GroupHandle


@dataclass(frozen=True)
class SubtaskStateAssignment:
    keyed: KeyedStateManifest | None
    operator_state: Any  # JSON, or None
    watermark: int | None
    managed: list[OperatorStatePart]  # of its user function's operator state


def assign_state(
    operator: OperatorState, parallelism: int, max_parallelism: int, keyed: bool, where: str
) -> list[SubtaskStateAssignment]:
    """The state of each of ``parallelism`` new subtasks; ``where`` names the operator (and
    the checkpoint) in errors."""
    if operator.max_parallelism != max_parallelism:
        raise CheckpointFormatError(
            f"{where} has max parallelism {operator.max_parallelism}, but the job now has "
            f"{max_parallelism}: key groups cannot be split or merged (set the operator's "
            f"max parallelism, or 'pipeline.max-parallelism', to {operator.max_parallelism})"
        )
    subtasks = sorted(operator.subtasks, key=lambda s: s.index)
    if [s.index for s in subtasks] != list(range(operator.parallelism)):
        raise CheckpointFormatError(
            f"{where} lists subtasks {[s.index for s in subtasks]} for parallelism "
            f"{operator.parallelism}"
        )
    managed = repartition([s.managed for s in subtasks], parallelism, where)
    if parallelism == operator.parallelism:
        return [
            SubtaskStateAssignment(s.keyed if keyed else None, s.operator_state, s.watermark, parts)
            for s, parts in zip(subtasks, managed, strict=True)
        ]
    watermarks = [s.watermark for s in subtasks]
    watermark = None if None in watermarks else min(w for w in watermarks if w is not None)
    keyed_parts = _keyed_parts(operator, where) if keyed else []
    assignments = []
    for index in range(parallelism):
        key_groups = key_group_range(max_parallelism, parallelism, index)
        manifest = _rescaled(keyed_parts, key_groups) if keyed_parts else None
        assignments.append(SubtaskStateAssignment(manifest, None, watermark, managed[index]))
    return assignments


def _keyed_parts(
    operator: OperatorState, where: str
) -> list[tuple[KeyGroupRange, KeyedStateManifest]]:
    parts = []
    for subtask in operator.subtasks:
        expected = key_group_range(operator.max_parallelism, operator.parallelism, subtask.index)
        if subtask.key_groups is not None and subtask.key_groups != (expected.start, expected.end):
            raise CheckpointFormatError(
                f"{where}: subtask {subtask.index} lists key groups {list(subtask.key_groups)}, "
                f"not [{expected.start}, {expected.end}] as parallelism "
                f"{operator.parallelism} gives"
            )
        if subtask.keyed is not None and not subtask.keyed.is_empty():
            parts.append((expected, subtask.keyed))
    backends = {manifest.backend for _, manifest in parts}
    if len(backends) > 1:
        raise CheckpointFormatError(
            f"{where}: subtasks were written by different backends ({', '.join(sorted(backends))})"
        )
    return parts


def _rescaled(
    parts: list[tuple[KeyGroupRange, KeyedStateManifest]], key_groups: KeyGroupRange
) -> KeyedStateManifest | None:
    overlapping = [(old, manifest) for old, manifest in parts if old.intersection(key_groups)]
    if not overlapping:
        return None
    first = overlapping[0][1]
    if isinstance(first, KeyGroupsManifest):
        kinds: dict[str, str] = {}
        groups: dict[int, GroupHandle] = {}
        for _, manifest in overlapping:
            assert isinstance(manifest, KeyGroupsManifest)
            kinds.update(manifest.kinds)
            groups.update(manifest.within(key_groups).groups)
        return type(first)(kinds, groups)
    rocksdb = [RescalePart(old, m) for old, m in overlapping if isinstance(m, RocksDBManifest)]
    return RocksDBRescaleManifest(tuple(rocksdb))
