"""A Kafka source's split: one topic partition, named ``<topic>:<partition>`` in plans and
acknowledgements (a topic name has no ':'); the driver and the readers both name them."""

from __future__ import annotations

PartitionId = tuple[str, int]  # (topic, partition)


def split_id(partition: PartitionId) -> str:
    return f"{partition[0]}:{partition[1]}"


def partition_of(split: str) -> PartitionId:
    topic, _, number = split.rpartition(":")
    return topic, int(number)
