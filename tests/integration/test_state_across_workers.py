"""Keyed state follows a subtask to whichever Python worker runs it next epoch (on RocksDB:
restored from the local snapshot another worker left on this machine)."""

from __future__ import annotations

import os
from collections import defaultdict

from lockgate_it_support import BACKENDS, SparkJobCounter, by_key, collect
from pyspark import TaskContext

from lockgate.datastream import KeyedProcessFunction
from lockgate.datastream.state import ListStateDescriptor, ValueStateDescriptor

EPOCHS = 12
PER_EPOCH = 30
KEYS = [f"user-{i}" for i in range(15)]


class CountAndWhere(KeyedProcessFunction):
    """Counts per key and keeps the last sequence numbers; says where it ran."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))
        self.recent = runtime_context.get_list_state(ListStateDescriptor("recent"))

    def process_element(self, value, ctx):
        key, seq, epoch = value
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        recent = [*self.recent.get(), seq][-3:]
        self.recent.update(recent)
        # Spark's partition i is subtask i; asked per record, not kept on self.
        subtask = TaskContext.get().partitionId()
        yield key, seq, epoch, count, tuple(recent), subtask, os.getpid()


@BACKENDS
def test_state_is_found_when_a_subtask_moves_to_another_worker(make_env, spark):
    n = EPOCHS * PER_EPOCH
    records = [(KEYS[(i * 7) % len(KEYS)], i, i // PER_EPOCH + 1) for i in range(n)]
    env = make_env(parallelism=2, max_records_per_split=PER_EPOCH)
    jobs = SparkJobCounter(spark)
    actual = collect(env.from_collection(records).key_by(lambda r: r[0]).process(CountAndWhere()))
    assert jobs.count(at_least=EPOCHS) >= EPOCHS

    # Correct, as a plain-Python run: counts 1..n and the last three sequence numbers.
    assert sorted(r[1] for r in actual) == list(range(n))
    for key, outputs in by_key(actual, lambda r: r[0]).items():
        seqs = [r[1] for r in records if r[0] == key]
        assert [r[1] for r in outputs] == seqs, key
        assert [r[3] for r in outputs] == list(range(1, len(seqs) + 1)), key
        assert [r[4] for r in outputs] == [
            tuple(seqs[max(0, i - 2) : i + 1]) for i in range(len(seqs))
        ]

    # Where each subtask ran, epoch by epoch: one worker per subtask and epoch...
    workers: dict[int, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    for _, _, epoch, _, _, subtask, pid in actual:
        workers[subtask][epoch].add(pid)
    assert set(workers) == {0, 1}
    assert all(len(pids) == 1 for per_epoch in workers.values() for pids in per_epoch.values())
    # ...and at least once a subtask ran in another worker than in the epoch before.
    moves = [
        (subtask, epoch)
        for subtask, per_epoch in workers.items()
        for epoch in range(2, EPOCHS + 1)
        if per_epoch.get(epoch)
        and per_epoch.get(epoch - 1)
        and per_epoch[epoch] != per_epoch[epoch - 1]
    ]
    assert moves, f"no subtask changed worker in {EPOCHS} epochs: {dict(workers)}"
