"""``driver_kill_job``'s counting job writing each line exactly once to PostgreSQL, to
Kafka, to Parquet files and to a Delta table, run as its own driver process by
``test_exactly_once_sinks_driver_kill.py`` (not a test).

    python sinks_kill_job.py JDBC_URL TABLE BOOTSTRAP TOPIC PARQUET DELTA CHECKPOINTS WORK
        PARALLELISM KILL SLEEP_S [RECOVERY]

Each line is a plain INSERT into TABLE (split, i, n) (a row written twice stays twice), a
record of TOPIC, a row of the Parquet files under the directory PARQUET and a row of the
Delta table DELTA (partitioned by split). KILL is
``lockgate.testing.kill-driver`` ('' for none); SLEEP_S slows each record down (0 when the
job is not killed from outside).
"""

from __future__ import annotations

import sys

from driver_kill_job import counted_lines, environment, print_result
from sink_readback import LINE_ROW, line_row

from lockgate.common.serialization import SimpleStringSchema
from lockgate.datastream.connectors import DeliveryGuarantee
from lockgate.datastream.connectors.delta import DeltaSink
from lockgate.datastream.connectors.file_system import BucketAssigner, FileSink
from lockgate.datastream.connectors.jdbc import (
    JdbcConnectionOptions,
    JdbcExecutionOptions,
    JdbcSink,
)
from lockgate.datastream.connectors.kafka import KafkaRecordSerializationSchema, KafkaSink
from lockgate.datastream.formats.parquet import ParquetBulkWriters


def main(argv: list[str]) -> None:
    url, table, bootstrap, topic, parquet, delta = argv[:6]
    checkpoints, work, parallelism, kill, sleep_s = argv[6:11]
    recovery = argv[11] if len(argv) > 11 else ""
    splits = int(parallelism)
    settings = {"lockgate.testing.kill-driver": kill} if kill else {}
    env = environment(checkpoints, work, splits, "hashmap", recovery, settings)
    lines = counted_lines(env, splits, float(sleep_s))
    rows = lines.map(line_row, LINE_ROW).uid("to-row")
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
    rows.sink_to(
        DeltaSink.for_row_data(delta, LINE_ROW).with_partition_columns("split").build()
    ).uid("delta")
    print_result(env.execute("exactly-once sinks, driver kill"))


if __name__ == "__main__":
    main(sys.argv[1:])
