"""What a subtask hands its Spark task, and what the task hands Spark: named items.

A source task's partition is one ``SourcePartition``: the subtask's restore and its split
assignments (``SourceSplit``s). Any other task reads the shuffle items of its inputs.

A subtask's output is a list of ``HostOutput``s: batches of pickled records for the subtasks
of the next task, the end of each edge's epoch for each of them, and records of collect
sinks for the driver. Its task passes them on as Spark items:

- ``ShuffleItem(target, ChannelItem)``: the (key, value) pair that Spark's ``partitionBy``
  sends to partition ``target``, which is subtask ``target`` of the next task; the
  ``ChannelItem`` names its edge, sender, sending attempt and sequence number;
- ``CollectedRecords``: records of collect sinks, for the driver;
- ``AttemptReport``: the attempt that produced the output of a task whose output reaches
  the driver (a result stage).

Records are pickled once, by the subtask that emits them, and travel in batches
(``RecordBatch``, pickled once more as the payload of a BATCH item); Spark pickles the items
that carry them, once per batch.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple


class ItemKind(IntEnum):
    """What an item of a channel (or of a subtask's output) carries."""

    BATCH = 1  # a pickled batch of pickled records of one edge, to one subtask
    CHANNEL_END = 2  # the end of an edge's epoch to one subtask: a ChannelEnd record
    PLACEMENT = 3  # nothing: it only places the receiving task (see EpochJob._task_input)
    COLLECTED = 4  # records of collect sinks, for the driver: a pickled list of pickles


class SourceSplit(NamedTuple):
    """What a source subtask reads of one split in an epoch."""

    assignment: bytes  # its SplitAssignment record (JSON)
    payload: bytes  # what the enumerator sends beside it (pickled, like records)


class SourcePartition(NamedTuple):
    """The partition of a source task that subtask i reads in an epoch (partition i)."""

    restore: bytes  # the subtask's SubtaskRestore record (JSON)
    splits: list[SourceSplit]


class RecordBatch(NamedTuple):
    """The payload of a BATCH item, once unpickled: the records of one edge for one
    subtask."""

    records: list[bytes]  # each pickled on its own when it was emitted
    key_groups: list[int] | None  # of each record, on an edge partitioned by key group
    timestamps: list[int] | None  # of each record, on an edge whose records have them


class HostOutput(NamedTuple):
    """One output item of a subtask (its host sends it to the task in an OUTPUT frame)."""

    kind: ItemKind  # BATCH, CHANNEL_END or COLLECTED
    target: int  # the receiving subtask of the next task (0 for COLLECTED)
    edge: int  # the edge it travels on (0 for COLLECTED)
    sequence: int  # BATCH: its number on the edge in the epoch; CHANNEL_END: after them all
    payload: bytes


class ChannelItem(NamedTuple):
    """What travels through Spark's shuffle to a subtask of the next task."""

    kind: ItemKind  # BATCH, CHANNEL_END or PLACEMENT
    edge: int
    sender: int  # the sending subtask
    attempt: str  # the sending attempt (the driver accepts the attempts whose output was read)
    sequence: int
    payload: bytes


class ShuffleItem(NamedTuple):
    """A shuffle item: Spark's partitionBy sends ``channel`` to partition ``target``."""

    target: int
    channel: ChannelItem


class CollectedRecords(NamedTuple):
    """Records of the collect sinks of one subtask, for the driver."""

    records: bytes  # a pickled list of pickled records


class AttemptReport(NamedTuple):
    """The attempt of a task whose output reaches the driver (the driver accepts it)."""

    vertex: int
    subtask: int
    attempt: str


PLACEMENT = ChannelItem(ItemKind.PLACEMENT, 0, 0, "", 0, b"")
