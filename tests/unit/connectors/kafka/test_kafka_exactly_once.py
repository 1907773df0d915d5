"""The exactly-once Kafka sink's committer against the tests' broker, without Spark: staged
epochs produced once each, whatever is redone; markers per sink, job and restore; what the
driver may delete."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from lockgate.common.serialization import SimpleStringSchema
from lockgate.connectors.kafka.committer import KafkaCommitter
from lockgate.connectors.kafka.exactly_once_writer import marker_group
from lockgate.connectors.kafka.sink import EXACTLY_ONCE, KafkaSinkError, ProducerSettings
from lockgate.connectors.kafka.staged_records import KafkaCommittable, write_records
from lockgate.core.fs.storage import Storage
from lockgate.core.two_phase_commit import sink_digest
from lockgate.datastream.connectors.kafka import KafkaRecordSerializationSchema


def settings(broker, topic: str, prefix: str) -> ProducerSettings:
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic(topic)
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    return ProducerSettings(broker.bootstrap_servers, EXACTLY_ONCE, serializer, {}, prefix)


def stage(tmp_path, topic, uid, job, epoch, values, generation=0, subtask=0) -> dict:
    attempt = f"e{epoch}-g{generation}t{epoch}a{uuid.uuid4().int % 1000}"
    relative = f"kafka/{sink_digest(uid)}/{subtask}/{attempt}.records"
    data = [v.encode() for v in values]
    url = Storage(str(tmp_path / "sink-files")).url_of(relative)
    write_records(url, [topic] * len(values), [None] * len(values), data)
    transaction = f"p-{subtask}"
    return KafkaCommittable(
        uid, epoch, generation, url, len(values), transaction, marker_group(transaction, uid, job)
    ).to_json()


def committed(broker, topic: str) -> Counter:
    return Counter(value for _, value, _ in broker.read(topic, 1, committed=True))


def test_a_commit_redone_produces_nothing_twice_and_deletes_what_it_committed(
    kafka_broker, tmp_path
):
    topic = kafka_broker.create_topic(1)
    committer = KafkaCommitter(settings(kafka_broker, topic, f"p{topic}"))
    job = uuid.uuid4().hex
    group = [stage(tmp_path, topic, "sink", job, e, [f"{e}-a", f"{e}-b"]) for e in (1, 2)]
    committer.commit_group(group)
    committer.commit_group(group)  # a restore commits the checkpoint again
    assert committed(kafka_broker, topic) == Counter(["1-a", "1-b", "2-a", "2-b"])
    assert not list(tmp_path.rglob("*.records"))
    later = [stage(tmp_path, topic, "sink", job, 3, ["3-a"])]
    committer.commit_group(group + later)  # the next checkpoint still lists the old ones
    assert committed(kafka_broker, topic) == Counter(["1-a", "1-b", "2-a", "2-b", "3-a"])


def test_epochs_run_again_after_a_restore_are_committed_not_taken_for_done(kafka_broker, tmp_path):
    """A restore that falls back to an older checkpoint runs committed epoch numbers again,
    with other input: the restore's generation makes their markers newer."""
    topic = kafka_broker.create_topic(1)
    committer = KafkaCommitter(settings(kafka_broker, topic, f"p{topic}"))
    job = uuid.uuid4().hex
    committer.commit_group([stage(tmp_path, topic, "sink", job, e, [f"old-{e}"]) for e in (1, 2)])
    again = [stage(tmp_path, topic, "sink", job, 2, ["new-2"], generation=1)]
    committer.commit_group(again)
    assert committed(kafka_broker, topic) == Counter(["old-1", "old-2", "new-2"])


def test_sinks_with_their_own_markers_do_not_take_each_others_commits(kafka_broker, tmp_path):
    topic = kafka_broker.create_topic(1)
    job = uuid.uuid4().hex
    for uid in ("one", "two"):
        committer = KafkaCommitter(settings(kafka_broker, topic, f"p{topic}"))
        committer.commit_group([stage(tmp_path / uid, topic, uid, job, 1, [uid])])
    assert committed(kafka_broker, topic) == Counter(["one", "two"])


def test_the_driver_deletes_only_staged_record_files(kafka_broker, tmp_path):
    committer = KafkaCommitter(settings(kafka_broker, "t", "p"))
    staged = f"/x/sink-files/kafka/{sink_digest('u')}/3/e4-g0t9a12.records"
    assert committer.may_stage(staged) and committer.may_stage(f"file://{staged}")
    for other in (
        "/x/sink-files/kafka/../../etc/e4-g0t9a12.records",
        f"/x/sink-files/kafka/{sink_digest('u')}/../../../e4-g0t9a12.records",
        f"/x/sink-files/kafka/{sink_digest('u')}/3/notes.txt",
        f"/x/state/kafka/{sink_digest('u')}/3/e4-g0t9a12.records",
    ):
        assert not committer.may_stage(other), other
    planted = KafkaCommittable("u", 1, 0, "/etc/passwd", 1, "p-0", "g").to_json()
    with pytest.raises(KafkaSinkError, match="not a file a Kafka sink stages"):
        committer.commit_group([planted])


def test_a_transactional_producer_the_client_refuses_fails_before_the_job(kafka_broker):
    topic = kafka_broker.create_topic(1)
    bad = settings(kafka_broker, topic, "p")
    bad = ProducerSettings(bad.bootstrap_servers, EXACTLY_ONCE, bad.serializer, {"acks": "1"}, "p")
    with pytest.raises(KafkaSinkError, match=r"a transactional producer \('p-lockgate-check'\)"):
        bad.validate()
    settings(kafka_broker, topic, "p").validate()


def test_the_marker_clients_take_connection_properties_only(kafka_broker):
    """Producer settings (one a consumer refuses, one an admin client refuses) stay out of
    the marker's clients; how to reach the brokers goes in."""
    base = settings(kafka_broker, "t", "p")
    given = {
        "receive.message.max.bytes": "1000000",
        "enable.gapless.guarantee": "true",
        "security.protocol": "plaintext",
        "socket.timeout.ms": "20000",
    }
    sink = ProducerSettings(base.bootstrap_servers, EXACTLY_ONCE, base.serializer, given, "p")
    config = sink.client_config("g")
    assert config["security.protocol"] == "plaintext" and config["socket.timeout.ms"] == "20000"
    assert "receive.message.max.bytes" not in config and "enable.gapless.guarantee" not in config
    assert config["group.id"] == "g" and "group.id" not in sink.client_config(None)
