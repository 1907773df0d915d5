"""The Kafka sink as the job graph holds it: where records go and with which guarantee. Its
writer (``writer.py``) produces from the subtask hosts.

- ``NONE``: records are produced as they come; nothing waits for the brokers.
- ``AT_LEAST_ONCE``: at the end of every epoch the writer waits until the brokers have
  acknowledged every record of it; an epoch whose records are not all acknowledged fails
  and runs again, so a failure may repeat records, never lose them.
- ``EXACTLY_ONCE``: the writer stages each epoch's records in a file, and once the
  checkpoint that covers it completes they are produced in one Kafka transaction per
  subtask, which also records the epoch as the offset of a marker consumer group: a commit
  redone after a failure sees it and produces nothing twice (``committer.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lockgate.connectors.kafka.client import CHECK_TIMEOUT_S, confluent_kafka, error_text

NONE = "NONE"
AT_LEAST_ONCE = "AT_LEAST_ONCE"
EXACTLY_ONCE = "EXACTLY_ONCE"

# Properties the sink sets itself, refused when given: they would not take effect
OWN_PRODUCER_PROPERTIES = {
    "transactional.id": "set_transactional_id_prefix names the sink's transactions",
    "key.serializer": "KafkaRecordSerializationSchema encodes keys",
    "value.serializer": "KafkaRecordSerializationSchema encodes values",
}


# Properties whose values may not go with idempotence (librdkafka refuses acks other than
# all, more than 5 requests in flight, no retries): given one, idempotence is the user's
_IDEMPOTENCE_CONFLICTS = {
    "enable.idempotence",
    "acks",
    "request.required.acks",
    "max.in.flight",
    "max.in.flight.requests.per.connection",
    "retries",
    "message.send.max.retries",
}


# Properties of how a client reaches the brokers, which the marker's clients take too
_CONNECTION_PROPERTIES = (
    "security.",
    "sasl.",
    "ssl.",
    "ssl_",
    "enable.ssl.",
    "socket.",
    "broker.address.",
    "client.dns.lookup",
    "https.",
)


class KafkaSinkError(RuntimeError):
    """The brokers did not take a sink's records."""


@dataclass(frozen=True)
class ProducerSettings:
    bootstrap_servers: str
    guarantee: str  # NONE, AT_LEAST_ONCE or EXACTLY_ONCE
    serializer: Any  # a KafkaRecordSerializationSchema: element -> (topic, key, value)
    properties: dict[str, str] = field(default_factory=dict)  # the client's, as given
    transactional_id_prefix: str | None = None  # EXACTLY_ONCE's transactions

    def config(self, client_id: str) -> dict[str, Any]:
        # Kafka's Java producer's defaults (librdkafka's differ): records of one key go to
        # the partition Java clients and Flink choose, acknowledged by all replicas, without
        # duplicates from the producer's own retries; idempotence only where the properties
        # given allow it, as Java's producer decides
        config: dict[str, Any] = {"partitioner": "murmur2_random", "acks": "all"}
        if not _IDEMPOTENCE_CONFLICTS & self.properties.keys():
            config["enable.idempotence"] = True
        return {
            **config,
            "client.id": client_id,
            **self.properties,
            "bootstrap.servers": self.bootstrap_servers,
        }

    def client_config(self, group: str | None) -> dict[str, Any]:
        """The exactly-once commit's consumer-group clients (the marker): the brokers and
        the properties that reach them (security, addresses), none of the producer's."""
        config: dict[str, Any] = {
            key: value
            for key, value in self.properties.items()
            if key.startswith(_CONNECTION_PROPERTIES)
        }
        config.update({"bootstrap.servers": self.bootstrap_servers, "client.id": "lockgate-marker"})
        return {**config, "group.id": group} if group is not None else config

    def transactional_config(self, transactional_id: str) -> dict[str, Any]:
        return {
            **self.config(f"lockgate-commit-{transactional_id}"),
            "transactional.id": transactional_id,
        }

    def describe(self) -> str:
        return f"KafkaSink to {self.bootstrap_servers}"

    def _check_transactions(self, kafka: Any) -> None:
        """A transactional producer of the prefix, initialized once (its own id, which
        fences no subtask's): properties, a timeout or ACLs the brokers refuse fail here."""
        transaction = f"{self.transactional_id_prefix}-lockgate-check"
        try:
            producer = kafka.Producer(self.transactional_config(transaction))
            producer.init_transactions(CHECK_TIMEOUT_S)
            kafka.Consumer(self.client_config("lockgate-check")).close()
        except kafka.KafkaException as exc:
            raise KafkaSinkError(
                f"{self.describe()}: a transactional producer ({transaction!r}) cannot start: "
                f"{error_text(exc)}"
            ) from None

    def validate(self) -> None:
        """Before the job starts: the client takes the properties, the brokers answer, and
        a fixed topic exists."""
        kafka = confluent_kafka()
        try:
            producer = kafka.Producer(self.config("lockgate-check"))
        except kafka.KafkaException as exc:
            raise KafkaSinkError(f"{self.describe()}: {error_text(exc)}") from None
        if self.transactional_id_prefix is not None:
            self._check_transactions(kafka)
        try:
            metadata = producer.list_topics(timeout=CHECK_TIMEOUT_S)
        except kafka.KafkaException as exc:
            raise KafkaSinkError(
                f"{self.describe()}: the brokers do not answer: {error_text(exc)}"
            ) from None
        topic = getattr(self.serializer, "topic", None)
        if topic is not None and (
            topic not in metadata.topics or metadata.topics[topic].error is not None
        ):
            raise KafkaSinkError(
                f"{self.describe()}: topic {topic!r} does not exist (create it first)"
            )
