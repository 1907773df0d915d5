"""The Kafka sink's writer in a subtask host: one producer per subtask, for the run."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from lockgate.connectors.kafka.client import DEFAULT_TIMEOUT_S, confluent_kafka
from lockgate.connectors.kafka.sink import AT_LEAST_ONCE, KafkaSinkError, ProducerSettings
from lockgate.runtime.subtaskhost.operators import Operator, OperatorContext

log = logging.getLogger(__name__)
_POLL_EVERY = 1000  # records between serving the producer's delivery reports


class KafkaSinkWriter(Operator):
    def __init__(self, ctx: OperatorContext, settings: ProducerSettings):
        super().__init__(ctx)
        self.settings = settings
        self.serialize = settings.serializer.serialize
        self.producer: Any = None
        self.unpolled = 0
        self.error: str | None = None  # the first delivery failure since the last check

    def _producer(self) -> Any:
        if self.producer is None:
            client_id = f"lockgate-{self.ctx.uid}-{self.ctx.index}"
            self.producer = confluent_kafka().Producer(self.settings.config(client_id))
        return self.producer

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None and self.error is None:
            self.error = f"{error.str()} (topic {message.topic()!r})"

    def process(self, value: Any) -> None:
        try:
            topic, key, data = self.serialize(value)
        except Exception as exc:
            raise self.failure(exc, value, "the KafkaRecordSerializationSchema") from exc
        producer = self.producer or self._producer()
        while True:
            try:
                producer.produce(topic, data, key, on_delivery=self._delivered)
                break
            except BufferError:  # the producer's queue is full: let it send
                producer.poll(0.1)
        self.unpolled += 1
        if self.unpolled >= _POLL_EVERY:
            producer.poll(0)
            self.unpolled = 0

    def end_epoch(self) -> None:
        """At least once: every record of the epoch is acknowledged before the epoch is."""
        if self.producer is None:
            return
        if self.settings.guarantee == AT_LEAST_ONCE:
            left = self.producer.flush(DEFAULT_TIMEOUT_S)
            if left and self.error is None:
                self.error = f"{left} records not acknowledged within {DEFAULT_TIMEOUT_S:.0f} s"
            self._check()
        else:
            self.producer.poll(0)
            if self.error is not None:
                log.warning("%s lost records (delivery NONE): %s", self._where(), self.error)
                self.error = None

    def _check(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise KafkaSinkError(
                f"{self._where()}: the brokers did not take the epoch's records: {error}"
            )

    def _where(self) -> str:
        ctx = self.ctx
        return (
            f"{self.settings.describe()}, operator '{ctx.name}' (uid '{ctx.uid}', subtask "
            f"{ctx.index}, epoch {ctx.epoch})"
        )

    def close(self) -> None:
        """At the end of input every record is acknowledged already (``end_epoch``), but
        for NONE; on a failure, what is left belongs to an attempt that failed: at least
        once drops it (the epoch runs again), NONE still sends it."""
        producer, self.producer = self.producer, None
        if producer is None:
            return
        if self.settings.guarantee == AT_LEAST_ONCE:
            producer.purge()
            producer.flush(0)
            return
        left = producer.flush(DEFAULT_TIMEOUT_S)
        if left and self.error is None:
            self.error = f"{left} records not acknowledged within {DEFAULT_TIMEOUT_S:.0f} s"
        if self.error is not None:
            log.warning("%s lost records (delivery NONE): %s", self._where(), self.error)


def kafka_sink_writer(settings: ProducerSettings) -> Callable[[OperatorContext], KafkaSinkWriter]:
    def create(ctx: OperatorContext) -> KafkaSinkWriter:
        return KafkaSinkWriter(ctx, settings)

    return create
