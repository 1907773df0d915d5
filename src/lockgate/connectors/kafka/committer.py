"""The exactly-once Kafka sink's committer: its commits run in Spark tasks, one per
transactional id (a subtask of the writer), producing the staged records of the checkpoint.

A commit of one group, in a task:

1. ``init_transactions`` with the group's transactional id: Kafka aborts whatever an older
   producer of that id left open, and fences it (a zombie attempt of an earlier commit can
   no longer add to a transaction).
2. Read the marker: the highest offset the sink's marker consumer group committed in this
   job, read stable (an offset of a transaction not yet applied fails the read, and the
   commit is tried again).
3. For each staged epoch the marker does not cover, in order: one transaction that
   produces the epoch's records and commits the epoch's marker as the group's offset
   (``send_offsets_to_transaction``); the records and the marker become visible together,
   or neither does. A transaction per epoch keeps each within ``transaction.timeout.ms``.
4. Delete the staged files (a commit redone later skips them by the marker).

A restore commits its checkpoint again: epochs the marker covers are skipped, so a commit
that died anywhere (before, during or after a transaction) is done exactly once.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections import defaultdict
from typing import Any

from fsspec.core import url_to_fs

from lockgate.connectors.kafka.client import DEFAULT_TIMEOUT_S, confluent_kafka, error_text
from lockgate.connectors.kafka.sink import KafkaSinkError, ProducerSettings
from lockgate.connectors.kafka.staged_records import (
    DIRECTORY,
    SUFFIX,
    KafkaCommittable,
    read_records,
)
from lockgate.core.two_phase_commit import CommitFailedError, TaskCommitter

log = logging.getLogger(__name__)


class KafkaCommitter(TaskCommitter):
    def __init__(self, settings: ProducerSettings):
        assert settings.transactional_id_prefix is not None
        self.settings = settings
        self.exclusive = (
            f"Kafka transactional id prefix {settings.transactional_id_prefix!r} on "
            f"{settings.bootstrap_servers}"
        )

    def groups(self, committables: list[Any]) -> list[list[Any]]:
        by_transaction: dict[str, list[Any]] = defaultdict(list)
        for raw in committables:
            by_transaction[self._read(raw).transactional_id].append(raw)
        return list(by_transaction.values())

    def commit_group(self, group: list[Any]) -> None:
        staged = sorted((self._read(raw) for raw in group), key=lambda c: c.marker)
        kafka = confluent_kafka()
        transaction = staged[0].transactional_id
        producer = None
        try:
            producer = kafka.Producer(self.settings.transactional_config(transaction))
            producer.init_transactions(DEFAULT_TIMEOUT_S)
            done: dict[str, int] = {}
            for committable in staged:
                group_name = committable.marker_group
                if group_name not in done:
                    done[group_name] = self._marker(group_name)
                if committable.marker > done[group_name]:
                    self._commit(producer, committable, done[group_name])
        except (kafka.KafkaException, TimeoutError) as exc:
            if producer is not None:
                with contextlib.suppress(kafka.KafkaException):
                    producer.abort_transaction(1)  # read_committed readers wait on it
            raise CommitFailedError(
                f"{self.settings.describe()}, sink uid '{staged[0].uid}': the commit of "
                f"transactional id {transaction!r} "
                f"(epochs {staged[0].epoch} to {staged[-1].epoch}) failed: "
                f"{_cause(exc, kafka)}"
                f"{_fenced_hint(exc)}"
            ) from exc
        for committable in staged:
            self._delete(committable.file)

    def _commit(self, producer: Any, committable: KafkaCommittable, done: int) -> None:
        """One epoch's records and its marker, in one transaction."""
        try:
            table = read_records(committable.file)
        except FileNotFoundError:
            # Only a commit deletes them; a marker that no longer says so expired
            # (offsets.retention.minutes) since, with the group's other offsets
            if done < 0:
                log.warning(
                    "%s: staged records %s are gone and marker group %s has no offset: "
                    "taken as committed long ago",
                    self.settings.describe(),
                    committable.file,
                    committable.marker_group,
                )
                return
            raise KafkaSinkError(
                f"{self.settings.describe()}, sink uid '{committable.uid}': the staged records "
                f"of epoch {committable.epoch} "
                f"({committable.file}) are gone, but marker group {committable.marker_group} "
                "does not mark them committed: they are lost"
            ) from None
        kafka = confluent_kafka()
        topics, keys, values = (table.column(i).to_pylist() for i in range(3))
        producer.begin_transaction()
        for topic, key, value in zip(topics, keys, values, strict=True):
            while True:
                try:
                    producer.produce(topic, value, key)
                    break
                except BufferError:  # the producer's queue is full: let it send
                    producer.poll(0.1)
        group = kafka.Consumer(self.settings.client_config(committable.marker_group))
        try:
            producer.send_offsets_to_transaction(
                [kafka.TopicPartition(topics[0], 0, committable.marker)],
                group.consumer_group_metadata(),
                DEFAULT_TIMEOUT_S,
            )
        finally:
            group.close()
        producer.commit_transaction(DEFAULT_TIMEOUT_S)

    def _marker(self, group: str) -> int:
        """The highest marker a commit recorded in ``group`` (-1: none)."""
        kafka = confluent_kafka()
        from confluent_kafka.admin import AdminClient  # confluent_kafka() checked it is there

        admin = AdminClient(self.settings.client_config(None))
        request = kafka.ConsumerGroupTopicPartitions(group)
        [future] = admin.list_consumer_group_offsets([request], require_stable=True).values()
        offsets = future.result(DEFAULT_TIMEOUT_S).topic_partitions or []
        for partition in offsets:
            if partition.error is not None:
                raise kafka.KafkaException(partition.error)
        return max((tp.offset for tp in offsets if tp.offset >= 0), default=-1)

    @staticmethod
    def _delete(url: str) -> None:
        fs, path = url_to_fs(url)
        if fs.exists(path):
            fs.rm(path)

    def may_stage(self, url: str) -> bool:
        """A staged file of a Kafka sink: ``.../sink-files/kafka/<sink>/<subtask>/<attempt>``
        with nothing that leads elsewhere (``..``)."""
        _, path = url_to_fs(url)
        return _STAGED.search(path) is not None and ".." not in path.split("/")

    def staged_files(self, committable: Any) -> list[str]:
        return [self._read(committable).file]

    def _read(self, raw: Any) -> KafkaCommittable:
        """A committable from a checkpoint, whose file the commit reads and deletes: only a
        staged records file, whatever the checkpoint says."""
        committable = KafkaCommittable.read(raw)
        if not self.may_stage(committable.file):
            raise KafkaSinkError(
                f"{self.settings.describe()}: a committable of sink uid '{committable.uid}' "
                f"names {committable.file}, which is not a file a Kafka sink stages: not "
                "committed"
            )
        return committable

    def abort(self, url: str) -> None:
        self._delete(url)


_STAGED = re.compile(
    rf"/sink-files/{DIRECTORY}/[0-9a-f]{{12}}/[0-9]+/e[0-9]+-g[0-9]+t[0-9]+a[0-9]+"
    rf"{re.escape(SUFFIX)}$"
)


def _cause(exc: Exception, kafka: Any) -> str:
    if isinstance(exc, kafka.KafkaException):
        return error_text(exc)
    return str(exc) or f"no answer within {DEFAULT_TIMEOUT_S:.0f} s"


def _fenced_hint(exc: Exception) -> str:
    text = str(exc).lower()
    if "fenced" in text or "epoch" in text:
        return (
            "; another producer took over the transactional id, or the transaction ran "
            "past transaction.timeout.ms: does another running job use this sink's "
            "transactional id prefix (give each job its own), or is one epoch's output "
            "too large to produce within the timeout?"
        )
    return ""
