"""What a Spark task runs: one subtask of one task for one epoch.

The task attaches its subtask (from the worker's cache when it holds the state of epoch
n-1, otherwise rebuilt from its ``SubtaskRestore``), feeds it the epoch's input in a
deterministic order, snapshots the keyed state it changed, and writes its acknowledgement.
Output records leave as Spark partition items while the input is processed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from pyspark import TaskContext, cloudpickle

from lockgate.checkpoint.staged_files import StagingLog
from lockgate.checkpoint.storage import Storage
from lockgate.runtime.acknowledgement import SubtaskAck, ack_name, channel_name
from lockgate.runtime.errors import InjectedFailure
from lockgate.runtime.source import SplitAssignment, SplitEnumerator, SplitProgress
from lockgate.runtime.task_deployment import SubtaskRestore, TaskDeploymentDescriptor
from lockgate.runtime.taskexecutor import subtask_cache
from lockgate.runtime.taskexecutor.operators import ATTEMPT_TAG
from lockgate.runtime.taskexecutor.subtask import Subtask

_SOURCE_CHUNK = 4096
# The edge id of the shuffle item that carries a non-source subtask's restore (real edges
# have ids from 0): it sorts before every input channel.
RESTORE_EDGE = -1

# A subtask's restore bundle: its own encoded SubtaskRestore, and the bundles it forwards
# to subtasks of the tasks it carries restores for, as (vertex, subtask, bundle). Restores
# ride on the partitions and shuffles the epoch has anyway (see EpochJob): one more Spark
# task to carry them would cost every epoch a scheduling round and move subtasks between
# Python workers.
RestoreBundle = tuple[bytes, list[tuple[int, int, Any]]]


def source_input(
    enumerator: SplitEnumerator, assignments: list[SplitAssignment]
) -> list[tuple[dict[str, Any], Any]]:
    """A source subtask's partition data for one epoch: per assignment its control record
    (JSON, checked when the task reads it) and its payload (data, pickled like records)."""
    return [(assignment.to_json(), enumerator.payload(assignment)) for assignment in assignments]


def _drain(outbox: list[Any]) -> list[Any]:
    items = outbox[:]
    outbox.clear()
    return items


class EpochTask:
    """The function Spark maps over the partitions of one task's stage in one epoch.

    Partition i of a source task is ``(restore bundle, assignments)`` of subtask i; the
    input of any other task holds one ``(RESTORE_EDGE, vertex, "", 0, restore bundle)``
    item. A task first forwards the bundles it carries, as such items.
    """

    def __init__(self, descriptor: TaskDeploymentDescriptor, graph: Any):
        self.descriptor = descriptor.encode()
        self.graph = graph  # a Spark broadcast of the cloudpickled job graph

    def __call__(self, index: int, items: Iterable[Any]) -> Iterator[Any]:
        started = time.perf_counter()
        task = TaskDeploymentDescriptor.decode(self.descriptor)
        context = TaskContext.get()
        attempt = context.attemptNumber() if context is not None else 0
        # Unique in the application (a resubmitted stage counts attempts from 0 again): names
        # this attempt's state files and the version of the subtask it leaves behind
        version = f"{task.tag}a{context.taskAttemptId() if context is not None else 0}"
        (restore_data, carried), inputs = _split_input(items, task.source)
        for vertex, target, bundle in carried:
            yield target, (RESTORE_EDGE, vertex, "", 0, bundle)
        restore = SubtaskRestore.decode(restore_data, task.vertex, index, task.run)
        cache = subtask_cache.WORKER_CACHE
        subtask = cache.take(task.run, task.vertex, index, task.epoch)
        # Reuse only the very version the driver accepted for epoch n-1: another attempt of
        # that epoch (a retry, a speculative copy, a run cancelled by a timeout) may have
        # finished here too, with other input or other state files.
        reused = subtask is not None and restore.attempt == subtask.version
        if subtask is not None and not reused:
            subtask.dispose()
            subtask = None
        try:
            if subtask is None:
                subtask = self._build(task, index, attempt, restore)
            yield from self._run(task, subtask, index, version, inputs, reused, started)
        except BaseException:
            if subtask is not None:
                subtask.dispose()  # half through the epoch: a retry starts from epoch n-1
            raise
        if task.end_of_input:
            subtask.close()
            subtask.dispose()
        else:
            cache.put(task.run, subtask)

    def _build(
        self, task: TaskDeploymentDescriptor, index: int, attempt: int, restore: SubtaskRestore
    ) -> Subtask:
        """The subtask as of epoch n-1, from its restore (manifest and operator states)."""
        # Each subtask unpickles its own copy of the graph: user functions keep per-instance
        # fields (state handles from open()), as in Flink.
        job = cloudpickle.loads(self.graph.value)
        subtask = Subtask(
            job,
            job.vertex(task.vertex),
            index,
            attempt,
            restore,
            task.keyed_state,
            task.batch_bounds,
        )
        try:
            subtask.restore_operator_states(restore.operators)
            subtask.open()
        except BaseException:
            subtask.dispose()
            raise
        return subtask

    def _run(
        self,
        task: TaskDeploymentDescriptor,
        subtask: Subtask,
        index: int,
        version: str,
        inputs: list[Any],
        reused: bool,
        started: float,
    ) -> Iterator[Any]:
        subtask.notify_checkpoint_complete(task.committed_epoch)
        staging = StagingLog(Storage(task.staging_url), task.epoch, task.vertex, index, version)
        subtask.begin_epoch(task.epoch, task.commit_on_checkpoint, version, staging)
        outbox = subtask.outbox
        outbox.clear()
        progress: dict[str, SplitProgress] = {}
        consumed: dict[str, str] = {}
        records_in = 0
        source = subtask.source
        if source is not None:
            emit_batch = subtask.source_emit_batch
            for number, (raw, payload) in enumerate(inputs):
                where = (
                    f"split assignment {number} of epoch {task.epoch} to subtask {index} of "
                    f"task {task.vertex}"
                )
                assignment = SplitAssignment.from_json(raw, where)
                reader = source.read(assignment, payload, progress)
                while True:
                    chunk = list(islice(reader, _SOURCE_CHUNK))
                    emit_batch(chunk)
                    records_in += len(chunk)
                    if outbox:
                        yield from _drain(outbox)
                    if len(chunk) < _SOURCE_CHUNK:
                        break
        else:
            deliver = subtask.deliver
            for edge_id, sender, sender_attempt, _, batch in inputs:
                channel = channel_name(edge_id, sender)
                if consumed.setdefault(channel, sender_attempt) != sender_attempt:
                    raise RuntimeError(  # Spark reads one map output per partition
                        f"epoch {task.epoch}: subtask {index} of task {task.vertex} received "
                        f"the output of two attempts of subtask {sender} of its input edge "
                        f"{edge_id}: {consumed[channel]} and {sender_attempt}"
                    )
                if batch is None:
                    continue  # the marker naming the attempt (see ChannelWriter.end_epoch)
                records_in += deliver[edge_id](batch)
                if outbox:
                    yield from _drain(outbox)
        subtask.end_epoch(task.end_of_input, records_in)
        yield from _drain(outbox)
        state = subtask.snapshot_state(Storage(task.state_url), version, task.checkpoint)
        operator_states = subtask.snapshot_operator_states()
        if task.inject_failure:
            raise InjectedFailure(
                f"injected failure after the snapshot of epoch {task.epoch}, before its ack "
                f"(subtask {index} of task {task.vertex})"
            )
        ack = SubtaskAck(
            vertex=task.vertex,
            subtask=index,
            epoch=task.epoch,
            run=task.run,
            attempt=version,
            records_in=records_in,
            source_progress=progress,
            state=state,
            operators=operator_states,
            restored=not reused,
            duration_ms=(time.perf_counter() - started) * 1000,
            consumed=consumed,
        )
        document = json.dumps(ack.to_json(), separators=(",", ":")).encode()
        Storage(task.work_url).create(ack_name(task.ack_dir, task.vertex, index, version), document)
        subtask.version = version
        if task.reports_attempt:
            yield ATTEMPT_TAG, (task.vertex, index, version)


def _split_input(items: Iterable[Any], source: bool) -> tuple[RestoreBundle, list[Any]]:
    """The subtask's restore bundle, and its input in a deterministic order: a source's
    assignments as planned, shuffled batches by (edge, sender, sequence)."""
    if source:
        ((bundle, assignments),) = items  # one item per source partition (see EpochJob)
        return bundle, assignments
    payloads = sorted((payload for _, payload in items), key=_channel_order)
    if not payloads or payloads[0][0] != RESTORE_EDGE:
        raise RuntimeError("a subtask's input lacks its restore (see EpochJob)")
    return payloads[0][4], payloads[1:]


def _channel_order(payload: tuple[int, int, str, int, Any]) -> tuple[int, int, int]:
    return payload[0], payload[1], payload[3]
