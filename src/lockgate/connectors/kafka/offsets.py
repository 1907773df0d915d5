"""Where a Kafka source starts and stops reading a partition (Flink's OffsetsInitializer),
resolved to offsets on the driver from the broker's metadata (never from records).

A starting offset outside what a partition holds (deleted by retention, or beyond its end)
is brought to the nearest end, so a reader never asks for an offset the broker refuses; a
stopping offset beyond the end stays, and the source reads up to it as records come.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from lockgate.connectors.kafka.client import (
    DEFAULT_TIMEOUT_S,
    ConsumerSettings,
    confluent_kafka,
    error_text,
)
from lockgate.connectors.kafka.splits import PartitionId
from lockgate.core.source import SourceError, SourceUnavailableError


class OffsetKind(Enum):
    EARLIEST = "earliest"
    LATEST = "latest"  # the end: the high watermark, or the last stable offset (read_committed)
    TIMESTAMP = "timestamp"  # the first record at or after a time
    COMMITTED = "committed"  # the consumer group's committed offset
    SPECIFIC = "specific"  # offsets given per partition


class ResetStrategy(Enum):
    """Where a partition starts when its committed or given offset is missing."""

    LATEST = 0
    EARLIEST = 1
    NONE = 2  # fail


@dataclass(frozen=True)
class OffsetsSpec:
    kind: OffsetKind
    timestamp: int | None = None
    offsets: dict[PartitionId, int] = field(default_factory=dict)
    reset: ResetStrategy = ResetStrategy.EARLIEST

    def describe(self) -> str:
        if self.kind is OffsetKind.TIMESTAMP:
            return f"timestamp({self.timestamp})"
        return f"{self.kind.value}()"

    def reset_strategy(self) -> ResetStrategy:
        """Where a partition goes on when its position is no longer in it (Flink's
        ``auto.offset.reset`` of the starting offsets)."""
        if self.kind is OffsetKind.EARLIEST:
            return ResetStrategy.EARLIEST
        if self.kind in (OffsetKind.LATEST, OffsetKind.TIMESTAMP):
            return ResetStrategy.LATEST
        return self.reset


class PartitionGone(LookupError):
    """The broker no longer knows the partition (its topic was deleted)."""


def resolve(
    spec: OffsetsSpec,
    partitions: list[PartitionId],
    consumer: Any,
    settings: ConsumerSettings,
    where: str,
    stopping: bool = False,
) -> dict[PartitionId, int]:
    """The offset ``spec`` gives each of ``partitions``; ``consumer``: a consumer of the
    source's settings, on the driver; ``stopping``: offsets to stop at (not brought below a
    partition's end)."""
    kafka = confluent_kafka()
    ends = {p: watermarks(consumer, p, settings, where) for p in partitions}
    if spec.kind is OffsetKind.EARLIEST:
        return {p: low for p, (low, _) in ends.items()}
    if spec.kind is OffsetKind.LATEST:
        return {p: high for p, (_, high) in ends.items()}
    given: dict[PartitionId, int | None] = {}
    try:
        if spec.kind is OffsetKind.TIMESTAMP:
            found = consumer.offsets_for_times(
                [kafka.TopicPartition(t, p, spec.timestamp) for t, p in partitions],
                timeout=DEFAULT_TIMEOUT_S,
            )
            # no record at or after the time: the partition's end
            given = {
                (f.topic, f.partition): f.offset
                if f.offset >= 0
                else ends[(f.topic, f.partition)][1]
                for f in found
            }
        elif spec.kind is OffsetKind.COMMITTED:
            found = consumer.committed(
                [kafka.TopicPartition(t, p) for t, p in partitions], timeout=DEFAULT_TIMEOUT_S
            )
            given = {(f.topic, f.partition): f.offset if f.offset >= 0 else None for f in found}
        else:
            given = {p: spec.offsets.get(p) for p in partitions}
    except kafka.KafkaException as exc:
        raise SourceUnavailableError(
            f"{where}: cannot resolve {spec.describe()} at {settings.describe()}: {error_text(exc)}"
        ) from None
    offsets = {}
    for partition, offset in given.items():
        low, high = ends[partition]
        if offset is None:
            if spec.reset is ResetStrategy.NONE:
                topic, number = partition
                missing = (
                    f"committed offset for group {settings.group_id!r}"
                    if spec.kind is OffsetKind.COMMITTED
                    else "starting offset"
                )
                raise SourceError(
                    f"{where}: partition {number} of topic {topic!r} has no {missing}, and "
                    "the offset reset strategy is NONE"
                )
            offset = low if spec.reset is ResetStrategy.EARLIEST else high
        offsets[partition] = max(offset, low) if stopping else min(max(offset, low), high)
    return offsets


def watermarks(
    consumer: Any, partition: PartitionId, settings: ConsumerSettings, where: str
) -> tuple[int, int]:
    """(first offset, end offset) of a partition as the source reads it: the end is the last
    stable offset for a read_committed source, as a reader of it sees."""
    kafka = confluent_kafka()
    topic, number = partition
    try:
        low, high = consumer.get_watermark_offsets(
            kafka.TopicPartition(topic, number), timeout=DEFAULT_TIMEOUT_S, cached=False
        )
    except kafka.KafkaException as exc:
        code = exc.args[0].code() if exc.args and hasattr(exc.args[0], "code") else None
        if code in (kafka.KafkaError._UNKNOWN_PARTITION, kafka.KafkaError.UNKNOWN_TOPIC_OR_PART):
            raise PartitionGone(partition) from None
        raise SourceUnavailableError(
            f"{where}: cannot read the offsets of partition {number} of topic {topic!r} from "
            f"{settings.describe()}: {error_text(exc)}"
        ) from None
    return int(low), int(high)
