"""What a Spark task runs: one subtask of one task for one epoch.

The task is the subtask's courier: it hands the epoch's input, in a deterministic order, to
the host where the subtask lives on this machine (started here if there is none, see
``host_client``) and passes the host's output on to Spark while the input is processed. The
subtask itself, with its user functions and keyed state, stays in the host from epoch to
epoch, whatever Python worker Spark runs the task in.
"""

from __future__ import annotations

import pickle
import sys
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from pyspark import SparkFiles, TaskContext

from lockgate.core.source import SplitAssignment, SplitEnumerator
from lockgate.runtime.messages.host_protocol import EpochStart, RunAccess
from lockgate.runtime.messages.spark_items import (
    AttemptReport,
    ChannelItem,
    CollectedRecords,
    HostOutput,
    ItemKind,
    ShuffleItem,
    SourcePartition,
    SourceSplit,
)
from lockgate.runtime.messages.task_deployment import SubtaskRestore, TaskDeploymentDescriptor
from lockgate.runtime.sparktask.host_client import HostSession


def source_input(
    enumerator: SplitEnumerator, assignments: list[SplitAssignment]
) -> list[SourceSplit]:
    """A source subtask's partition data for one epoch: per assignment its control record
    (JSON, checked when the host reads it) and its payload (data, pickled like records)."""
    return [
        SourceSplit(
            assignment.encode(),
            pickle.dumps(enumerator.payload(assignment), pickle.HIGHEST_PROTOCOL),
        )
        for assignment in assignments
    ]


class EpochTask:
    """The function Spark maps over the partitions of one task's stage in one epoch.

    Partition i of a source task is ``(restore, assignments)`` of subtask i (``restore``:
    its encoded ``SubtaskRestore``); any other task brings its subtasks' restores in
    ``restores``, which Spark ships once per executor with the stage's function, and each
    task decodes only its own. The restores of a task after a shuffle are not in its input
    so that the stages before it can run before they are known (pipelined epochs).

    Output items are ``ShuffleItem``s for the next stage's shuffle, and ``CollectedRecords``
    and ``AttemptReport``s for the driver (``spark_items``).
    """

    def __init__(
        self,
        descriptor: TaskDeploymentDescriptor,
        graph: Any,
        restores: list[bytes] | None,
        access: RunAccess,
    ):
        self.descriptor = descriptor.encode()
        self.graph = graph  # a Spark broadcast of the cloudpickled job graph
        self.restores = restores  # None for a source task
        self.access = access  # how to reach the run's hosts

    def __call__(self, index: int, items: Iterable[Any]) -> Iterator[Any]:
        task = TaskDeploymentDescriptor.decode(self.descriptor)
        context = TaskContext.get()
        attempt = context.attemptNumber() if context is not None else 0
        # Unique in the application (a resubmitted stage counts attempts from 0 again): names
        # this attempt's state files and the version of the subtask it leaves behind
        version = f"{task.tag}a{context.taskAttemptId() if context is not None else 0}"
        splits: list[SourceSplit] = []
        channel: list[ChannelItem] = []
        if self.restores is None:
            encoded, splits = _source_partition(items)
        else:
            encoded, channel = self.restores[index], _shuffled_input(items)
        restore = SubtaskRestore.for_subtask(encoded, task.vertex, index, task.run)
        host = open_session(self.access, task.vertex, index)
        try:
            start = EpochStart(
                _local_descriptor(task), list(sys.path), restore, index, version, attempt
            )
            host.begin(start, lambda: self.graph.value)
            for split in splits:
                yield from _spark_items(host.source(split), index, version)
            for item in channel:
                yield from _spark_items(host.batch(item), index, version)
            yield from _spark_items(host.finish(), index, version)
        finally:
            host.close()
        if task.reports_attempt:
            yield AttemptReport(task.vertex, index, version)


def _local_descriptor(task: TaskDeploymentDescriptor) -> TaskDeploymentDescriptor:
    """The descriptor, with the keyed state's local directories resolved on this executor
    (Spark tells its workers where the application's local files go, not other processes)."""
    if task.keyed_state.local_dirs:
        return task
    local_dirs = (SparkFiles.getRootDirectory(),)
    return replace(task, keyed_state=replace(task.keyed_state, local_dirs=local_dirs))


# How a task reaches its subtask's host (tests run hosts in-process)
open_session = HostSession


def _spark_items(outputs: Iterable[HostOutput], index: int, version: str) -> Iterator[Any]:
    """A subtask's outputs as Spark items: shuffle items, and records for the driver."""
    for output in outputs:
        if output.kind is ItemKind.COLLECTED:
            yield CollectedRecords(output.payload)
        else:
            item = ChannelItem(
                output.kind, output.edge, index, version, output.sequence, output.payload
            )
            yield ShuffleItem(output.target, item)


def _source_partition(items: Iterable[SourcePartition]) -> SourcePartition:
    """A source subtask's restore and its split assignments, as planned."""
    (partition,) = items  # one item per source partition (see EpochJob)
    return SourcePartition(*partition)


def _shuffled_input(items: Iterable[tuple[int, ChannelItem]]) -> list[ChannelItem]:
    """A shuffled input's items (the values of its (target, item) pairs) in a
    deterministic order, (edge, sender, sequence), without the placement markers."""
    placement = ItemKind.PLACEMENT
    channel = [item for _, item in items if item.kind is not placement]
    return sorted(channel, key=_channel_order)


def _channel_order(item: ChannelItem) -> tuple[int, int, int]:
    return item.edge, item.sender, item.sequence
