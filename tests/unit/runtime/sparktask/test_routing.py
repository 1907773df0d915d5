"""The routing of a task's output to its consumers."""

from __future__ import annotations

from lockgate.runtime.messages.spark_items import (
    ChannelItem,
    CollectedRecords,
    ItemKind,
    ShuffleItem,
)
from lockgate.runtime.sparktask.routing import ToConsumer


def test_a_task_with_several_consumers_sends_each_only_its_edges():
    keep = ToConsumer(frozenset({4}))
    assert keep(ShuffleItem(0, ChannelItem(ItemKind.BATCH, 4, 0, "a", 0, b"")))
    assert not keep(ShuffleItem(0, ChannelItem(ItemKind.BATCH, 5, 0, "a", 0, b"")))
    assert not keep(CollectedRecords(b"collected"))
