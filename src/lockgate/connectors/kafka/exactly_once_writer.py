"""The Kafka sink's writer for EXACTLY_ONCE: records encoded as they come, staged in a file at
the end of every epoch (the pre-commit), produced only by the commit once a checkpoint
covers the epoch (``committer.py``). Staging per epoch, not per checkpoint, leaves nothing
open between epochs: a subtask that moves or whose task is retried loses nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lockgate.connectors.kafka.sink import ProducerSettings
from lockgate.connectors.kafka.staged_records import (
    DIRECTORY,
    SUFFIX,
    KafkaCommittable,
    write_records,
)
from lockgate.core.fs.storage import Storage
from lockgate.core.two_phase_commit import sink_digest
from lockgate.runtime.subtaskhost.operators import Operator, OperatorContext


def transactional_id(prefix: str, subtask: int) -> str:
    """One per subtask, as Flink names them: a new producer of it fences older ones."""
    return f"{prefix}-{subtask}"


def marker_group(transactional_id: str, uid: str, job_id: str) -> str:
    """The consumer group whose offset marks the last epoch a job's commits of a sink's
    ``transactional_id`` produced (of the job: another job's epochs are others)."""
    return f"lockgate-commits-{transactional_id}-{sink_digest(uid)}-{job_id}"


class KafkaExactlyOnceWriter(Operator):
    def __init__(self, ctx: OperatorContext, settings: ProducerSettings):
        super().__init__(ctx)
        assert settings.transactional_id_prefix is not None
        self.settings = settings
        self.serialize = settings.serializer.serialize
        self.topics: list[str] = []
        self.keys: list[Any] = []
        self.values: list[Any] = []
        self.pending: list[KafkaCommittable] = []  # staged, not yet covered by a checkpoint

    def process(self, value: Any) -> None:
        try:
            topic, key, data = self.serialize(value)
        except Exception as exc:
            raise self.failure(exc, value, "the KafkaRecordSerializationSchema") from exc
        self.topics.append(topic)
        self.keys.append(key)
        self.values.append(data)

    def end_epoch(self) -> None:
        if not self.values:
            return
        ctx = self.ctx
        staging = ctx.staging
        if staging is None:
            raise RuntimeError("Kafka records staged outside an epoch (no staging log)")
        relative = f"{DIRECTORY}/{sink_digest(ctx.uid)}/{ctx.index}/{ctx.attempt}{SUFFIX}"
        url = Storage(ctx.sink_files).url_of(relative)
        staging.stage(url)  # recorded before it exists
        write_records(url, self.topics, self.keys, self.values)
        assert self.settings.transactional_id_prefix is not None
        transaction = transactional_id(self.settings.transactional_id_prefix, ctx.index)
        self.pending.append(
            KafkaCommittable(
                ctx.uid,
                ctx.epoch,
                ctx.generation,
                url,
                len(self.values),
                transaction,
                marker_group(transaction, ctx.uid, ctx.job_id),
            )
        )
        self.topics, self.keys, self.values = [], [], []

    def snapshot_state(self) -> dict[str, Any]:
        return {"committables": [c.to_json() for c in self.pending]}

    def restore_state(self, state: dict[str, Any]) -> None:
        self.pending = [KafkaCommittable.read(raw) for raw in state.get("committables", ())]

    def notify_checkpoint_complete(self, epoch: int) -> None:
        self.pending = [c for c in self.pending if c.epoch > epoch]

    def close(self) -> None:
        """Records not staged belong to an attempt that failed: its epoch runs again."""
        self.topics, self.keys, self.values = [], [], []


def kafka_exactly_once_writer(
    settings: ProducerSettings,
) -> Callable[[OperatorContext], KafkaExactlyOnceWriter]:
    def create(ctx: OperatorContext) -> KafkaExactlyOnceWriter:
        return KafkaExactlyOnceWriter(ctx, settings)

    return create
