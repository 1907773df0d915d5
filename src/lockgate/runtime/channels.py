"""Output channels: how records leave a task for the next stage's subtasks.

Records are pickled when they are emitted (so later changes to an emitted object do not
leak into it, as with Flink's serialization at the network boundary), buffered per target
subtask and handed to Spark's shuffle in batches, each tagged with (edge, sending subtask,
sequence number) so the receiver can replay its input in a deterministic order: a retried
subtask then produces exactly the same result.
"""

from __future__ import annotations

from collections.abc import Callable
from pickle import HIGHEST_PROTOCOL, dumps
from typing import Any

from lockgate.runtime.operators import Operator, OperatorContext, resolve_callable
from lockgate.state.key_groups import murmur_hash
from lockgate.state.key_hash import stable_key_hash

BATCH_SIZE = 2048
_KEY_GROUP_CACHE_SIZE = 100_000


class ChannelWriter(Operator):
    """Base of the writers at the tail of a chain, one per outgoing edge."""

    def __init__(self, ctx: OperatorContext, edge_id: int, targets: int):
        super().__init__(ctx)
        self.edge_id = edge_id
        self.targets = targets
        self.buffers: list[list[Any]] = [[] for _ in range(targets)]
        self.sequence = 0

    def partition(self, buffer_index: int) -> int:
        return buffer_index

    def flush(self, buffer_index: int) -> None:
        buffer = self.buffers[buffer_index]
        if buffer:
            item = (self.edge_id, self.ctx.index, self.sequence, buffer)
            self.ctx.outbox.append((self.partition(buffer_index), item))
            self.sequence += 1
            self.buffers[buffer_index] = []

    def end_epoch(self) -> None:
        for buffer_index in range(len(self.buffers)):
            self.flush(buffer_index)
        self.sequence = 0


class ForwardWriter(ChannelWriter):
    """Subtask i sends to subtask i of a task with the same parallelism."""

    def __init__(self, ctx: OperatorContext, edge_id: int):
        super().__init__(ctx, edge_id, 1)

    def partition(self, buffer_index: int) -> int:
        return self.ctx.index

    def process(self, value: Any) -> None:
        buffer = self.buffers[0]
        buffer.append(dumps(value, HIGHEST_PROTOCOL))
        if len(buffer) >= BATCH_SIZE:
            self.flush(0)


class RebalanceWriter(ChannelWriter):
    """Round-robin over the targets, starting at a subtask-dependent offset."""

    def __init__(self, ctx: OperatorContext, edge_id: int, targets: int):
        super().__init__(ctx, edge_id, targets)
        self.next_target = ctx.index % targets

    def process(self, value: Any) -> None:
        target = self.next_target
        buffer = self.buffers[target]
        buffer.append(dumps(value, HIGHEST_PROTOCOL))
        self.next_target = (target + 1) % self.targets
        if len(buffer) >= BATCH_SIZE:
            self.flush(target)


class KeyGroupWriter(ChannelWriter):
    """Routes each record to the subtask owning its key group (Flink's formulas).

    The key and its key group travel with the record, so the receiving keyed operator does
    not compute them again.
    """

    def __init__(
        self,
        ctx: OperatorContext,
        edge_id: int,
        targets: int,
        key_selector: Any,
        max_parallelism: int,
        target_name: str,
    ):
        super().__init__(ctx, edge_id, targets)
        self.key_fn: Callable[[Any], Any] = resolve_callable(key_selector, "get_key", "KeySelector")
        self.max_parallelism = max_parallelism
        self.target_name = target_name
        self.key_groups: dict[Any, int] = {}  # hot keys skip hashing

    def _key_group(self, key: Any) -> int:
        key_group = murmur_hash(stable_key_hash(key)) % self.max_parallelism
        if len(self.key_groups) >= _KEY_GROUP_CACHE_SIZE:
            self.key_groups.clear()
        self.key_groups[key] = key_group
        return key_group

    def process(self, value: Any) -> None:
        try:
            key = self.key_fn(value)
            key_group = self.key_groups.get(key)
            if key_group is None:
                key_group = self._key_group(key)
        except Exception as exc:
            raise self.failure(exc, value, f"the key selector of '{self.target_name}'") from exc
        target = key_group * self.targets // self.max_parallelism
        buffer = self.buffers[target]
        buffer.append((key_group, key, dumps(value, HIGHEST_PROTOCOL)))
        if len(buffer) >= BATCH_SIZE:
            self.flush(target)
