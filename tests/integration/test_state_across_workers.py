"""A subtask and its keyed state stay in one process for the whole job, while Spark runs its
epochs' tasks in whatever Python worker is free."""

from __future__ import annotations

import os
from collections import defaultdict

from lockgate_it_support import BACKENDS, SparkJobCounter, by_key, collect

from lockgate.datastream import KeyedProcessFunction
from lockgate.datastream.state import ListStateDescriptor, ValueStateDescriptor

EPOCHS = 12
PER_EPOCH = 30
KEYS = [f"user-{i}" for i in range(15)]


class CountAndWhere(KeyedProcessFunction):
    """Counts per key and keeps the last sequence numbers; says where it ran."""

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))
        self.recent = runtime_context.get_list_state(ListStateDescriptor("recent"))

    def process_element(self, value, ctx):
        key, seq, epoch = value
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        recent = [*self.recent.get(), seq][-3:]
        self.recent.update(recent)
        yield key, seq, epoch, count, tuple(recent), self.index, os.getpid()


@BACKENDS
def test_a_subtask_keeps_its_state_in_one_process_for_the_whole_job(make_env, spark):
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

    # Where each subtask ran: one process, the same in every epoch, one per subtask
    processes: dict[int, set[int]] = defaultdict(set)
    for _, _, _, _, _, subtask, pid in actual:
        processes[subtask].add(pid)
    assert set(processes) == {0, 1}
    assert all(len(pids) == 1 for pids in processes.values()), dict(processes)
    assert processes[0] != processes[1]
