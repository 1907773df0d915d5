"""A checkpointed job run as its own driver process by ``test_driver_kill.py`` (not a test).

    python driver_kill_job.py OUT CHECKPOINTS WORK PARALLELISM BACKEND SOURCE [RECOVERY_PATH]

Split s of the source holds the unique increasing numbers (s, 0), (s, 1), ...: a collection's
(SOURCE ``collection``) or a DataFrame's partition s (``dataframe``, ``from_dataframe``); a slow map
keeps the job running long enough to be killed mid-run; a keyed stage counts per key in
``ValueState``; an exactly-once ``FileSink`` writes ``split,i,count`` lines. Checkpoints
are taken at every epoch, three are retained, and they are kept when the job does not
finish. BACKEND is the keyed state backend (hashmap, or rocksdb with incremental checkpoints
and its instances under WORK). On success the script prints one JSON line with the job's
epochs and checkpoints.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter

from lockgate.common import Configuration, Encoder, RestartStrategies
from lockgate.datastream import (
    CheckpointingMode,
    ExternalizedCheckpointRetention,
    KeyedProcessFunction,
    MapFunction,
    StreamExecutionEnvironment,
)
from lockgate.datastream.checkpoint_storage import FileSystemCheckpointStorage
from lockgate.datastream.connectors.file_system import BucketAssigner, FileSink
from lockgate.datastream.state import ValueStateDescriptor
from lockgate.runtime.jobmaster.spark_session import get_or_create_session

KEYS = 5
PER_SPLIT = 720
MAX_RECORDS = 60  # per split and epoch: 12 epochs
SLEEP_S = 0.002  # per record


def records(splits: int) -> list[tuple[int, int]]:
    return [(split, i) for split in range(splits) for i in range(PER_SPLIT)]


def reference(splits: int) -> Counter:
    """The committed lines of a run without failures."""
    return Counter(f"{split},{i},{i // KEYS + 1}" for split, i in records(splits))


class Slow(MapFunction):
    def __init__(self, sleep_s: float = SLEEP_S):
        self.sleep_s = sleep_s

    def map(self, value):
        time.sleep(self.sleep_s)
        return value


class CountPerKey(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield f"{value[0]},{value[1]},{count}"


def environment(
    checkpoints: str,
    work: str,
    parallelism: int,
    backend: str,
    recovery: str,
    settings: dict[str, str] | None = None,
) -> StreamExecutionEnvironment:
    """Checkpoints at every epoch, three retained and kept when the job does not finish."""
    config = Configuration()
    config.set_string("spark.master", "local[2]")
    config.set_string("spark.ui.enabled", "false")
    config.set_string("spark.sql.shuffle.partitions", "4")
    config.set_string("lockgate.work-dir", work)
    config.set_integer("lockgate.epoch.max-records-per-split", MAX_RECORDS)
    config.set_string("state.backend.type", backend)
    if backend == "rocksdb":
        config.set_string("execution.checkpointing.incremental", "true")
        config.set_string("state.backend.rocksdb.localdir", f"{work}/rocksdb")
    if recovery:
        config.set_string("execution.state-recovery.path", recovery)
    for key, value in (settings or {}).items():
        config.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(parallelism)
    env.enable_checkpointing(1, CheckpointingMode.EXACTLY_ONCE)
    checkpoint_config = env.get_checkpoint_config()
    checkpoint_config.set_checkpoint_storage(FileSystemCheckpointStorage(checkpoints))
    checkpoint_config.set_num_retained_checkpoints(3)
    checkpoint_config.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 10))
    return env


def counted_lines(
    env: StreamExecutionEnvironment, splits: int, sleep_s: float = SLEEP_S, source: str = ""
):
    """The numbers, slowed down by ``sleep_s`` each, counted per key: ``split,i,count``
    lines. ``source`` ``dataframe``: read from a DataFrame of them, partition s split s."""
    if source == "dataframe":
        spark = get_or_create_session(env.get_configuration().to_dict())
        numbers = env.from_dataframe(
            spark.range(0, splits * PER_SPLIT, numPartitions=splits).selectExpr(
                f"id div {PER_SPLIT} as split", f"id % {PER_SPLIT} as i"
            )
        )
    else:
        numbers = env.from_collection(records(splits))
    return (
        numbers.set_parallelism(splits)
        .uid("numbers")
        .map(Slow(sleep_s))
        .uid("slow")
        .key_by(lambda r: (r[0], r[1] % KEYS))
        .process(CountPerKey())
        .uid("count-per-key")
    )


def print_result(result) -> None:
    summary = {
        "epochs": [e.epoch for e in result.epochs],
        "checkpoints": [[c.id, c.epoch, c.status] for c in result.checkpoints],
        "restarts": result.restarts,
    }
    print("RESULT " + json.dumps(summary), flush=True)


def main(argv: list[str]) -> None:
    out, checkpoints, work, parallelism, backend, source = argv[:6]
    recovery = argv[6] if len(argv) > 6 else ""
    splits = int(parallelism)
    env = environment(checkpoints, work, splits, backend, recovery)
    sink = (
        FileSink.for_row_format(out, Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    counted_lines(env, splits, source=source).sink_to(sink).uid("file-sink")
    print_result(env.execute("driver kill"))


if __name__ == "__main__":
    main(sys.argv[1:])
