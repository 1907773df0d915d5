"""The exactly-once Kafka sink's committer: its commits run in Spark tasks, one per
transactional id (a subtask of the writer), producing the staged records of the checkpoint.

A commit of one group, in a task:

1. ``init_transactions`` with the group's transactional id: Kafka aborts whatever an older
   producer of that id left open, and fences it (a zombie attempt of an earlier commit can
   no longer add to a transaction).
2. Read the marker: the highest offset the marker consumer group committed, which is the
   last epoch whose records a commit of this job produced (stable: the init waited for any
   earlier transaction of the id to finish).
3. If the staged epochs are newer: in one transaction, produce their records in epoch
   order, commit the newest epoch as the marker group's offset
   (``send_offsets_to_transaction``), and commit. The records and the marker become
   visible together, or neither does.
4. Delete the staged files (a commit redone later skips them by the marker).

A restore commits its checkpoint again: epochs the marker covers are skipped, so a commit
that died anywhere (before, during or after its transaction) is done exactly once.
"""

from __future__ import annotations

import logging
import posixpath
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

log = logging.getLogger("lockgate")


class KafkaCommitter(TaskCommitter):
    def __init__(self, settings: ProducerSettings):
        self.settings = settings

    def groups(self, committables: list[Any]) -> list[list[Any]]:
        by_transaction: dict[str, list[Any]] = defaultdict(list)
        for raw in committables:
            by_transaction[KafkaCommittable.read(raw).transactional_id].append(raw)
        return list(by_transaction.values())

    def commit_group(self, group: list[Any]) -> None:
        staged = sorted((KafkaCommittable.read(raw) for raw in group), key=lambda c: c.epoch)
        by_marker: dict[str, list[KafkaCommittable]] = defaultdict(list)
        for committable in staged:
            by_marker[committable.marker_group].append(committable)
        kafka = confluent_kafka()
        transaction = staged[0].transactional_id
        try:
            producer = kafka.Producer(self.settings.transactional_config(transaction))
            producer.init_transactions(DEFAULT_TIMEOUT_S)
            for marker, committables in by_marker.items():
                self._commit(producer, transaction, marker, committables)
        except kafka.KafkaException as exc:
            raise CommitFailedError(
                f"{self.settings.describe()}: the commit of transactional id {transaction!r} "
                f"(epochs {staged[0].epoch} to {staged[-1].epoch}) failed: {error_text(exc)}"
                f"{_fenced_hint(exc)}"
            ) from exc
        for committable in staged:
            self._delete(committable.file)

    def _commit(
        self, producer: Any, transaction: str, marker: str, committables: list[KafkaCommittable]
    ) -> None:
        done = self._marker(marker)
        todo = [c for c in committables if c.epoch > done]
        if not todo:
            return
        kafka = confluent_kafka()
        tables = []
        for committable in todo:
            try:
                tables.append(read_records(committable.file))
            except FileNotFoundError:
                # Only a commit deletes them; a marker that no longer says so expired
                # (offsets.retention.minutes) since, with the group's other offsets
                if done < 0:
                    log.warning(
                        "%s: staged records %s are gone and marker group %s has no offset: "
                        "taken as committed long ago",
                        self.settings.describe(),
                        committable.file,
                        marker,
                    )
                    continue
                raise KafkaSinkError(
                    f"{self.settings.describe()}: the staged records of epoch "
                    f"{committable.epoch} ({committable.file}) are gone, but marker group "
                    f"{marker} says only epochs up to {done} were committed: they are lost"
                ) from None
        if not tables:
            return
        producer.begin_transaction()
        topic = None
        for table in tables:
            topics, keys, values = (table.column(i).to_pylist() for i in range(3))
            topic = topic or topics[0]
            for record_topic, key, value in zip(topics, keys, values, strict=True):
                while True:
                    try:
                        producer.produce(record_topic, value, key)
                        break
                    except BufferError:  # the producer's queue is full: let it send
                        producer.poll(0.1)
        group = kafka.Consumer({"bootstrap.servers": self.settings.bootstrap_servers,
                                "group.id": marker})  # fmt: skip
        try:
            producer.send_offsets_to_transaction(
                [kafka.TopicPartition(topic, 0, todo[-1].epoch)],
                group.consumer_group_metadata(),
                DEFAULT_TIMEOUT_S,
            )
        finally:
            group.close()
        producer.commit_transaction(DEFAULT_TIMEOUT_S)

    def _marker(self, group: str) -> int:
        """The last epoch a commit recorded in ``group`` (-1: none)."""
        kafka = confluent_kafka()
        from confluent_kafka.admin import AdminClient  # confluent_kafka() checked it is there

        admin = AdminClient({"bootstrap.servers": self.settings.bootstrap_servers})
        request = kafka.ConsumerGroupTopicPartitions(group)
        [future] = admin.list_consumer_group_offsets([request]).values()
        offsets = future.result(DEFAULT_TIMEOUT_S).topic_partitions or []
        return max((tp.offset for tp in offsets if tp.offset >= 0), default=-1)

    @staticmethod
    def _delete(url: str) -> None:
        fs, path = url_to_fs(url)
        if fs.exists(path):
            fs.rm(path)

    def may_stage(self, url: str) -> bool:
        _, path = url_to_fs(url)
        parts = path.split("/")
        return (
            len(parts) >= 5
            and parts[-5] == "sink-files"
            and parts[-4] == DIRECTORY
            and posixpath.basename(path).endswith(SUFFIX)
        )

    def staged_files(self, committable: Any) -> list[str]:
        return [KafkaCommittable.read(committable).file]

    def abort(self, url: str) -> None:
        self._delete(url)


def _fenced_hint(exc: Exception) -> str:
    if "fenced" in str(exc).lower():
        return (
            "; another producer took over the transactional id: does another running job "
            "use this sink's transactional id prefix? Give each job its own"
        )
    return ""
