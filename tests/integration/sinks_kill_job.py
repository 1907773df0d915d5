"""``driver_kill_job``'s counting job writing each line exactly once to PostgreSQL, to
Kafka and to Parquet files, run as its own driver process by
``test_exactly_once_sinks_driver_kill.py`` (not a test).

    python sinks_kill_job.py JDBC_URL TABLE BOOTSTRAP TOPIC PARQUET CHECKPOINTS WORK
        PARALLELISM KILL SLEEP_S [RECOVERY]

Each line is a plain INSERT into TABLE (split, i, n) (a row written twice stays twice), a
record of TOPIC and a row of the Parquet files under the directory PARQUET. KILL is
``lockgate.testing.kill-driver`` ('' for none); SLEEP_S slows each record down (0 when the
job is not killed from outside).
"""

from __future__ import annotations

import sys

from driver_kill_job import counted_lines, environment, print_result
from sink_readback import LINE_ROW

from lockgate.common import Row
from lockgate.common.serialization import SimpleStringSchema
from lockgate.datastream.connectors import DeliveryGuarantee
from lockgate.datastream.connectors.file_system import BucketAssigner, FileSink
from lockgate.datastream.connectors.jdbc import (
    JdbcConnectionOptions,
    JdbcExecutionOptions,
    JdbcSink,
)
from lockgate.datastream.connectors.kafka import KafkaRecordSerializationSchema, KafkaSink
from lockgate.datastream.formats.parquet import ParquetBulkWriters


def main(argv: list[str]) -> None:
    url, table, bootstrap, topic, parquet, checkpoints, work, parallelism, kill, sleep_s = argv[:10]
    recovery = argv[10] if len(argv) > 10 else ""
    splits = int(parallelism)
    settings = {"lockgate.testing.kill-driver": kill} if kill else {}
    env = environment(checkpoints, work, splits, "hashmap", recovery, settings)
    lines = counted_lines(env, splits, float(sleep_s))
    rows = lines.map(lambda line: Row(*(int(x) for x in line.split(","))), LINE_ROW).uid("to-row")
    rows.add_sink(
        JdbcSink.exactly_once_sink(
            f"INSERT INTO {table} (split, i, n) VALUES (?, ?, ?)",
            None,
            JdbcConnectionOptions.JdbcConnectionOptionsBuilder()
            .with_url(url)
            .with_user_name("test")
            .build(),
            JdbcExecutionOptions.builder().with_batch_size(50).build(),
        )
    ).uid("jdbc")
    lines.sink_to(
        KafkaSink.builder()
        .set_bootstrap_servers(bootstrap)
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(f"kill-{topic}")
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .build()
    ).uid("kafka")
    rows.sink_to(
        FileSink.for_bulk_format(parquet, ParquetBulkWriters.for_row_type(LINE_ROW))
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    ).uid("parquet")
    print_result(env.execute("exactly-once sinks, driver kill"))


if __name__ == "__main__":
    main(sys.argv[1:])
