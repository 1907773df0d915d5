"""A keyed job whose MapState outgrows the Python workers' memory limit (not a test): run as
its own driver by ``test_state_memory_budget.py``, since the limit is a Spark setting of the
session (``spark.executor.pyspark.memory``: PySpark sets RLIMIT_AS on every Python worker).

    python state_memory_job.py BACKEND WORK_DIR PYSPARK_MEMORY

Every record (key, n) puts ENTRIES_PER_RECORD values of VALUE_BYTES incompressible bytes
into its key's MapState, each generated from (key, index), so the records stay tiny while
the state grows to KEYS * RECORDS_PER_KEY * ENTRIES_PER_RECORD * VALUE_BYTES (about 300
MB). The last record of a key reads its whole map back and emits (key, entries, checksum);
the script prints them as one JSON line, with what the workers saw of their memory limit.
"""

from __future__ import annotations

import hashlib
import json
import resource
import sys
import zlib

from lockgate.common import Configuration, RestartStrategies
from lockgate.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from lockgate.datastream.state import MapStateDescriptor

KEYS = 4
RECORDS_PER_KEY = 60
ENTRIES_PER_RECORD = 1200
VALUE_BYTES = 1024
ENTRIES_PER_KEY = RECORDS_PER_KEY * ENTRIES_PER_RECORD
STATE_BYTES = KEYS * ENTRIES_PER_KEY * VALUE_BYTES
EPOCHS = 3


def value_of(key: int, index: int) -> bytes:
    return hashlib.shake_128(b"%d:%d" % (key, index)).digest(VALUE_BYTES)


def checksum(key: int) -> int:
    """What the job's check of a key's map must find: the sum of its values' CRCs."""
    return sum(zlib.crc32(value_of(key, i)) for i in range(ENTRIES_PER_KEY)) & 0xFFFFFFFF


def _peak_rss_mb() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    return -1


class FillAndCheck(KeyedProcessFunction):
    def open(self, runtime_context):
        self.blobs = runtime_context.get_map_state(MapStateDescriptor("blobs"))

    def process_element(self, value, ctx):
        key, n = value
        first = n * ENTRIES_PER_RECORD
        self.blobs.put_all({i: value_of(key, i) for i in range(first, first + ENTRIES_PER_RECORD)})
        if n == RECORDS_PER_KEY - 1:
            entries = total = 0
            for _, blob in self.blobs.items():
                entries += 1
                total += zlib.crc32(blob)
            limit = resource.getrlimit(resource.RLIMIT_AS)[0]
            yield key, entries, total & 0xFFFFFFFF, limit, _peak_rss_mb()


def main(argv: list[str]) -> None:
    backend, work, pyspark_memory = argv
    config = Configuration()
    config.set_string("spark.master", "local[2]")
    config.set_string("spark.ui.enabled", "false")
    config.set_string("spark.sql.shuffle.partitions", "2")
    config.set_string("spark.executor.pyspark.memory", pyspark_memory)
    config.set_string("lockgate.work-dir", work)
    config.set_string("state.backend.type", backend)
    config.set_integer("lockgate.epoch.max-records-per-split", KEYS * RECORDS_PER_KEY // EPOCHS)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(1)
    env.set_restart_strategy(RestartStrategies.no_restart())
    records = [(key, n) for n in range(RECORDS_PER_KEY) for key in range(KEYS)]
    stream = env.from_collection(records).key_by(lambda r: r[0]).process(FillAndCheck())
    with stream.execute_and_collect() as results:
        rows = sorted(results)
    print("RESULT " + json.dumps(rows), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
