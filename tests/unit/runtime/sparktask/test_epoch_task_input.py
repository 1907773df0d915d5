"""The input of a post-shuffle task: batches in channel order, the placement markers
dropped, whatever order Spark's shuffle read delivers them in."""

from __future__ import annotations

from lockgate.runtime.messages.spark_items import PLACEMENT, ChannelItem, ItemKind
from lockgate.runtime.sparktask.epoch_task import _shuffled_input, _source_partition


def test_markers_are_dropped_and_batches_ordered():
    batches = [
        ChannelItem(ItemKind.BATCH, 1, 0, "a", 1, b"x"),
        ChannelItem(ItemKind.BATCH, 0, 1, "b", 0, b"y"),
        ChannelItem(ItemKind.CHANNEL_END, 0, 0, "c", 0, b"{}"),
    ]
    items = [(2, PLACEMENT), (2, batches[0]), (2, PLACEMENT), (2, batches[1])]
    items += [(2, batches[2]), (2, PLACEMENT)]
    assert _shuffled_input(items) == [batches[2], batches[1], batches[0]]


def test_a_source_partition_brings_its_restore_and_assignments():
    assert _source_partition([(b"restore", ["a", "b"])]) == (b"restore", ["a", "b"])
