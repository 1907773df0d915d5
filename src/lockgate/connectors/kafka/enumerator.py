"""The Kafka source's split enumerator, on the driver: which topic partitions exist, where
each is read up to, and how far each epoch reads.

A split is one topic partition and its position the next offset to read. Each epoch reads
of a partition the offsets from its position up to an end the driver fixes when it plans
the epoch (the partition's end at that moment, its stopping offset, or the epoch's cap), so
a re-run of the epoch reads exactly the same records, and a checkpoint holds every
partition's position: a restore resumes there, at any parallelism. The driver learns ends
and partitions from the broker's metadata; records are read only by the tasks.

A partition is read by subtask ``(start + partition) % parallelism``, where ``start`` comes
from the topic's Java hash code, as Flink's KafkaSourceEnumerator assigns them. Topics and
partitions are discovered again every ``partition.discovery.interval.ms`` while the source
is unbounded; a partition found after the start is read from its earliest offset, as in
Flink. A partition that is gone (its topic deleted) is no longer read. A position no longer
in its partition (records deleted by retention before they were read, a topic made anew, a
log truncated) goes on by the starting offsets' reset strategy, as Flink's consumers do
(``auto.offset.reset``), with a warning naming what was skipped; with ``NONE`` the job fails.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, replace
from typing import Any

from lockgate.common.records import Record, RecordFormatError
from lockgate.connectors.kafka.client import (
    DEFAULT_TIMEOUT_S,
    ConsumerSettings,
    confluent_kafka,
    error_text,
)
from lockgate.connectors.kafka.offsets import (
    OffsetKind,
    OffsetsSpec,
    PartitionGone,
    ResetStrategy,
    resolve,
    watermarks,
)
from lockgate.connectors.kafka.splits import PartitionId, partition_of, split_id
from lockgate.core.source import (
    Position,
    SourceError,
    SourceUnavailableError,
    SplitAssignment,
    SplitEnumerator,
    SplitProgress,
)

STATE_FORMAT = "lockgate-kafka-source"
STATE_VERSION = 1
log = logging.getLogger(__name__)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (a signed 32-bit int)."""
    value = 0
    data = text.encode("utf-16-be")
    for index in range(0, len(data), 2):
        value = (31 * value + int.from_bytes(data[index : index + 2], "big")) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def owner(partition: PartitionId, parallelism: int) -> int:
    """The subtask that reads ``partition`` (Flink's ``KafkaSourceEnumerator.getSplitOwner``)."""
    topic, number = partition
    start = ((java_string_hash(topic) * 31) & 0x7FFFFFFF) % parallelism
    return (start + number) % parallelism


@dataclass(frozen=True)
class KafkaPartitionSplit(Record, array=True):
    """JSON: ``[topic, partition, position, stop]`` (``stop`` null: read on)."""

    topic: str
    partition: int
    position: Position  # the next offset to read
    stop: int | None  # the offset the source stops at (bounded, or given stopping offsets)

    @property
    def id(self) -> PartitionId:
        return self.topic, self.partition

    @property
    def done(self) -> bool:
        return self.stop is not None and self.position >= self.stop


@dataclass(frozen=True)
class KafkaEnumeratorState(Record, format=STATE_FORMAT, version=STATE_VERSION):
    """A checkpoint's ``coordinator_state`` of a Kafka source."""

    splits: tuple[KafkaPartitionSplit, ...]  # sorted by topic and partition

    def validate(self, where: str) -> None:
        ids = [s.id for s in self.splits]
        if len(set(ids)) != len(ids):
            raise RecordFormatError(f"{where}: a partition is listed twice")


@dataclass(frozen=True)
class Subscription:
    """Which partitions a source reads: topics, a topic pattern, or given partitions."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None  # a regular expression a whole topic name matches
    partitions: tuple[PartitionId, ...] = ()

    def describe(self) -> str:
        if self.pattern is not None:
            return f"topics matching {self.pattern!r}"
        if self.partitions:
            return f"partitions {sorted(self.partitions)}"
        return f"topics {list(self.topics)}"


@dataclass(frozen=True)
class KafkaSourceSettings:
    """What a Kafka source reads and how far: the builder's choices, as the job graph
    holds them (the source's) and its enumerator plans from them."""

    consumer: ConsumerSettings
    subscription: Subscription
    starting: OffsetsSpec
    stopping: OffsetsSpec | None
    bounded: bool
    discovery_interval_ms: int  # <= 0: discover once
    commit_offsets: bool  # commit checkpoints' offsets to the consumer group (if it has one)

    def describe(self) -> str:
        topics = self.subscription.describe()
        return f"KafkaSource of {topics} at {self.consumer.bootstrap_servers}"


class KafkaSplitEnumerator(SplitEnumerator):
    def __init__(self, source: KafkaSourceSettings, parallelism: int):
        self.source = source
        self.settings = source.consumer
        self.parallelism = parallelism
        self.where = source.describe()
        self.splits: dict[PartitionId, KafkaPartitionSplit] = {}
        self.next_discovery: float | None = 0.0  # monotonic; None: no more discoveries
        self.discovered = False  # the first discovery, which uses the starting offsets, ran
        self.planned_to_stop = False  # the last plan reads every partition to its stop
        self._consumer: Any = None

    # Metadata ------------------------------------------------------------------------------

    def consumer(self) -> Any:
        """The driver's consumer: offsets and metadata only, never records."""
        if self._consumer is None:
            self._consumer = confluent_kafka().Consumer(self.settings.config("enumerator"))
        return self._consumer

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _partitions(self) -> list[PartitionId]:
        """The partitions the subscription names now."""
        subscription = self.source.subscription
        wanted = set(subscription.partitions)
        try:
            metadata = self.consumer().list_topics(timeout=DEFAULT_TIMEOUT_S)
        except confluent_kafka().KafkaException as exc:
            raise SourceUnavailableError(
                f"{self.where}: cannot list the topics of {self.settings.describe()}: "
                f"{error_text(exc)}"
            ) from None
        found: list[PartitionId] = []
        pattern = re.compile(subscription.pattern) if subscription.pattern else None
        for name, topic in metadata.topics.items():
            if topic.error is not None:
                continue
            if pattern is not None:
                if not pattern.fullmatch(name) or name.startswith("__"):
                    continue
            elif not subscription.partitions and name not in subscription.topics:
                continue
            found += [(name, p) for p in topic.partitions if not wanted or (name, p) in wanted]
        missing = None
        if not subscription.partitions and pattern is None:
            topics = sorted(set(subscription.topics) - {t for t, _ in found})
            if topics:
                missing = f"topic {topics[0]!r}"
        elif subscription.partitions:
            absent = sorted(wanted - set(found))
            if absent:
                missing = f"partition {absent[0][1]} of topic {absent[0][0]!r}"
        if missing is not None and not self.discovered:  # later: deleted, warned in plan
            raise SourceError(
                f"{self.where}: {missing} does not exist at {self.settings.describe()}"
            )
        return sorted(found)

    def _discover(self) -> None:
        new = [p for p in self._partitions() if p not in self.splits]
        if new:
            # the first discovery starts where the source is told to, later ones at the start
            spec = self.source.starting if not self.discovered else OffsetsSpec(OffsetKind.EARLIEST)
            starts = resolve(spec, new, self.consumer(), self.settings, self.where)
            stops = self._stops(new)
            for partition in new:
                stop = stops.get(partition)
                position = starts[partition] if stop is None else min(starts[partition], stop)
                self.splits[partition] = KafkaPartitionSplit(*partition, position, stop)
            if self.discovered:
                log.info("%s: new partitions %s", self.where, [split_id(p) for p in new])
        self.discovered = True
        interval = self.source.discovery_interval_ms
        self.next_discovery = (
            None if self.source.bounded or interval <= 0 else time.monotonic() + interval / 1000
        )

    def _stops(self, partitions: list[PartitionId]) -> dict[PartitionId, int]:
        if self.source.stopping is None:
            return {}
        return resolve(
            self.source.stopping,
            partitions,
            self.consumer(),
            self.settings,
            self.where,
            stopping=True,
        )

    def _ends(self, partition: PartitionId) -> tuple[int, int] | None:
        """(first offset, end) of a partition; None when it is gone, which is logged and
        drops its split."""
        try:
            return watermarks(self.consumer(), partition, self.settings, self.where)
        except PartitionGone:
            log.warning(
                "%s: partition %s is gone (its topic was deleted?); it is no longer read",
                self.where,
                split_id(partition),
            )
            del self.splits[partition]
            return None

    def _reset(self, split: KafkaPartitionSplit, low: int, high: int) -> int:
        """Where ``split`` goes on when its position is outside ``[low, high]``."""
        strategy = self.source.starting.reset_strategy()
        lost = (
            f"offsets {split.position} to {low - 1} were deleted before they were read"
            if split.position < low
            else f"its position {split.position} is beyond its end {high} (a topic made "
            "anew, a truncated log)"
        )
        if strategy is ResetStrategy.NONE:
            raise SourceError(
                f"{self.where}: partition {split_id(split.id)}: {lost}, and the offset reset "
                "strategy is NONE"
            )
        position = low if strategy is ResetStrategy.EARLIEST else high
        log.warning(
            "%s: partition %s: %s; reading on from offset %d (%s)",
            self.where,
            split_id(split.id),
            lost,
            position,
            strategy.name,
        )
        return position

    # SplitEnumerator ----------------------------------------------------------------------

    def plan(self, max_records_per_split: int) -> dict[int, list[SplitAssignment]]:
        if self.next_discovery is not None and time.monotonic() >= self.next_discovery:
            self._discover()
        assignments: dict[int, list[SplitAssignment]] = {}
        self.planned_to_stop = True
        for partition, split in list(self.splits.items()):
            if split.done:
                continue
            ends = self._ends(partition)
            if ends is None:
                continue
            low, high = ends
            if not low <= split.position <= high:
                split = replace(split, position=self._reset(split, low, high))
                self.splits[partition] = split
            end = min(high, split.position + max_records_per_split)
            if split.stop is not None:
                end = min(end, split.stop)
            if end <= split.position:
                self.planned_to_stop &= split.done
                continue
            last = split.stop is not None and end >= split.stop
            self.planned_to_stop &= last
            assignments.setdefault(owner(partition, self.parallelism), []).append(
                SplitAssignment(split_id(partition), split.position, end - split.position, last)
            )
        return assignments

    def will_finish(self) -> bool:
        return self.source.bounded and self.next_discovery is None and self.planned_to_stop

    def acknowledge(self, progress: dict[str, SplitProgress]) -> None:
        for name, report in progress.items():
            partition = partition_of(name)
            self.splits[partition] = replace(self.splits[partition], position=report.position)

    def is_finished(self) -> bool:
        return (
            self.source.bounded
            and self.next_discovery is None
            and all(split.done for split in self.splits.values())
        )

    def snapshot(self) -> dict[str, Any]:
        if self.next_discovery is not None and not self.discovered:
            self._discover()  # a checkpoint before the first plan holds the starting offsets
        splits = tuple(sorted(self.splits.values(), key=lambda s: s.id))
        state: dict[str, Any] = KafkaEnumeratorState(splits).to_json()
        return state

    def restore(self, snapshot: Any, where: str) -> None:
        state = KafkaEnumeratorState.from_json(snapshot, where)
        self.splits = {split.id: split for split in state.splits}
        self.discovered = True  # partitions found later start at their earliest offset
        # a bounded source reads the partitions of its checkpoint; an unbounded one looks
        # for new ones at once
        self.next_discovery = None if self.source.bounded else 0.0

    def notify_checkpoint_complete(self, snapshot: Any) -> None:
        """Commit the positions of a completed checkpoint to the consumer group, for
        monitoring (Flink's ``commit.offsets.on.checkpoint``); lockgate restores from its
        checkpoints, never from these. A failed commit is logged, as in Flink."""
        if snapshot is None or not self.source.commit_offsets or self.settings.group_id is None:
            return
        kafka = confluent_kafka()
        state = KafkaEnumeratorState.from_json(snapshot, self.where)
        offsets = [kafka.TopicPartition(s.topic, s.partition, s.position) for s in state.splits]
        if not offsets:
            return
        try:
            self.consumer().commit(offsets=offsets, asynchronous=True)
        except kafka.KafkaException as exc:
            log.warning(
                "%s: committing offsets to group %r failed: %s",
                self.where,
                self.settings.group_id,
                exc,
            )
