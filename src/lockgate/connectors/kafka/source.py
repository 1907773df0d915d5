"""The Kafka source as the job graph holds it: where to read, from which offsets, until
when, and how to decode. The driver plans with its enumerator (``enumerator.py``); subtask
hosts read with its reader (``reader.py``), each keeping one consumer for the run."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from lockgate.connectors.kafka.client import (
    CHECK_TIMEOUT_S,
    confluent_kafka,
    error_text,
)
from lockgate.connectors.kafka.enumerator import KafkaSourceSettings, KafkaSplitEnumerator
from lockgate.connectors.kafka.reader import read_range
from lockgate.core.source import Source, SourceError, SplitAssignment, SplitProgress

# Flink's default interval of partition discovery for an unbounded source
DEFAULT_DISCOVERY_INTERVAL_MS = 300_000


class KafkaPartitionSource(Source):
    timestamped = True  # records carry their Kafka timestamps

    def __init__(self, settings: KafkaSourceSettings, deserialize: Callable[[Any], Any]):
        self.settings = settings
        self.deserialize = deserialize  # a confluent-kafka Message -> record (None: drop)
        self._consumer: Any = None  # the reader's, in a subtask host; never pickled

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_consumer": None}

    @property
    def bounded(self) -> bool:  # type: ignore[override]
        return self.settings.bounded

    def describe(self) -> str:
        return self.settings.describe()

    def validate(self) -> None:
        """Before the job starts: the client is installed, takes the properties, and the
        brokers answer."""
        kafka = confluent_kafka()
        try:
            consumer = kafka.Consumer(self.settings.consumer.config("check"))
        except kafka.KafkaException as exc:
            raise SourceError(f"{self.describe()}: {error_text(exc)}") from None
        try:
            consumer.list_topics(timeout=CHECK_TIMEOUT_S)
        except kafka.KafkaException as exc:
            raise SourceError(
                f"{self.describe()}: the brokers do not answer: {error_text(exc)}"
            ) from None
        finally:
            consumer.close()

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def create_enumerator(self, parallelism: int) -> KafkaSplitEnumerator:
        return KafkaSplitEnumerator(self.settings, parallelism)

    def read(
        self, assignment: SplitAssignment, payload: Any, progress: dict[str, SplitProgress]
    ) -> Iterator[tuple[Any, int]]:
        if self._consumer is None:
            self._consumer = confluent_kafka().Consumer(self.settings.consumer.config("reader"))
        return read_range(
            self._consumer, self.settings.consumer, assignment, self.deserialize, progress
        )
