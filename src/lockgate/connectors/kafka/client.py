"""The Kafka client lockgate uses (confluent-kafka, on librdkafka), and the settings every
consumer of a source is made from.

confluent-kafka is an optional dependency (``pip install 'lockgate[kafka]'``): a job that
uses no Kafka connector needs none of it, and one that does fails before it starts, saying
what to install, where the driver or an executor lacks it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from lockgate.core.source import SourceError

# Properties lockgate sets itself on a source's consumers: a value given for one of these
# would not take effect, so it is refused (Flink overrides them the same way)
OWN_CONSUMER_PROPERTIES = {
    "enable.auto.commit": "offsets live in lockgate's checkpoints, not in auto-commits",
    "enable.partition.eof": "a reader needs to see where a partition ends",
    "auto.offset.reset": "KafkaOffsetsInitializer chooses where a partition starts",
    "key.deserializer": "set_value_only_deserializer or set_deserializer decodes messages",
    "value.deserializer": "set_value_only_deserializer or set_deserializer decodes messages",
}
# What a request to the broker may take before a reader or the driver gives up, naming it
DEFAULT_TIMEOUT_S = 30.0
# What the check before a job starts waits for the brokers to answer
CHECK_TIMEOUT_S = 10.0


def confluent_kafka() -> ModuleType:
    try:
        import confluent_kafka as module
    except ImportError:
        raise SourceError(
            "the Kafka connector needs confluent-kafka: pip install 'lockgate[kafka]'"
        ) from None
    return module


def error_text(exc: Exception) -> str:
    """The message of a confluent-kafka exception (its KafkaError's)."""
    text = getattr(exc.args[0], "str", None) if exc.args else None
    return str(text()) if callable(text) else str(exc)


@dataclass(frozen=True)
class ConsumerSettings:
    """What every consumer of one source is made from (driver and tasks alike)."""

    bootstrap_servers: str
    properties: dict[str, str] = field(default_factory=dict)  # the client's, as given
    group_id: str | None = None
    client_id_prefix: str | None = None

    def config(self, purpose: str) -> dict[str, Any]:
        """The consumer configuration; ``purpose`` names the consumer in the broker's logs."""
        config: dict[str, Any] = {
            # Kafka's default, which Flink keeps (librdkafka's is read_committed)
            "isolation.level": "read_uncommitted",
            **self.properties,
            "bootstrap.servers": self.bootstrap_servers,
            # a group id is needed by librdkafka even for assigned partitions; offsets are
            # committed to it only when the job has one (set_group_id)
            "group.id": self.group_id or "lockgate-unassigned",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "error",
        }
        if "client.id" not in self.properties:
            config["client.id"] = (
                f"{self.client_id_prefix or self.group_id or 'lockgate'}-{purpose}"
            )
        return config

    def describe(self) -> str:
        return f"Kafka at {self.bootstrap_servers}"
