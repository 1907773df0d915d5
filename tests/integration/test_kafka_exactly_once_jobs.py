"""KafkaSink with EXACTLY_ONCE in jobs on Spark, against a real broker (``kafka_broker``):
the exactly-once count job reads from Kafka and writes its lines to Kafka; failures strike in
a user function, after a snapshot, between a checkpoint's completion and its commit and in
the middle of its commits, and the driver is SIGKILLed between a checkpoint's completion and
its commit; a read_committed consumer reads every line exactly once, and nothing of an
uncommitted checkpoint before its commit."""

from __future__ import annotations

import os
import signal
import time

import driver_kill_job
import pytest
from exactly_once_job import (
    KEYS,
    CountPerKey,
    Trap,
    assert_same_lines,
    checkpointed_env,
    on_checkpoint,
    record_in_epoch,
    records,
    reference,
)
from lockgate_it_support import BACKENDS
from process_tree import subtask_hosts
from sink_readback import topic_lines

from lockgate.common import RestartStrategies, WatermarkStrategy
from lockgate.common.config_options import ConfigurationError
from lockgate.common.serialization import SimpleStringSchema
from lockgate.datastream.connectors import DeliveryGuarantee
from lockgate.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)

SPLITS = 2


def exactly_once_sink(broker, topic: str, prefix: str) -> KafkaSink:
    return (
        KafkaSink.builder()
        .set_bootstrap_servers(broker.bootstrap_servers)
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(prefix)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .build()
    )


@BACKENDS
def test_failures_at_every_step_leave_each_record_exactly_once(make_env, tmp_path, kafka_broker):
    source_topic = kafka_broker.create_topic(SPLITS)
    kafka_broker.produce(source_topic, [(s, f"{s},{i}".encode()) for s, i in records(SPLITS)])
    out = kafka_broker.create_topic(2)
    inject = "after-snapshot-before-ack@2,after-metadata-before-commit@3,mid-commit@4"
    env = checkpointed_env(
        make_env,
        tmp_path / "checkpoints",
        SPLITS,
        settings={"lockgate.testing.inject-failure": inject},
        restart=RestartStrategies.fixed_delay_restart(6, 10),
    )
    trap = Trap(record_in_epoch(5, split=1), tmp_path / "markers", times=2)
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka_broker.bootstrap_servers)
        .set_topics(source_topic)
        .set_value_only_deserializer(SimpleStringSchema())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "in")
        .map(lambda line: tuple(int(x) for x in line.split(",")))
        .key_by(lambda r: (r[0], r[1] % KEYS))
        .process(CountPerKey(trap))
        .uid("count")
        .sink_to(exactly_once_sink(kafka_broker, out, f"eo-{out}"))
        .uid("kafka-sink")
    )
    result = env.execute("kafka exactly once")
    assert trap.fired() == 2 and result.restarts >= 3, result.restarts
    assert_same_lines(topic_lines(kafka_broker, out, 2), reference(SPLITS))
    staged = list((tmp_path / "checkpoints").rglob("*.records"))
    assert not staged, f"staged records left behind: {staged[:3]}"


def test_exactly_once_without_exactly_once_checkpoints_fails_before_the_job(make_env, kafka_broker):
    out = kafka_broker.create_topic(1)
    env = make_env(SPLITS)
    env.from_collection(["a"]).sink_to(exactly_once_sink(kafka_broker, out, "x")).uid("out")
    with pytest.raises(ConfigurationError, match=r"uid 'out'.*enable_checkpointing"):
        env.execute("no checkpoints")


def test_two_sinks_with_one_transactional_id_prefix_fail_before_the_job(make_env, kafka_broker):
    out = kafka_broker.create_topic(1)
    env = make_env(SPLITS)
    env.enable_checkpointing(1000)
    lines = env.from_collection(["a"])
    lines.sink_to(exactly_once_sink(kafka_broker, out, "shared")).uid("first")
    lines.sink_to(exactly_once_sink(kafka_broker, out, "shared")).uid("second")
    with pytest.raises(ConfigurationError, match=r"uid 'second'.*prefix 'shared'"):
        env.execute("shared prefix")


@pytest.mark.parametrize("failure", ["broker restart", "subtask hosts killed"])
def test_a_broker_restart_or_killed_hosts_mid_run_leave_each_record_exactly_once(
    make_env, tmp_path, kafka_broker, failure
):
    """The broker stops (SIGTERM) and comes back a second later, or the executor's subtask
    hosts are SIGKILLed, once two checkpoints are complete; checkpoints are several epochs
    apart."""
    out = kafka_broker.create_topic(2)
    checkpoints = tmp_path / "checkpoints"
    env = checkpointed_env(
        make_env, checkpoints, SPLITS, interval_ms=1500,
        restart=RestartStrategies.fixed_delay_restart(20, 500),
    )  # fmt: skip
    driver_kill_job.counted_lines(env, SPLITS).sink_to(
        exactly_once_sink(kafka_broker, out, f"restart-{out}")
    ).uid("kafka")
    done: list[float] = []

    def restart_broker() -> None:
        kafka_broker.stop()
        time.sleep(1)
        kafka_broker.start()
        done.append(time.monotonic())

    def kill_hosts() -> None:
        for pid in subtask_hosts():
            os.kill(pid, signal.SIGKILL)
        done.append(time.monotonic())

    action = restart_broker if failure == "broker restart" else kill_hosts
    striker = on_checkpoint(checkpoints, 2, action)
    env.execute(f"kafka exactly once, {failure}")
    ended = time.monotonic()
    striker.join(timeout=60)
    assert striker.done.is_set() and done[0] < ended, f"no {failure} while the job ran"
    assert_same_lines(topic_lines(kafka_broker, out, 2), driver_kill_job.reference(SPLITS))
