"""Keyed-state jobs give the same results as a plain-Python reference, over several epochs.

Every test runs on both keyed state backends (heap and RocksDB): both must match the
reference. The collection source is non-parallel (as in Flink), so every key sees its
records in collection order: outputs are compared exactly as multisets, and per key as
sequences. With a parallel source only order-independent results are compared.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from lockgate_it_support import BACKENDS, SparkJobCounter, by_key, collect, matrix

from lockgate.common import Row
from lockgate.datastream import (
    AggregateFunction,
    FilterFunction,
    FlatMapFunction,
    KeyedProcessFunction,
    MapFunction,
)
from lockgate.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)

ACCOUNTS = [f"acct-{i}" for i in range(9)]
CATEGORIES = ["food", "rent", "fun", "travel", "reset"]
N_RECORDS = 300
CAP = 60  # records per split and epoch: 300 records from one split -> 5 epochs
MIN_EPOCHS = 4
LAST_N = 3

# 3: key groups split unevenly, on RocksDB (the other tests here run on the heap backend in
# `make test`); parallelism 1 on the heap backend in `make integration-full`.
parallelisms = matrix("parallelism, backend", [(3, "rocksdb"), (1, "hashmap")])


def transactions(n: int = N_RECORDS, seed: int = 7) -> list[tuple[str, int, str, int]]:
    """(account, amount, category, sequence number); amounts drift negative for alerts."""
    rng = random.Random(seed)
    return [
        (rng.choice(ACCOUNTS), rng.randint(-60, 45), rng.choice(CATEGORIES), i) for i in range(n)
    ]


def account(record: tuple) -> str:
    return record[0]


def assert_same_per_key(actual: list[Any], expected: list[Any], key_index: int = 0) -> None:
    assert Counter(actual) == Counter(expected)
    actual_by_key = by_key(actual, lambda r: r[key_index])
    expected_by_key = by_key(expected, lambda r: r[key_index])
    assert actual_by_key.keys() == expected_by_key.keys()
    for key, sequence in expected_by_key.items():
        assert actual_by_key[key] == sequence, key


# ValueState: running balance with an alert rule ------------------------------------------


class BalanceWithAlerts(KeyedProcessFunction):
    def open(self, runtime_context):
        self.balance = runtime_context.get_state(ValueStateDescriptor("balance"))

    def process_element(self, value, ctx):
        account, amount, _, seq = value
        balance = (self.balance.value() or 0) + amount
        self.balance.update(balance)
        yield "balance", ctx.get_current_key(), seq, balance
        if balance < 0:
            yield "alert", account, seq, balance


def balance_reference(records) -> list[tuple]:
    balances: dict[str, int] = {}
    out = []
    for account, amount, _, seq in records:
        balances[account] = balances.get(account, 0) + amount
        out.append(("balance", account, seq, balances[account]))
        if balances[account] < 0:
            out.append(("alert", account, seq, balances[account]))
    return out


@parallelisms
def test_value_state_balance_and_alerts(make_env, spark, parallelism):
    records = transactions()
    expected = balance_reference(records)
    assert any(r[0] == "alert" for r in expected) and any(r[3] > 0 for r in expected)
    env = make_env(parallelism=parallelism, max_records_per_split=CAP)
    jobs = SparkJobCounter(spark)
    stream = env.from_collection(records).key_by(account).process(BalanceWithAlerts())
    actual = collect(stream)
    assert jobs.count(at_least=MIN_EPOCHS) >= MIN_EPOCHS
    assert_same_per_key(actual, expected, key_index=1)


@parallelisms
def test_value_state_with_parallel_source(make_env, spark, parallelism):
    """Two source subtasks: per-key order is not the collection's, so compare final state."""
    records = transactions()
    env = make_env(parallelism=parallelism, max_records_per_split=CAP // 2)
    jobs = SparkJobCounter(spark)
    stream = (
        env.from_collection(records)
        .set_parallelism(2)
        .key_by(account)
        .process(BalanceWithAlerts())
        .filter(lambda r: r[0] == "balance")
    )
    actual = collect(stream)
    assert jobs.count(at_least=MIN_EPOCHS) >= MIN_EPOCHS
    assert sorted(r[2] for r in actual) == list(range(len(records)))  # each record once
    final = {key: outputs[-1][3] for key, outputs in by_key(actual, lambda r: r[1]).items()}
    expected_final: Counter[str] = Counter()
    for acct, amount, _, _ in records:
        expected_final[acct] += amount
    assert final == dict(expected_final)
    # Running balances of one key are the partial sums of its amounts in processing order.
    amounts = {seq: amount for _, amount, _, seq in records}
    for key, outputs in by_key(actual, lambda r: r[1]).items():
        running = 0
        for _, _, seq, balance in outputs:
            running += amounts[seq]
            assert balance == running, key


# ListState: last N per key ---------------------------------------------------------------


class LastN(KeyedProcessFunction):
    def open(self, runtime_context):
        self.recent = runtime_context.get_list_state(ListStateDescriptor("recent"))

    def process_element(self, value, ctx):
        self.recent.add(value[1])
        items = list(self.recent.get())
        if len(items) > LAST_N:
            self.recent.update(items[-LAST_N:])
        yield value[0], value[3], tuple(self.recent.get())


def last_n_reference(records) -> list[tuple]:
    recent: dict[str, list[int]] = {}
    out = []
    for acct, amount, _, seq in records:
        items = [*recent.get(acct, []), amount][-LAST_N:]
        recent[acct] = items
        out.append((acct, seq, tuple(items)))
    return out


@parallelisms
def test_list_state_last_n(make_env, spark, parallelism):
    records = transactions()
    env = make_env(parallelism=parallelism, max_records_per_split=CAP)
    jobs = SparkJobCounter(spark)
    actual = collect(env.from_collection(records).key_by(account).process(LastN()))
    assert jobs.count(at_least=MIN_EPOCHS) >= MIN_EPOCHS
    assert_same_per_key(actual, last_n_reference(records))


# MapState: count per (key, category) -----------------------------------------------------


class CategoryCounts(KeyedProcessFunction):
    """Counts per category; a 'reset' record removes the 'fun' entry."""

    def open(self, runtime_context):
        self.counts = runtime_context.get_map_state(MapStateDescriptor("counts"))

    def process_element(self, value, ctx):
        category = value[2]
        if category == "reset":
            if self.counts.contains("fun"):
                self.counts.remove("fun")
        else:
            self.counts.put(category, (self.counts.get(category) or 0) + 1)
        assert self.counts.is_empty() == (len(list(self.counts.keys())) == 0)
        assert sorted(self.counts.values()) == sorted(v for _, v in self.counts.items())
        yield value[0], value[3], tuple(sorted(self.counts.items()))


def category_reference(records) -> list[tuple]:
    counts: dict[str, dict[str, int]] = {}
    out = []
    for acct, _, category, seq in records:
        mine = counts.setdefault(acct, {})
        if category == "reset":
            mine.pop("fun", None)
        else:
            mine[category] = mine.get(category, 0) + 1
        out.append((acct, seq, tuple(sorted(mine.items()))))
    return out


@parallelisms
def test_map_state_counts_per_category(make_env, spark, parallelism):
    records = transactions()
    expected = category_reference(records)
    env = make_env(parallelism=parallelism, max_records_per_split=CAP)
    jobs = SparkJobCounter(spark)
    actual = collect(env.from_collection(records).key_by(account).process(CategoryCounts()))
    assert jobs.count(at_least=MIN_EPOCHS) >= MIN_EPOCHS
    assert_same_per_key(actual, expected)
    final = {key: out[-1][2] for key, out in by_key(actual, lambda r: r[0]).items()}
    assert final == {key: out[-1][2] for key, out in by_key(expected, lambda r: r[0]).items()}


# ReducingState and AggregatingState via the RuntimeContext -------------------------------


class Average(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return accumulator[0] + value, accumulator[1] + 1

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, acc_a, acc_b):
        return acc_a[0] + acc_b[0], acc_a[1] + acc_b[1]


class MaxAndAverage(KeyedProcessFunction):
    def open(self, runtime_context):
        self.largest = runtime_context.get_reducing_state(
            ReducingStateDescriptor("largest", lambda a, b: max(a, b))
        )
        self.average = runtime_context.get_aggregating_state(
            AggregatingStateDescriptor("average", Average())
        )

    def process_element(self, value, ctx):
        before = (self.largest.get(), self.average.get())
        self.largest.add(value[1])
        self.average.add(value[1])
        yield value[0], value[3], before, self.largest.get(), self.average.get()


def max_average_reference(records) -> list[tuple]:
    seen: dict[str, list[int]] = {}
    out = []
    for acct, amount, _, seq in records:
        amounts = seen.setdefault(acct, [])
        before = (max(amounts), sum(amounts) / len(amounts)) if amounts else (None, None)
        amounts.append(amount)
        out.append((acct, seq, before, max(amounts), sum(amounts) / len(amounts)))
    return out


@parallelisms
def test_reducing_and_aggregating_state(make_env, spark, parallelism):
    records = transactions()
    env = make_env(parallelism=parallelism, max_records_per_split=CAP)
    jobs = SparkJobCounter(spark)
    actual = collect(env.from_collection(records).key_by(account).process(MaxAndAverage()))
    assert jobs.count(at_least=MIN_EPOCHS) >= MIN_EPOCHS
    assert_same_per_key(actual, max_average_reference(records))


# KeyedStream.reduce / sum / min / max / min_by / max_by (rolling) ------------------------


def _replace(record: tuple, position: int, value: Any) -> tuple:
    return (*record[:position], value, *record[position + 1 :])


ROLLING_STEPS = {
    "sum": lambda a, b: _replace(a, 1, a[1] + b[1]),
    "min": lambda a, b: _replace(a, 1, min(a[1], b[1])),
    "max": lambda a, b: _replace(a, 1, max(a[1], b[1])),
    "min_by": lambda a, b: b if b[1] < a[1] else a,
    "max_by": lambda a, b: b if b[1] > a[1] else a,
    "reduce": lambda a, b: (a[0], a[1] + b[1], b[2]),
}


def rolling_reference(records, step) -> list[tuple]:
    """PyFlink's STREAMING reduce: the first record of a key unchanged, then rolling."""
    current: dict[str, tuple] = {}
    out = []
    for record in records:
        key = record[0]
        current[key] = record if key not in current else step(current[key], record)
        out.append(current[key])
    return out


class Tag:
    def __init__(self, tag: str):
        self.tag = tag

    def __call__(self, value):
        return (self.tag, *value)


@parallelisms
def test_rolling_aggregations_on_tuples(make_env, spark, parallelism):
    # (key, value, sequence); small value range so that min_by/max_by see ties
    rng = random.Random(11)
    records = [(rng.choice("abcde"), rng.randint(0, 9), i) for i in range(240)]
    env = make_env(parallelism=parallelism, max_records_per_split=CAP)
    jobs = SparkJobCounter(spark)
    keyed = env.from_collection(records).key_by(lambda r: r[0])
    branches = {
        "sum": keyed.sum(1),
        "min": keyed.min(1),
        "max": keyed.max(1),
        "min_by": keyed.min_by(1),
        "max_by": keyed.max_by(1),
        "reduce": keyed.reduce(ROLLING_STEPS["reduce"]),
    }
    tagged = [stream.map(Tag(tag)) for tag, stream in branches.items()]
    actual = collect(tagged[0].union(*tagged[1:]))
    assert jobs.count(at_least=MIN_EPOCHS) >= MIN_EPOCHS
    for tag, step in ROLLING_STEPS.items():
        mine = [r[1:] for r in actual if r[0] == tag]
        assert_same_per_key(mine, rolling_reference(records, step))
        # PyFlink: the first record of every key goes out unchanged
        firsts = {key: out[0] for key, out in by_key(mine, lambda r: r[0]).items()}
        assert firsts == {key: recs[0] for key, recs in by_key(records, lambda r: r[0]).items()}


# KeyedStream.map / flat_map / filter with keyed state opened in open() -------------------


class CountingMap(MapFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def map(self, value):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        return "map", value[0], value[3], count


class NewCategories(FlatMapFunction):
    """Emits (key, category) the first time a key shows a category, plus every record's seq."""

    def open(self, runtime_context):
        self.seen = runtime_context.get_list_state(ListStateDescriptor("seen"))

    def flat_map(self, value):
        yield "flat_map-seq", value[0], value[3], None
        if value[2] not in list(self.seen.get()):
            self.seen.add(value[2])
            yield "flat_map-new", value[0], value[3], value[2]


class FirstPerCategory(FilterFunction):
    def open(self, runtime_context):
        self.seen = runtime_context.get_map_state(MapStateDescriptor("seen"))

    def filter(self, value):
        if self.seen.contains(value[2]):
            return False
        self.seen.put(value[2], True)
        return True


def keyed_functions_reference(records) -> list[tuple]:
    counts: Counter[str] = Counter()
    seen: dict[str, set[str]] = {}
    out = []
    for acct, _, category, seq in records:
        counts[acct] += 1
        out.append(("map", acct, seq, counts[acct]))
        out.append(("flat_map-seq", acct, seq, None))
        mine = seen.setdefault(acct, set())
        if category not in mine:
            mine.add(category)
            out.append(("flat_map-new", acct, seq, category))
            out.append(("filter", acct, seq, category))
    return out


@parallelisms
def test_keyed_map_flat_map_filter_with_state(make_env, spark, parallelism):
    records = transactions()
    env = make_env(parallelism=parallelism, max_records_per_split=CAP)
    jobs = SparkJobCounter(spark)
    keyed = env.from_collection(records).key_by(account)
    mapped = keyed.map(CountingMap())
    flat = keyed.flat_map(NewCategories())
    filtered = keyed.filter(FirstPerCategory()).map(lambda r: ("filter", r[0], r[3], r[2]))
    actual = collect(mapped.union(flat, filtered))
    assert jobs.count(at_least=MIN_EPOCHS) >= MIN_EPOCHS
    expected = keyed_functions_reference(records)
    assert Counter(actual) == Counter(expected)
    for tag in ("map", "flat_map-seq", "flat_map-new", "filter"):
        mine = [r for r in actual if r[0] == tag]
        assert_same_per_key(mine, [r for r in expected if r[0] == tag], key_index=1)


@BACKENDS
def test_execute_and_collect_with_limit_returns_a_prefix_list(make_env, spark):
    """``limit`` returns a list of that many results and stops the job early."""
    records = transactions()
    env = make_env(parallelism=2, max_records_per_split=CAP)
    jobs = SparkJobCounter(spark)
    stream = env.from_collection(records).key_by(account).process(BalanceWithAlerts())
    first = stream.execute_and_collect(limit=25)
    assert isinstance(first, list)
    assert len(first) == 25
    # From the first epoch, whose results arrive first: records 0..CAP-1, in per-key order.
    expected = balance_reference(records[:CAP])
    assert set(first) <= set(expected)
    for key, outputs in by_key(first, lambda r: r[1]).items():
        mine = [r for r in expected if r[1] == key]
        assert outputs == mine[: len(outputs)], key
    # The job stopped after the epoch that had enough: one epoch's job ran (the next one's
    # source stage may have been started ahead, and cancelled).
    assert jobs.count(at_least=1) <= 2
    assert jobs.result_jobs() == 1


# State in all five kinds with a parallel source: final state per key -----------------------


class AllStateKinds(KeyedProcessFunction):
    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total"))
        self.amounts = runtime_context.get_list_state(ListStateDescriptor("amounts"))
        self.per_category = runtime_context.get_map_state(MapStateDescriptor("per-category"))
        self.largest = runtime_context.get_reducing_state(ReducingStateDescriptor("largest", max))
        self.average = runtime_context.get_aggregating_state(
            AggregatingStateDescriptor("average", Average())
        )

    def process_element(self, value, ctx):
        _, amount, category, _ = value
        self.total.update((self.total.value() or 0) + amount)
        self.amounts.add(amount)
        self.per_category.put(category, (self.per_category.get(category) or 0) + 1)
        self.largest.add(amount)
        self.average.add(amount)
        yield (
            ctx.get_current_key(),
            len(list(self.amounts.get())),
            self.total.value(),
            tuple(sorted(self.amounts.get())),
            tuple(sorted(self.per_category.items())),
            self.largest.get(),
            self.average.get(),
        )


@BACKENDS
@pytest.mark.parametrize("parallelism", [2, 3])
def test_all_state_kinds_final_state_with_parallel_source(make_env, spark, parallelism):
    records = transactions(seed=23)
    env = make_env(parallelism=parallelism, max_records_per_split=CAP // 2)
    jobs = SparkJobCounter(spark)
    stream = env.from_collection(records).set_parallelism(2).key_by(account)
    actual = collect(stream.process(AllStateKinds()))
    assert jobs.count(at_least=MIN_EPOCHS) >= MIN_EPOCHS
    per_key = by_key(records, account)
    # Per key, the n-th output has seen n records: counts are exactly 1..n in order.
    outputs = by_key(actual, lambda r: r[0])
    assert outputs.keys() == per_key.keys()
    for key, mine in outputs.items():
        assert [r[1] for r in mine] == list(range(1, len(per_key[key]) + 1)), key
        amounts = [r[1] for r in per_key[key]]
        categories = Counter(r[2] for r in per_key[key])
        assert mine[-1][2:] == (
            sum(amounts),
            tuple(sorted(amounts)),
            tuple(sorted(categories.items())),
            max(amounts),
            sum(amounts) / len(amounts),
        ), key


@BACKENDS
def test_rolling_sum_on_named_rows(make_env):
    records = [Row(k="a", v=1), Row(k="b", v=10), Row(k="a", v=2), Row(k="a", v=3)]
    env = make_env(parallelism=2)
    actual = collect(env.from_collection(records).key_by(lambda r: r["k"]).sum("v"))
    assert by_key(actual, lambda r: r["k"]) == {
        "a": [Row(k="a", v=1), Row(k="a", v=3), Row(k="a", v=6)],
        "b": [Row(k="b", v=10)],
    }


# Known bugs ------------------------------------------------------------------------------


class InstanceProbe(KeyedProcessFunction):
    """Counts per key; leaves a marker file when open() runs for a second subtask."""

    def __init__(self, marker_dir: str):
        self.marker_dir = marker_dir

    def open(self, runtime_context):
        subtask = runtime_context.get_index_of_this_subtask()
        previous = getattr(self, "opened_for", None)
        if previous is not None and previous != subtask:
            Path(self.marker_dir, f"shared-{previous}-{subtask}-{os.getpid()}").touch()
        self.opened_for = subtask
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield ctx.get_current_key(), value[1], count


@BACKENDS
def test_each_subtask_has_its_own_function_instance(make_env, tmp_path):
    """Six subtasks on two cores: several of them are created in the same Python worker."""
    records = [(f"k{i % 24}", i) for i in range(240)]
    env = make_env(parallelism=6, max_records_per_split=60)  # 4 epochs
    stream = env.from_collection(records).key_by(lambda r: r[0])
    try:
        actual = collect(stream.process(InstanceProbe(str(tmp_path))))
    finally:
        shared = sorted(p.name for p in tmp_path.glob("shared-*"))
    assert not shared, f"one function instance was opened for several subtasks: {shared}"
    for key, outputs in by_key(actual, lambda r: r[0]).items():
        assert [r[2] for r in outputs] == list(range(1, len(outputs) + 1)), key


class History(KeyedProcessFunction):
    """Keeps a list per key in a ValueState and emits it after each record."""

    def open(self, runtime_context):
        self.history = runtime_context.get_state(ValueStateDescriptor("history"))

    def process_element(self, value, ctx):
        history = self.history.value() or []
        history.append(value[1])
        self.history.update(history)
        yield ctx.get_current_key(), history


@BACKENDS
def test_rolling_sum_on_lists_emits_each_intermediate_value(make_env):
    # PyFlink 2.3 (checked): [['a', 1], ['a', 3], ['a', 6], ['b', 5], ['a', 10]]
    records = [["a", 1], ["a", 2], ["a", 3], ["b", 5], ["a", 4]]
    env = make_env(parallelism=1)
    actual = collect(env.from_collection(records).key_by(lambda r: r[0]).sum(1))
    assert actual == [["a", 1], ["a", 3], ["a", 6], ["b", 5], ["a", 10]]


@BACKENDS
def test_emitted_state_value_is_not_changed_by_later_records(make_env):
    # PyFlink 2.3 (checked): [('a', [1]), ('a', [1, 2]), ('a', [1, 2, 3])]
    env = make_env(parallelism=1)
    stream = env.from_collection([("a", 1), ("a", 2), ("a", 3)]).key_by(lambda r: r[0])
    assert collect(stream.process(History())) == [("a", [1]), ("a", [1, 2]), ("a", [1, 2, 3])]
