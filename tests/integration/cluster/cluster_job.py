"""The job the cluster tests run, as its own driver process (not a test).

    python cluster_job.py SPEC_JSON

SPEC holds: ``master`` (None: from the launch, e.g. spark-defaults.conf), ``out``,
``checkpoints``, ``work``, ``backend`` (hashmap, or rocksdb with incremental checkpoints),
``markers`` (a directory), ``stall`` (the record (split, i) on which a source subtask
stalls once, for ``STALL_S``, or None) and ``executor_pythonpath``.

Split s of the source holds (s, 0), (s, 1), ...; a keyed stage counts per key in
``ValueState``; an exactly-once ``FileSink`` writes ``split,i,count`` lines, so a lost or
repeated record or state update changes the output (compared with ``reference``). Every
``open()`` of a subtask's functions, i.e. every time a subtask is built (first, or restored
from checkpoint storage), leaves a marker naming the subtask and its executor. Prints one
``RESULT`` JSON line, or ``CONFIG_ERROR`` with the message of a configuration error.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

from pyspark.sql import SparkSession

from lockgate.common import Configuration, Encoder, RestartStrategies
from lockgate.common.config_options import ConfigurationError
from lockgate.datastream import (
    CheckpointingMode,
    KeyedProcessFunction,
    MapFunction,
    StreamExecutionEnvironment,
)
from lockgate.datastream.checkpoint_storage import FileSystemCheckpointStorage
from lockgate.datastream.connectors.file_system import BucketAssigner, FileSink
from lockgate.datastream.state import ValueStateDescriptor
from lockgate.runtime.sparktask.executor_identity import executor_id, executor_jvm

SPLITS = 2
KEYS = 5
PER_SPLIT = 400
MAX_RECORDS = 40  # per split and epoch: 10 epochs
SLEEP_S = 0.005  # per record: a source subtask works ~0.2 s per epoch
STALL_S = 10  # time enough to kill an executor while the epoch runs


def records() -> list[tuple[int, int]]:
    return [(split, i) for split in range(SPLITS) for i in range(PER_SPLIT)]


def reference() -> Counter:
    return Counter(f"{split},{i},{i // KEYS + 1}" for split, i in records())


def mark_open(markers: str, operator: str, runtime_context) -> None:
    index = runtime_context.get_index_of_this_subtask()
    name = f"open-{operator}-{index}-{executor_id()}-{time.time_ns()}"
    Path(markers, name).write_text("")


class EpochRuns:
    """Leaves a marker when a subtask's instance sees the first record of an epoch (whose
    number follows from the record: (split, i) belongs to epoch i // MAX_RECORDS + 1)."""

    def __init__(self, markers: str, operator: str):
        self.markers = markers
        self.operator = operator
        self.index = -1
        self.seen: set[int] = set()

    def record(self, value) -> None:
        epoch = value[1] // MAX_RECORDS + 1
        if epoch not in self.seen:
            self.seen.add(epoch)
            name = f"ran-{self.operator}-{self.index}-{epoch}-{executor_id()}-{time.time_ns()}"
            Path(self.markers, name).write_text("")


class Slow(MapFunction):
    """Sleeps per record; on the stall record, once, tells where it runs and stalls."""

    def __init__(self, markers: str, stall: list[int] | None):
        self.markers = markers
        self.stall = tuple(stall) if stall else None

    def open(self, runtime_context):
        mark_open(self.markers, "slow", runtime_context)
        self.runs = EpochRuns(self.markers, "slow")
        self.runs.index = runtime_context.get_index_of_this_subtask()

    def map(self, value):
        self.runs.record(value)
        time.sleep(SLEEP_S)
        stalled = Path(self.markers, "stalled.json")
        if tuple(value) == self.stall and not stalled.exists():
            where = {"executor": executor_id(), "jvm_pid": executor_jvm()[0], "at": time.time()}
            stalled.write_text(json.dumps(where))
            time.sleep(STALL_S)
        return value


class CountPerKey(KeyedProcessFunction):
    def __init__(self, markers: str):
        self.markers = markers

    def open(self, runtime_context):
        mark_open(self.markers, "count", runtime_context)
        self.runs = EpochRuns(self.markers, "count")
        self.runs.index = runtime_context.get_index_of_this_subtask()
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value, ctx):
        self.runs.record(value)
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield f"{value[0]},{value[1]},{count}"


def main(spec: dict) -> None:
    config = Configuration()
    if spec["master"]:
        config.set_string("spark.master", spec["master"])
    config.set_string("spark.ui.enabled", "false")
    config.set_string("spark.executor.memory", "512m")
    config.set_string("spark.executor.cores", "1")
    config.set_string("spark.executorEnv.PYTHONPATH", spec["executor_pythonpath"])
    config.set_string("lockgate.work-dir", spec["work"])
    config.set_integer("lockgate.epoch.max-records-per-split", MAX_RECORDS)
    config.set_string("state.backend.type", spec["backend"])
    if spec["backend"] == "rocksdb":
        config.set_string("execution.checkpointing.incremental", "true")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(SPLITS)
    env.enable_checkpointing(1, CheckpointingMode.EXACTLY_ONCE)
    checkpoint_config = env.get_checkpoint_config()
    checkpoint_config.set_checkpoint_storage(FileSystemCheckpointStorage(spec["checkpoints"]))
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(5, 1000))
    sink = (
        FileSink.for_row_format(spec["out"], Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    (
        env.from_collection(records())
        .set_parallelism(SPLITS)
        .uid("numbers")
        .map(Slow(spec["markers"], spec["stall"]))
        .uid("slow")
        .key_by(lambda r: (r[0], r[1] % KEYS))
        .process(CountPerKey(spec["markers"]))
        .uid("count-per-key")
        .sink_to(sink)
        .uid("file-sink")
    )
    try:
        result = env.execute("cluster job")
    except ConfigurationError as error:
        print("CONFIG_ERROR " + json.dumps(str(error)), flush=True)
        sys.exit(3)
    sc = SparkSession.getActiveSession().sparkContext
    summary = {
        "master": sc.master,
        "app_id": sc.applicationId,
        "jvm_local_ip": sc._jvm.java.lang.System.getenv("SPARK_LOCAL_IP"),
        "executor_pythonpath": sc.getConf().get("spark.executorEnv.PYTHONPATH"),
        "epochs": [[e.epoch, e.restored_subtasks] for e in result.epochs],
        "checkpoints": [[c.id, c.epoch, c.status] for c in result.checkpoints],
        "restarts": result.restarts,
    }
    print("RESULT " + json.dumps(summary), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
