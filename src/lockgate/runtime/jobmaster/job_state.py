"""The driver's view of a job's progress: source positions and state versions.

After every epoch it holds, per subtask, the manifest of its latest keyed-state version
(key group -> blob in a file), its operator states (sink committables, part counters),
and each source's enumerator. A checkpoint is this view written down; a restore puts a
checkpoint's view back.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

from lockgate.checkpoint.metadata import (
    CheckpointFormatError,
    CheckpointMetadata,
    OperatorState,
    OperatorSubtaskState,
)
from lockgate.checkpoint.state_assignment import assign_state
from lockgate.common.records import RecordFormatError
from lockgate.common.watermark_strategy import LONG_MAX
from lockgate.core.source import SplitEnumerator, SplitProgress
from lockgate.core.two_phase_commit import Committer
from lockgate.graph.job_graph import JobGraph, JobVertex
from lockgate.graph.operator_spec import OperatorSpec
from lockgate.runtime.messages.acknowledgement import SubtaskAck
from lockgate.runtime.messages.task_deployment import SubtaskRestore
from lockgate.state import manifests
from lockgate.state.key_groups import key_group_range
from lockgate.state.manifests import KeyedStateManifest
from lockgate.state.operator_state_handle import OperatorStateHandle, OperatorStatePart

# operator uid -> the parts of operator state its function restores from
ManagedParts = dict[str, list[OperatorStatePart]]

log = logging.getLogger(__name__)


def whole_parts(handles: Mapping[str, OperatorStateHandle]) -> ManagedParts:
    """What a subtask that acknowledged ``handles`` restores from: all of each."""
    return {uid: [OperatorStatePart.whole(handle)] for uid, handle in handles.items()}


def adopt_max_parallelism(job: JobGraph, checkpoint: CheckpointMetadata, path: str) -> None:
    """An operator whose max parallelism was not set takes the one its state was taken with,
    as in Flink, since key groups cannot be split or merged; a set one must equal it (the
    restore checks). Runs before the job graph goes to the executors."""
    for vertex in job.vertices:
        for node in vertex.nodes:
            operator = checkpoint.operators.get(node.uid)
            if operator is None or node.max_parallelism_configured:
                continue
            if node.parallelism > operator.max_parallelism:
                raise CheckpointFormatError(
                    f"checkpoint {path}: operator '{node.name}' (uid '{node.uid}') runs at "
                    f"parallelism {node.parallelism}, above the max parallelism "
                    f"{operator.max_parallelism} its state was taken with"
                )
            node.max_parallelism = operator.max_parallelism


def check_state_kinds(spec: OperatorSpec, operator: OperatorState, where: str) -> None:
    """The states a built-in operator keeps must have the kinds the checkpoint recorded
    (a window changed from reduce to process, say); a user function's states are checked
    when it registers them."""
    recorded: dict[str, str] = {}
    for subtask in operator.subtasks:
        if subtask.keyed is not None:
            recorded.update(subtask.keyed.kinds)
    for name, kind in spec.declared_states().items():
        if recorded.get(name, kind) != kind:
            raise CheckpointFormatError(
                f"{where}: state '{name}' was saved as {recorded[name]} state, but the "
                f"operator now keeps it as {kind} state"
            )


class JobState:
    def __init__(self, job: JobGraph, backend: str):
        self.job = job
        self.backend = backend  # manifests.HASHMAP or manifests.ROCKSDB
        self.epoch = 0  # last completed epoch
        self.committed_epoch = 0  # epoch of the last completed checkpoint
        self.enumerators: dict[int, SplitEnumerator] = {}
        self.manifests: dict[int, dict[int, KeyedStateManifest]] = {}
        self.operator_states: dict[int, dict[int, dict[str, Any]]] = {}
        self.watermarks: dict[int, dict[int, dict[str, int]]] = {}  # task -> subtask -> uid
        self.managed: dict[int, dict[int, ManagedParts]] = {}  # task -> subtask -> parts
        # (task, subtask) -> when its earliest processing-time timer is due; None: not known
        # (after a restore, until the first epoch reports)
        self.processing_timers: dict[tuple[int, int], int] | None = {}
        # (task, subtask) -> version of the subtask whose ack was accepted: a worker may keep
        # using a subtask it holds only if it is that version
        self.versions: dict[tuple[int, int], str] = {}
        # Whether the state files are this job's own. Not after a resume from another job's
        # checkpoint (Flink's NO_CLAIM): the next epoch copies every subtask's state into
        # this job's directory, so that this job never depends on files it cannot delete.
        self.claimed = True
        # Whether the state is a checkpoint's or a savepoint's, not the job's start: its
        # subtasks are restored, from epoch ``epoch`` (0 for a state processor's new
        # savepoint, as Flink's are of checkpoint 0)
        self.from_snapshot = False
        self.reset()

    def reset(self) -> None:
        """Back to the start of the job: nothing read, no state."""
        self.epoch = 0
        self.committed_epoch = 0
        self.close_enumerators()
        self.enumerators = {
            v.id: v.head.source.create_enumerator(v.parallelism) for v in self.job.sources
        }
        self.manifests = {
            v.id: {i: manifests.empty(self.backend) for i in range(v.parallelism)}
            for v, _ in self.job.stateful_nodes
        }
        self.operator_states = {v.id: {} for v in self.job.vertices}
        self.watermarks = {v.id: {} for v in self.job.vertices}
        self.managed = {v.id: {} for v in self.job.vertices}
        self.processing_timers = {}
        self.versions = {}
        self.claimed = True
        self.from_snapshot = False

    # After an epoch ------------------------------------------------------------------------

    def apply_acks(self, epoch: int, acks: list[SubtaskAck], now_ms: int) -> None:
        """``now_ms``: the driver's processing time, from which the subtasks' timers are due
        (their delays are by their own clocks, which may be behind or ahead)."""
        progress_by_source: dict[int, dict[str, SplitProgress]] = {}
        timers = self.processing_timers if self.processing_timers is not None else {}
        for ack in acks:
            vertex_id, index = ack.vertex, ack.subtask
            if ack.next_timer_in_ms is None:
                timers.pop((vertex_id, index), None)
            else:
                timers[(vertex_id, index)] = now_ms + ack.next_timer_in_ms
            self.versions[(vertex_id, index)] = ack.attempt
            self.operator_states[vertex_id][index] = ack.operators
            self.watermarks[vertex_id][index] = ack.watermarks
            self.managed[vertex_id][index] = whole_parts(ack.managed)
            if vertex_id in self.enumerators:
                progress_by_source.setdefault(vertex_id, {}).update(ack.source_progress)
            if ack.state is not None:
                manifest = self.manifests[vertex_id][index]
                self.manifests[vertex_id][index] = manifest.advanced(ack.state.changes)
        for vertex_id, progress in progress_by_source.items():
            self.enumerators[vertex_id].acknowledge(progress)
        self.processing_timers = timers
        self.epoch = epoch
        self.claimed = True  # every subtask ran the epoch, on state of its own

    def next_processing_timer(self) -> int | None:
        """When the earliest processing-time timer of the job is due: 0 when not known (an
        epoch then finds out), None when there is none."""
        if self.processing_timers is None:
            return 0
        return min(self.processing_timers.values(), default=None)

    def restore_for(self, vertex: JobVertex, run: str) -> list[SubtaskRestore]:
        """What each subtask of a task needs to rebuild itself if it is not in memory."""
        keyed = self.manifests.get(vertex.id, {})
        return [
            SubtaskRestore(
                vertex=vertex.id,
                subtask=index,
                run=run,
                attempt=self.versions.get((vertex.id, index)),
                keyed=keyed.get(index),
                operators=self.operator_states[vertex.id].get(index, {}),
                watermarks=self.watermarks[vertex.id].get(index, {}),
                claimed=self.claimed,
                managed=self.managed[vertex.id].get(index, {}),
                restored_epoch=self.epoch if self.epoch or self.from_snapshot else None,
            )
            for index in range(vertex.parallelism)
        ]

    def subtask_files(self) -> dict[tuple[int, int], set[str]]:
        """(task, subtask) -> the files its state names (keyed and operator state)."""
        files = {
            (vertex_id, index): manifests.urls(manifest)
            for vertex_id, subtasks in self.manifests.items()
            for index, manifest in subtasks.items()
        }
        for vertex_id, subtasks in self.managed.items():
            for index, by_uid in subtasks.items():
                urls = {part.handle.file for parts in by_uid.values() for part in parts}
                if urls:
                    files.setdefault((vertex_id, index), set()).update(urls)
        return files

    def state_bytes(self) -> int:
        return sum(
            manifests.size(manifest)
            for subtasks in self.manifests.values()
            for manifest in subtasks.values()
        )

    # Checkpoints ---------------------------------------------------------------------------

    def checkpoint_operators(
        self,
        keyed_state: Mapping[tuple[int, int], KeyedStateManifest] | None = None,
        managed_state: Mapping[tuple[int, int], Mapping[str, OperatorStateHandle]] | None = None,
    ) -> dict[str, OperatorState]:
        """The state of every operator, by uid: a checkpoint's content. ``keyed_state`` and
        ``managed_state``: the keyed and operator state of each (task, subtask) to name
        instead of its own (a savepoint's)."""
        operators: dict[str, OperatorState] = {}
        for vertex in self.job.vertices:
            for node in vertex.nodes:
                keyed = node is vertex.head and vertex.keyed
                subtasks = []
                for index in range(vertex.parallelism):
                    states = self.operator_states[vertex.id].get(index, {})
                    watermark = self.watermarks[vertex.id].get(index, {}).get(node.uid)
                    key_groups = None
                    manifest = None
                    if keyed:
                        kg = key_group_range(vertex.max_parallelism, vertex.parallelism, index)
                        key_groups = (kg.start, kg.end)
                        manifest = (
                            self.manifests[vertex.id][index]
                            if keyed_state is None
                            else keyed_state.get((vertex.id, index))
                        )
                    if managed_state is None:
                        managed = self._managed_handle(vertex.id, index, node.uid)
                    else:
                        managed = managed_state.get((vertex.id, index), {}).get(node.uid)
                    subtasks.append(
                        OperatorSubtaskState(
                            index, states.get(node.uid), manifest, key_groups, watermark, managed
                        )
                    )
                enumerator = self.enumerators.get(vertex.id) if node.is_source else None
                operators[node.uid] = OperatorState(
                    node.uid,
                    node.name,
                    node.parallelism,
                    node.max_parallelism,
                    tuple(subtasks),
                    enumerator.snapshot() if enumerator is not None else None,
                )
        return operators

    def _managed_handle(self, vertex: int, index: int, uid: str) -> OperatorStateHandle | None:
        parts = self.managed[vertex].get(index, {}).get(uid, [])
        if not parts:
            return None
        # a checkpoint follows an epoch, whose acks replaced what a restore assigned
        assert len(parts) == 1 and parts[0].is_whole(), f"{uid}: operator state not snapshotted"
        return parts[0].handle

    def close_enumerators(self) -> None:
        for enumerator in self.enumerators.values():
            try:
                enumerator.close()
            except Exception as exc:  # what the job did stands; only a connection leaks
                log.warning("closing a source's split enumerator failed: %s", exc)

    def notify_sources(self, checkpoint: CheckpointMetadata) -> None:
        """Tell each source's enumerator that ``checkpoint`` completed, with its state in it."""
        for vertex in self.job.vertices:
            enumerator = self.enumerators.get(vertex.id)
            for node in vertex.nodes:
                operator = checkpoint.operators.get(node.uid) if node.is_source else None
                if enumerator is not None and operator is not None:
                    enumerator.notify_checkpoint_complete(operator.coordinator_state)

    def committables(self, checkpoint: CheckpointMetadata) -> Iterator[tuple[Committer, Any]]:
        """(committer, committable) of every two-phase-commit sink in a checkpoint."""
        for vertex in self.job.vertices:
            for node in vertex.nodes:
                committer = getattr(node.operator, "committer", None)
                operator = checkpoint.operators.get(node.uid)
                if committer is None or operator is None:
                    continue
                for subtask in operator.subtasks:
                    for entry in (subtask.operator_state or {}).get("committables", ()):
                        yield committer, entry

    def restore(
        self,
        checkpoint: CheckpointMetadata,
        path: str,
        ignore_unclaimed: bool,
        foreign: bool = False,
    ) -> None:
        """Put a checkpoint's positions and state versions back, operator by operator.

        ``foreign``: the checkpoint is another job's, whose files this one does not claim."""
        nodes = {node.uid: (vertex, node) for vertex in self.job.vertices for node in vertex.nodes}
        unclaimed = sorted(set(checkpoint.operators) - set(nodes))
        if unclaimed and not ignore_unclaimed:
            raise CheckpointFormatError(
                f"checkpoint {path} has state of operators this job does not have (uids "
                f"{', '.join(unclaimed)}): it may belong to another job; set "
                "'execution.state-recovery.ignore-unclaimed-state' to start anyway"
            )
        self.reset()
        claimed = not foreign
        for uid, (vertex, node) in nodes.items():
            operator = checkpoint.operators.get(uid)
            if operator is None:
                continue
            where = f"checkpoint {path}: operator '{node.name}' (uid '{uid}')"
            keyed = node is vertex.head and vertex.keyed
            written_by = {s.keyed.backend for s in operator.subtasks if s.keyed} if keyed else set()
            if written_by - {self.backend, manifests.CANONICAL}:
                raise CheckpointFormatError(
                    f"{where}: its state was written by the {', '.join(sorted(written_by))} "
                    f"state backend, but the job uses the {self.backend} backend; a "
                    "checkpoint restores only into the backend that wrote it (switching "
                    "backends needs a savepoint)"
                )
            if keyed and isinstance(node.operator, OperatorSpec):
                check_state_kinds(node.operator, operator, where)
            assigned = assign_state(operator, node.parallelism, node.max_parallelism, keyed, where)
            for index, subtask in enumerate(assigned):
                if subtask.operator_state is not None:
                    states = self.operator_states[vertex.id].setdefault(index, {})
                    states[uid] = subtask.operator_state
                watermark = subtask.watermark
                if foreign and watermark == LONG_MAX:
                    # The end of a bounded input (or a drained stop) is that run's: the
                    # restored job reads new input, which would all be late
                    watermark = None
                if watermark is not None:
                    self.watermarks[vertex.id].setdefault(index, {})[uid] = watermark
                if subtask.managed:
                    self.managed[vertex.id].setdefault(index, {})[uid] = subtask.managed
                if subtask.keyed is not None and not subtask.keyed.is_empty():
                    self.manifests[vertex.id][index] = subtask.keyed
                    if subtask.keyed.backend != self.backend:
                        claimed = False  # a savepoint's, or several old subtasks' instances
            if node.is_source and operator.coordinator_state is not None:
                where = f"checkpoint {path}: the split enumerator of '{node.name}' (uid '{uid}')"
                try:
                    self.enumerators[vertex.id].restore(operator.coordinator_state, where)
                except RecordFormatError as exc:
                    raise CheckpointFormatError(str(exc)) from None
        self.epoch = checkpoint.epoch
        self.committed_epoch = checkpoint.epoch
        self.claimed = claimed
        self.from_snapshot = True
        if self.job.stateful_nodes:  # restored timers may be due: run an epoch to see
            self.processing_timers = None
