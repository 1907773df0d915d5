"""The small functions an epoch's Spark job runs between its tasks: which consumer an item goes
to, and which items reach the driver. They live on the Spark task side, not with the driver
that builds the job: a Python worker unpickles them, and imports only what they need.
"""

from __future__ import annotations

from typing import Any

from lockgate.runtime.messages.spark_items import ShuffleItem


def target_partition(partition: int) -> int:
    """A shuffle item's key is already the subtask (partition) it goes to."""
    return partition


def to_driver(item: Any) -> bool:
    """Keeps what a task sends the driver of its output (not its shuffle items)."""
    return not isinstance(item, ShuffleItem)


class ToConsumer:
    """Keeps what a task sends one consumer: the shuffle items of its edges to it."""

    def __init__(self, edge_ids: frozenset[int]):
        self.edge_ids = edge_ids

    def __call__(self, item: Any) -> bool:
        return isinstance(item, ShuffleItem) and item.channel.edge in self.edge_ids
