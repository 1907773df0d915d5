"""``driver_kill_job``'s counting job writing to Kafka with EXACTLY_ONCE, run as its own
driver process by ``test_kafka_exactly_once_jobs.py`` (not a test).

    python kafka_kill_job.py BOOTSTRAP TOPIC PREFIX CHECKPOINTS WORK PARALLELISM KILL [RECOVERY]

KILL is ``lockgate.testing.kill-driver`` ('' for none).
"""

from __future__ import annotations

import sys

from driver_kill_job import counted_lines, environment, print_result

from lockgate.common.serialization import SimpleStringSchema
from lockgate.datastream.connectors import DeliveryGuarantee
from lockgate.datastream.connectors.kafka import KafkaRecordSerializationSchema, KafkaSink


def main(argv: list[str]) -> None:
    bootstrap, topic, prefix, checkpoints, work, parallelism, kill = argv[:7]
    recovery = argv[7] if len(argv) > 7 else ""
    splits = int(parallelism)
    settings = {"lockgate.testing.kill-driver": kill} if kill else {}
    env = environment(checkpoints, work, splits, "hashmap", recovery, settings)
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(bootstrap)
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
    counted_lines(env, splits, 0).sink_to(sink).uid("kafka")
    print_result(env.execute("kafka driver kill"))


if __name__ == "__main__":
    main(sys.argv[1:])
