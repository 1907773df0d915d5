"""Reading one epoch's range of a partition, inside a Spark task (a subtask host).

The driver fixed the range: offsets ``[start, start + max_records)``, all below the end the
partition had when the epoch was planned, so every offset of it exists. Not every offset is
a record: transaction markers take offsets, and a read_committed reader skips aborted
records. So the reader stops at the first record at or beyond the range's end, or where the
partition ends (librdkafka's end-of-partition event) at or beyond it: either way the split's
position after the epoch is the range's end, whatever the attempt that read it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from lockgate.common.watermark_strategy import LONG_MIN
from lockgate.connectors.kafka.client import DEFAULT_TIMEOUT_S, ConsumerSettings, confluent_kafka
from lockgate.connectors.kafka.splits import partition_of
from lockgate.core.source import SourceError, SplitAssignment, SplitProgress

_BATCH = 1000  # messages per consume() call


def read_range(
    consumer: Any,
    settings: ConsumerSettings,
    assignment: SplitAssignment,
    deserialize: Callable[[Any], Any],
    progress: dict[str, SplitProgress],
) -> Iterator[tuple[Any, int]]:
    """(record, Kafka timestamp) of every message in the assignment's range; records
    ``deserialize`` turns into None are dropped."""
    kafka = confluent_kafka()
    topic, number = partition_of(assignment.split)
    start = assignment.start
    end = start + assignment.max_records
    where = f"partition {number} of topic {topic!r} at {settings.bootstrap_servers}"
    consumer.assign([kafka.TopicPartition(topic, number, start)])
    partition_eof = kafka.KafkaError._PARTITION_EOF
    no_timestamp = kafka.TIMESTAMP_NOT_AVAILABLE
    position = start
    deadline = time.monotonic() + DEFAULT_TIMEOUT_S
    try:
        while position < end:
            messages = consumer.consume(min(end - position, _BATCH), 1.0)
            if not messages:
                if time.monotonic() > deadline:
                    raise SourceError(
                        f"no message from {where} for {DEFAULT_TIMEOUT_S:.0f} s: offsets "
                        f"{position} to {end - 1} were planned but not delivered"
                    )
                continue
            deadline = time.monotonic() + DEFAULT_TIMEOUT_S
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == partition_eof:
                        if message.offset() >= end:
                            position = end  # markers or aborted records fill the rest
                        continue
                    raise SourceError(f"reading {where} failed: {error.str()}")
                offset = message.offset()
                if offset >= end:
                    position = end
                    break
                try:
                    value = deserialize(message)
                except Exception as exc:
                    raise SourceError(
                        f"cannot deserialize the message at offset {offset} of {where}: "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                position = offset + 1
                if value is not None:
                    kind, timestamp = message.timestamp()
                    yield value, LONG_MIN if kind == no_timestamp else timestamp
    finally:
        consumer.unassign()
    progress[assignment.split] = SplitProgress(end, assignment.last)
