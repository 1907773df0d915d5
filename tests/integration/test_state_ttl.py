"""State TTL in a running job: keyed state expires between epochs.

Each epoch sees every key twice, close together, and the map before the key_by sleeps long
enough that the next epoch's keyed records arrive well after the TTL. With TTL every epoch
starts each key from empty state; without it the state keeps growing. On both keyed state
backends: on RocksDB ``cleanup_full_snapshot()`` does not apply, and expired state goes when
it is read or in the end-of-epoch cleanup scan.
"""

from __future__ import annotations

import time

import pytest
from lockgate_it_support import SparkJobCounter, by_key, collect

from lockgate.common.time import Time
from lockgate.datastream import KeyedProcessFunction, MapFunction
from lockgate.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from lockgate.datastream.state_backend import EmbeddedRocksDBStateBackend, HashMapStateBackend

TTL_MS = 300
EPOCHS = 4
PER_EPOCH = ["a", "b", "a", "b"]  # one split, capped at 4 records per epoch
SLEEP_S = 0.2  # per record before the key_by: >= 0.8 s between two epochs' keyed records


class SlowMap(MapFunction):
    def map(self, value):
        time.sleep(SLEEP_S)
        return value


class CountWithState(KeyedProcessFunction):
    def __init__(self, ttl: bool):
        self.ttl = ttl

    def open(self, runtime_context):
        descriptors = [
            ValueStateDescriptor("count"),
            ListStateDescriptor("seqs"),
            MapStateDescriptor("by_parity"),
            ReducingStateDescriptor("sum", lambda a, b: a + b),
        ]
        if self.ttl:
            config = (
                StateTtlConfig.new_builder(Time.milliseconds(TTL_MS))
                .update_ttl_on_create_and_write()
                .never_return_expired()
                .cleanup_full_snapshot()
                .build()
            )
            for descriptor in descriptors:
                descriptor.enable_time_to_live(config)
        self.count = runtime_context.get_state(descriptors[0])
        self.seqs = runtime_context.get_list_state(descriptors[1])
        self.by_parity = runtime_context.get_map_state(descriptors[2])
        self.sum = runtime_context.get_reducing_state(descriptors[3])

    def process_element(self, value, ctx):
        key, seq = value
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        self.seqs.add(seq)
        self.by_parity.put(seq % 2, seq)
        self.sum.add(seq)
        # items() is an Iterable (RocksDB's walks the map lazily, as PyFlink's): no len()
        parities = len(list(self.by_parity.items()))
        yield key, seq, count, len(self.seqs.get()), parities, self.sum.get()


def records() -> list[tuple[str, int]]:
    return [(key, i) for i, key in enumerate(PER_EPOCH * EPOCHS)]


BACKENDS = {"hashmap": HashMapStateBackend, "rocksdb": EmbeddedRocksDBStateBackend}


def run(make_env, spark, ttl: bool, parallelism: int, backend: str) -> list[tuple]:
    env = make_env(parallelism=parallelism, max_records_per_split=len(PER_EPOCH))
    env.set_state_backend(BACKENDS[backend]())
    jobs = SparkJobCounter(spark)
    stream = (
        env.from_collection(records())
        .map(SlowMap())
        .key_by(lambda r: r[0])
        .process(CountWithState(ttl))
    )
    output = collect(stream)
    assert jobs.count(at_least=EPOCHS) >= EPOCHS
    return output


def expected(ttl: bool) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = {}
    state: dict[str, dict] = {}
    for i, (key, seq) in enumerate(records()):
        if ttl and i % len(PER_EPOCH) == 0:
            state.clear()  # everything written in the previous epoch has expired
        s = state.setdefault(key, {"count": 0, "seqs": [], "by_parity": {}, "sum": 0})
        s["count"] += 1
        s["seqs"].append(seq)
        s["by_parity"][seq % 2] = seq
        s["sum"] += seq
        out.setdefault(key, []).append(
            (key, seq, s["count"], len(s["seqs"]), len(s["by_parity"]), s["sum"])
        )
    return out


# Each backend once, at one parallelism each (each run sleeps through its TTLs)
@pytest.mark.parametrize(("parallelism", "backend"), [(1, "hashmap"), (2, "rocksdb")])
def test_keyed_state_expires_between_epochs(make_env, spark, parallelism, backend):
    with_ttl = by_key(run(make_env, spark, True, parallelism, backend), lambda r: r[0])
    without_ttl = by_key(run(make_env, spark, False, parallelism, backend), lambda r: r[0])
    assert without_ttl == expected(ttl=False)
    assert with_ttl == expected(ttl=True)
    assert with_ttl != without_ttl
    assert [r[2] for r in with_ttl["a"]] == [1, 2] * EPOCHS
    assert [r[2] for r in without_ttl["a"]] == list(range(1, 2 * EPOCHS + 1))
