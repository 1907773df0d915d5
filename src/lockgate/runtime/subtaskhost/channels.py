"""Output channels: how records leave a task for the next stage's subtasks.

Records are pickled when they are emitted (so later changes to an emitted object do not
leak into it, as with Flink's serialization at the network boundary), buffered per target
subtask and handed to Spark's shuffle in batches, each tagged with (edge, sending subtask,
sequence number) so the receiver can replay its input in a deterministic order: a retried
subtask then produces exactly the same result. Each item also names the sending attempt.

A batch is bounded in records and in bytes (``BatchBounds``): a shuffle item is one object
in the Python worker and one array in the JVM, so a batch of big records must not grow with
the record count alone. Where a batch ends depends only on the records emitted, so a retried
subtask cuts the same batches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import repeat
from pickle import HIGHEST_PROTOCOL, dumps
from random import Random
from typing import Any

from lockgate.common.watermark_strategy import LONG_MIN
from lockgate.runtime.messages.spark_items import HostOutput, ItemKind, RecordBatch
from lockgate.runtime.messages.task_deployment import BatchBounds
from lockgate.runtime.subtaskhost.operators import Operator, OperatorContext, resolve_callable
from lockgate.runtime.subtaskhost.watermarks import ChannelEnd
from lockgate.state.key_groups import murmur_hash
from lockgate.state.key_hash import stable_key_hash

_KEY_GROUP_CACHE_SIZE = 100_000


class ChannelWriter(Operator):
    """Base of the writers at the tail of a chain, one per outgoing edge.

    A buffer is flushed when the next record for its target would take it past a bound, not
    as soon as it is full: one check per record instead of two, and the same batches (a full
    buffer waits for the next record to its target, or the end of the epoch). On a
    ``timestamped`` edge (one whose records can carry timestamps) each batch also carries
    the records' timestamps, as a column.
    """

    def __init__(
        self,
        ctx: OperatorContext,
        edge_id: int,
        targets: int,
        bounds: BatchBounds,
        timestamped: bool,
    ):
        super().__init__(ctx)
        self.edge_id = edge_id
        self.targets = targets
        self.max_records = bounds.records
        # A record above the maximum overfills any batch: checked only where batches end.
        self.max_bytes = min(bounds.bytes, ctx.max_record_bytes)
        self.buffers: list[list[Any]] = [[] for _ in range(targets)]
        self.sizes = [0] * targets  # bytes in each buffer
        self.record = ctx.record
        self.timestamps: list[list[int]] | None = (
            [[] for _ in range(targets)] if timestamped else None
        )
        self.sequence = 0

    def partitions(self, buffer_index: int) -> Sequence[int]:
        """The target subtasks of a buffer's batches."""
        return (buffer_index,)

    def contents(self, buffer_index: int) -> RecordBatch:
        """What a batch holds: the pickled records, and their timestamps if the edge has
        them. Takes them out of the buffers."""
        buffer = self.buffers[buffer_index]
        self.buffers[buffer_index] = []
        self.sizes[buffer_index] = 0
        if self.timestamps is None:
            return RecordBatch(buffer, None, None)
        timestamps = self.timestamps[buffer_index]
        self.timestamps[buffer_index] = []
        return RecordBatch(buffer, None, timestamps)

    def _append(self, target: int, value: Any) -> None:
        """Buffer ``value`` for the ``target`` subtask, flushing the batch it would overfill."""
        data = dumps(value, HIGHEST_PROTOCOL)
        size = self.sizes[target] + len(data)
        buffer = self.buffers[target]
        if size > self.max_bytes or len(buffer) >= self.max_records:
            self.check_record_size(len(data), value)
            self.flush(target)
            buffer = self.buffers[target]
            size = len(data)
        buffer.append(data)
        self.sizes[target] = size
        if self.timestamps is not None:
            self.timestamps[target].append(self.record.value)

    def flush(self, buffer_index: int) -> None:
        if self.buffers[buffer_index]:
            batch = dumps(self.contents(buffer_index), HIGHEST_PROTOCOL)
            edge, sequence, outbox = self.edge_id, self.sequence, self.ctx.outbox
            for target in self.partitions(buffer_index):
                outbox.append(HostOutput(ItemKind.BATCH, target, edge, sequence, batch))
            self.sequence = sequence + 1

    def end_channels(self, end: ChannelEnd) -> None:
        """Flush, then end every target's epoch with a marker carrying ``end`` (the
        watermark), even when nothing was sent: it also tells the receiver which attempt
        sent this epoch's output (the driver accepts the attempts whose output was
        consumed). A marker's sequence number follows those of all the edge's batches."""
        marker = end.encode()
        for buffer_index in range(len(self.buffers)):
            self.flush(buffer_index)
        for buffer_index in range(len(self.buffers)):
            for target in self.partitions(buffer_index):
                self.ctx.outbox.append(
                    HostOutput(ItemKind.CHANNEL_END, target, self.edge_id, self.sequence, marker)
                )
        self.sequence = 0


class ForwardWriter(ChannelWriter):
    """Subtask i sends to subtask i of a task with the same parallelism."""

    def __init__(self, ctx: OperatorContext, edge_id: int, bounds: BatchBounds, timestamped: bool):
        super().__init__(ctx, edge_id, 1, bounds, timestamped)

    def partitions(self, buffer_index: int) -> Sequence[int]:
        return (self.ctx.index,)

    def process(self, value: Any) -> None:
        self._append(0, value)


class BroadcastWriter(ForwardWriter):
    """Every record to every subtask of the target: one buffer, each batch sent to all."""

    def __init__(
        self,
        ctx: OperatorContext,
        edge_id: int,
        targets: int,
        bounds: BatchBounds,
        timestamped: bool,
    ):
        super().__init__(ctx, edge_id, bounds, timestamped)
        self.receivers = range(targets)

    def partitions(self, buffer_index: int) -> Sequence[int]:
        return self.receivers


class RebalanceWriter(ChannelWriter):
    """Round-robin over the targets, starting at a subtask-dependent offset each epoch (so
    that where a record goes depends only on the epoch's records)."""

    def __init__(
        self,
        ctx: OperatorContext,
        edge_id: int,
        targets: int,
        bounds: BatchBounds,
        timestamped: bool,
    ):
        super().__init__(ctx, edge_id, targets, bounds, timestamped)
        self.next_target = ctx.index % targets

    def process(self, value: Any) -> None:
        target = self.next_target
        self.next_target = (target + 1) % self.targets
        self._append(target, value)

    def end_channels(self, end: ChannelEnd) -> None:
        super().end_channels(end)
        self.next_target = self.ctx.index % self.targets


def rescale_receivers(index: int, senders: int, receivers: int) -> range:
    """The subtasks sending subtask ``index`` of ``senders`` reaches through a rescale edge
    to ``receivers`` subtasks: Flink's pointwise pattern. With fewer receivers, each takes a
    contiguous block of senders; with more, each sender feeds a contiguous block of them."""
    if senders >= receivers:
        target = next(j for j in range(receivers) if index < (j + 1) * senders // receivers)
        return range(target, target + 1)
    start = (index * receivers + senders - 1) // senders
    return range(start, ((index + 1) * receivers + senders - 1) // senders)


class RescaleWriter(ChannelWriter):
    """Round-robin over this subtask's block of the targets (``rescale_receivers``),
    starting at the block's first subtask each epoch. End-of-epoch markers still go to
    every target, which expects one from every sender of a non-forward edge."""

    def __init__(
        self,
        ctx: OperatorContext,
        edge_id: int,
        senders: int,
        targets: int,
        bounds: BatchBounds,
        timestamped: bool,
    ):
        super().__init__(ctx, edge_id, targets, bounds, timestamped)
        self.receivers = rescale_receivers(ctx.index, senders, targets)
        self.position = 0

    def process(self, value: Any) -> None:
        position = self.position
        self.position = (position + 1) % len(self.receivers)
        self._append(self.receivers[position], value)

    def end_channels(self, end: ChannelEnd) -> None:
        super().end_channels(end)
        self.position = 0


class ShuffleWriter(ChannelWriter):
    """A uniformly random target per record (Flink's shuffle), drawn from a generator
    seeded by the edge, the subtask and the epoch: a retried subtask sends every record
    where the first attempt sent it."""

    def __init__(
        self,
        ctx: OperatorContext,
        edge_id: int,
        targets: int,
        bounds: BatchBounds,
        timestamped: bool,
    ):
        super().__init__(ctx, edge_id, targets, bounds, timestamped)
        self.random: Random | None = None  # seeded at the epoch's first record

    def process(self, value: Any) -> None:
        if self.random is None:
            self.random = Random(f"{self.edge_id}/{self.ctx.index}/{self.ctx.epoch}")
        self._append(self.random.randrange(self.targets), value)

    def end_channels(self, end: ChannelEnd) -> None:
        super().end_channels(end)
        self.random = None


class CustomPartitionWriter(ChannelWriter):
    """Each record to the target its partitioner chooses for its key (``partition_custom``):
    ``partition(key, targets)`` of a Partitioner, or the function itself. The partitioner
    and the key selector are opened and closed with the sending subtask."""

    def __init__(
        self,
        ctx: OperatorContext,
        edge_id: int,
        targets: int,
        bounds: BatchBounds,
        timestamped: bool,
        partitioner: Any,
        key_selector: Any,
    ):
        super().__init__(ctx, edge_id, targets, bounds, timestamped)
        self.partitioner = partitioner
        self.key_selector = key_selector
        self.partition = resolve_callable(partitioner, "partition", "Partitioner")
        self.key_of = resolve_callable(key_selector, "get_key", "KeySelector")

    def open(self) -> None:
        for function in (self.partitioner, self.key_selector):
            opener = getattr(function, "open", None)
            if opener is not None:
                self._call(opener, self.ctx.runtime_context, what="open() of partition_custom")

    def close(self) -> None:
        for function in (self.partitioner, self.key_selector):
            closer = getattr(function, "close", None)
            if closer is not None:
                self._call(closer, what="close() of partition_custom")

    def process(self, value: Any) -> None:
        try:
            target = self.partition(self.key_of(value), self.targets)
        except Exception as exc:
            raise self.failure(exc, value, "the partitioner of partition_custom") from exc
        if not isinstance(target, int) or not 0 <= target < self.targets:
            raise self.failure(
                ValueError(
                    f"the partitioner returned {target!r}, not a partition in 0..{self.targets - 1}"
                ),
                value,
                "partition_custom",
            )
        self._append(target, value)


# Per process: key -> key group, by max parallelism.
_KEY_GROUP_CACHES: dict[int, dict[Any, int]] = {}


class KeyGroupWriter(ChannelWriter):
    """Routes each record to the subtask owning its key group (Flink's formulas).

    A batch travels as two columns, (key groups, pickled values); the receiving keyed
    operator extracts the key again from the value, as Flink's keyed operators do.
    """

    def __init__(
        self,
        ctx: OperatorContext,
        edge_id: int,
        targets: int,
        bounds: BatchBounds,
        timestamped: bool,
        key_fn: Callable[[Any], Any],
        max_parallelism: int,
        target_name: str,
    ):
        super().__init__(ctx, edge_id, targets, bounds, timestamped)
        self.key_fn = key_fn
        self.max_parallelism = max_parallelism
        self.target_name = target_name
        self.key_groups = _KEY_GROUP_CACHES.setdefault(max_parallelism, {})
        self.target_of = [kg * targets // max_parallelism for kg in range(max_parallelism)]
        self.group_buffers: list[list[int]] = [[] for _ in range(targets)]

    def _key_group(self, key: Any) -> int:
        key_group = murmur_hash(stable_key_hash(key)) % self.max_parallelism
        if len(self.key_groups) >= _KEY_GROUP_CACHE_SIZE:
            self.key_groups.clear()
        self.key_groups[key] = key_group
        return key_group

    def process(self, value: Any) -> None:
        # The one-record form of process_batch, for records coming from chained operators;
        # kept separate because per-call setup of the batch loop doubles its cost.
        try:
            key = self.key_fn(value)
            key_group = self.key_groups.get(key)
            if key_group is None:
                key_group = self._key_group(key)
        except Exception as exc:
            raise self.failure(exc, value, f"the key selector of '{self.target_name}'") from exc
        target = self.target_of[key_group]
        self._append(target, value)  # a flush it makes empties the group buffer too
        self.group_buffers[target].append(key_group)

    def process_batch(self, values: Any, timestamps: list[int] | None = None) -> None:
        stamps = self.timestamps  # None: the edge carries no timestamps
        given = timestamps if timestamps is not None else repeat(LONG_MIN)
        key_fn = self.key_fn
        cached = self.key_groups.get
        target_of = self.target_of
        buffers = self.buffers
        group_buffers = self.group_buffers
        sizes = self.sizes
        max_bytes = self.max_bytes
        max_records = self.max_records
        for value, timestamp in zip(values, given, strict=False):
            try:
                key = key_fn(value)
                key_group = cached(key)
                if key_group is None:
                    key_group = self._key_group(key)
            except Exception as exc:
                raise self.failure(exc, value, f"the key selector of '{self.target_name}'") from exc
            target = target_of[key_group]
            data = dumps(value, HIGHEST_PROTOCOL)
            size = sizes[target] + len(data)
            buffer = buffers[target]
            if size > max_bytes or len(buffer) >= max_records:
                self.check_record_size(len(data), value)
                self.flush(target)
                buffer = buffers[target]
                size = len(data)
            buffer.append(data)
            group_buffers[target].append(key_group)
            sizes[target] = size
            if stamps is not None:
                stamps[target].append(timestamp)

    def contents(self, buffer_index: int) -> RecordBatch:
        """The pickled records with their key groups (and timestamps)."""
        groups = self.group_buffers[buffer_index]
        self.group_buffers[buffer_index] = []
        return super().contents(buffer_index)._replace(key_groups=groups)
