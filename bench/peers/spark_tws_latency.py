"""Peer of bench/latency.py on Spark's transformWithStateInPandas: the same keyed count.

A file stream source (``readStream.text``) on the directory the feeder fills -> parse
``<key>,<arrival ms>`` -> ``groupBy(key)`` -> ``transformWithStateInPandas`` with a ValueState
count per key that emits a row ``(key, count, arrival)`` for every event (numpy over each
key's rows; one state read and write per key and micro-batch) -> ``key,count,arrival`` text ->
Spark's file sink (``format("text")``, append mode). Default trigger (the next micro-batch
starts as soon as the last ended and new files are there), RocksDB state store with
changelog checkpointing, ``spark.sql.shuffle.partitions`` = parallelism.

Spark's file sink is exactly-once in one way only: it writes part files in place under their
final names while a micro-batch runs and commits the batch in ``_spark_metadata``. So one
query gives both of latency.py's readings: lines as they appear in the directory
(AT_LEAST_ONCE) and lines of committed files (EXACTLY_ONCE).

``start_query(spark, input_dir, output_dir, checkpoint_dir, parallelism)`` starts it in an
existing session and returns the StreamingQuery (its SQL settings stay set until
``restore``). Needs ``protobuf`` and ``pandas<3`` (bench/requirements-peers.txt).
"""

from __future__ import annotations

import os

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
SQL_CONFIG = {
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}
STATE_SERVER_LOGGER = (
    "org.apache.spark.sql.execution.python.streaming.TransformWithStateInPySparkStateServer"
)


def _processor_class():
    """The StatefulProcessor, built lazily so that importing this module needs no pandas."""
    import numpy as np
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class CountArrivals(StatefulProcessor):
        """Counts the events of each key; emits (key, count, arrival) for every event."""

        def init(self, handle):
            self.state = handle.getValueState("count", "count long")

        def handleInputRows(self, key, rows, timerValues):
            current = self.state.get()
            count = int(current[0]) if current is not None else 0
            for frame in rows:
                n = len(frame)
                counts = np.arange(count + 1, count + n + 1, dtype=np.int64)
                count += n
                yield pd.DataFrame(
                    {
                        "key": frame["key"].to_numpy(),
                        "count": counts,
                        "arrival": frame["arrival"].to_numpy(),
                    }
                )
            self.state.update((count,))

        def close(self):
            pass

    return CountArrivals


def _quiet_state_server(spark) -> None:
    try:
        jvm = spark.sparkContext._jvm
        level = jvm.org.apache.logging.log4j.Level.ERROR
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(STATE_SERVER_LOGGER, level)
    except Exception:  # only logging; the benchmark runs either way
        pass


def configure(spark, parallelism: int) -> dict[str, str | None]:
    """Set the query's SQL settings; returns the previous values for ``restore``."""
    settings = {**SQL_CONFIG, "spark.sql.shuffle.partitions": str(parallelism)}
    previous = {key: spark.conf.get(key, None) for key in settings}
    _quiet_state_server(spark)
    for key, value in settings.items():
        spark.conf.set(key, value)
    return previous


def restore(spark, previous: dict[str, str | None]) -> None:
    for key, value in previous.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def start_query(spark, input_dir: str, output_dir: str, checkpoint_dir: str):
    from pyspark.sql import functions as F

    fields = F.split("value", ",")
    events = spark.readStream.text(input_dir).select(
        fields[0].cast("long").alias("key"), fields[1].cast("long").alias("arrival")
    )
    counted = events.groupBy("key").transformWithStateInPandas(
        statefulProcessor=_processor_class()(),
        outputStructType="key long, count long, arrival long",
        outputMode="Append",
        timeMode="None",
    )
    lines = counted.select(F.concat_ws(",", "key", "count", "arrival").alias("value"))
    return (
        lines.writeStream.format("text")
        .option("checkpointLocation", checkpoint_dir)
        .outputMode("append")
        .start(os.path.join(output_dir))
    )
