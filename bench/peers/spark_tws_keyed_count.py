"""Peer of bench/keyed_count.py on Spark's own Python keyed state: transformWithStateInPandas.

The same keyed (count, sum) job: a streaming read of the events (parquet files of
``--batch-events`` events, one file per micro-batch) -> ``groupBy(key)`` ->
``transformWithStateInPandas`` with a ValueState (count, sum) per key that emits one row per
event (each update) -> ``noop`` sink. State store: RocksDB
(``RocksDBStateStoreProvider``) with changelog checkpointing, ``spark.sql.shuffle.partitions``
= parallelism. Needs ``protobuf`` and ``pandas<3`` (bench/requirements-peers.txt).

Micro-batches are as large as lockgate's epochs by default (200k events: its default
``lockgate.epoch.max-records-per-split`` of 100k times 2 source splits; keyed_count.py passes
its own figure), so that both pay their per-batch costs equally often.

Timed like keyed_count.py (``keyed_events``' record window): from the first row the
processor saw to the last, over every micro-batch. Spark has no Python key function here
(the key is a column), so the window starts at the first ``handleInputRows`` call, after the
first micro-batch's read and shuffle. Each processor instance (one per partition and
micro-batch) writes its marks in ``close()``.

``run_peer(spark, events, ...)`` runs it in an existing session (keyed_count.py --peers does);
run as a script it starts its own session and prints the last line

    keyed_count system=spark_tws events_per_s=<float>
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

# keyed_events (the events and the record window) lives in bench/, next to peers/.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
SQL_CONFIG = {
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}
DEFAULT_BATCH_EVENTS = 200_000
# Logs a WARN line for each get() of a key without state (10k lines per run): quiet it.
STATE_SERVER_LOGGER = (
    "org.apache.spark.sql.execution.python.streaming.TransformWithStateInPySparkStateServer"
)


def missing_reason() -> str | None:
    """Why the peer cannot run in this interpreter, or None when it can."""
    for module in ("google.protobuf", "pandas", "pyarrow"):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            name = module.split(".")[-1]
            return f"{name} is not installed (pip install -r bench/requirements-peers.txt)"
    import pandas

    if int(pandas.__version__.split(".")[0]) >= 3:
        return f"pandas {pandas.__version__} is installed; PySpark needs pandas<3"
    from pyspark.sql import GroupedData

    if not hasattr(GroupedData, "transformWithStateInPandas"):
        import pyspark

        return f"pyspark {pyspark.__version__} has no transformWithStateInPandas (needs >= 4.0)"
    return None


def _processor_class():
    """The StatefulProcessor, built lazily so that importing this module needs no pandas."""
    import numpy as np
    import pandas as pd
    from keyed_events import write_mark
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class CountAndSum(StatefulProcessor):
        """Keeps (count, sum) of the values of each key; emits every update. The state is
        read once and written once per key and micro-batch (each call is a round trip to
        the JVM's state server); the updates in between are computed with numpy. Notes its
        record window (first and last row, rows seen) into ``marks_dir``."""

        def __init__(self, marks_dir: str | None = None):
            self.marks_dir = marks_dir
            self.first = 0.0
            self.last = 0.0
            self.seen = 0

        def init(self, handle):
            self.state = handle.getValueState("count_sum", "count long, sum long")

        def handleInputRows(self, key, rows, timerValues):
            if not self.seen:
                self.first = time.time()
            current = self.state.get()
            count, total = (int(current[0]), int(current[1])) if current is not None else (0, 0)
            for frame in rows:
                n = len(frame)
                counts = np.arange(count + 1, count + n + 1, dtype=np.int64)
                sums = total + frame["value"].to_numpy(dtype=np.int64).cumsum()
                count, total = int(counts[-1]), int(sums[-1])
                self.seen += n
                self.last = time.time()
                yield pd.DataFrame({"key": frame["key"].to_numpy(), "count": counts, "sum": sums})
            self.state.update((count, total))

        def close(self):
            if self.seen and self.marks_dir is not None:
                write_mark(self.marks_dir, self.first, self.last, self.seen)

    return CountAndSum


def _write_batches(events: list, batch_events: int, directory: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    for index, start in enumerate(range(0, len(events), batch_events)):
        chunk = events[start : start + batch_events]
        table = pa.table(
            {
                "key": pa.array([e[0] for e in chunk], pa.int64()),
                "value": pa.array([e[1] for e in chunk], pa.int64()),
            }
        )
        pq.write_table(table, os.path.join(directory, f"part-{index:05d}.parquet"))


def _quiet_state_server(spark) -> None:
    try:
        jvm = spark.sparkContext._jvm
        level = jvm.org.apache.logging.log4j.Level.ERROR
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(STATE_SERVER_LOGGER, level)
    except Exception:  # only logging; the benchmark runs either way
        pass


def _run_query(
    spark, events: list, batch_events: int, work_dir: str, marks_dir: str | None = None
) -> float:
    """Wall seconds of the query over ``events`` (from start to termination)."""
    input_dir = os.path.join(work_dir, "input")
    os.makedirs(input_dir)
    _write_batches(events, batch_events, input_dir)
    source = (
        spark.readStream.schema("key long, value long")
        .option("maxFilesPerTrigger", 1)
        .parquet(input_dir)
    )
    counted = source.groupBy("key").transformWithStateInPandas(
        statefulProcessor=_processor_class()(marks_dir),
        outputStructType="key long, count long, sum long",
        outputMode="Update",
        timeMode="None",
    )
    started = time.perf_counter()
    query = (
        counted.writeStream.format("noop")
        .option("checkpointLocation", os.path.join(work_dir, "checkpoint"))
        .outputMode("update")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    seconds = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return seconds


def run_peer(
    spark,
    events: list,
    parallelism: int = 2,
    batch_events: int = DEFAULT_BATCH_EVENTS,
    warmup_events: int = 2000,
) -> float:
    """Events per second of the job on ``events`` in ``spark`` over its record window (after
    a small warm-up query). The SQL settings are restored afterwards."""
    import keyed_events
    from pyspark import cloudpickle

    # Spark's Python workers may not find bench/ on their path: ship keyed_events by value.
    cloudpickle.register_pickle_by_value(keyed_events)
    settings = {**SQL_CONFIG, "spark.sql.shuffle.partitions": str(parallelism)}
    previous = {key: spark.conf.get(key, None) for key in settings}
    _quiet_state_server(spark)
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        with tempfile.TemporaryDirectory(prefix="lockgate-tws-") as work_dir:
            warm = events[:warmup_events]
            _run_query(spark, warm, batch_events, os.path.join(work_dir, "warm"))
            marks_dir = os.path.join(work_dir, "marks")
            os.makedirs(marks_dir)
            seconds = _run_query(
                spark, events, batch_events, os.path.join(work_dir, "run"), marks_dir
            )
            window = keyed_events.read_window(marks_dir)
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
    if window.count != len(events):
        raise RuntimeError(
            f"the processor instances counted {window.count} rows, not {len(events)}"
        )
    batches = -(-len(events) // batch_events)
    print(
        f"spark_tws events={len(events)} batches={batches} parallelism={parallelism} "
        f"wall_s={seconds:.2f} window_s={window.seconds:.2f}"
    )
    return len(events) / window.seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--batch-events", type=int, default=DEFAULT_BATCH_EVENTS)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)
    reason = missing_reason()
    if reason is not None:
        print(f"spark_tws not installed: {reason}")
        print("keyed_count system=spark_tws events_per_s=nan")
        return
    from keyed_events import make_events
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(args.master)
    for key, value in {
        **SQL_CONFIG,
        "spark.sql.shuffle.partitions": str(args.parallelism),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": "2g",
    }.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    try:
        rate = run_peer(
            spark, make_events(args.events, args.keys), args.parallelism, args.batch_events
        )
    finally:
        spark.stop()
    print(f"keyed_count system=spark_tws events_per_s={rate:.2f}")


if __name__ == "__main__":
    main()
