"""Jobs of different shapes: chains, unions, rebalance, shared sources, several sinks."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

from lockgate_it_support import CaptureWorkerOutput, SparkJobCounter, by_key, collect

from lockgate.datastream import FilterFunction, FlatMapFunction, MapFunction, Partitioner


def words_records(n: int = 400, seed: int = 3) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    return [(rng.choice(["ant", "bee", "cat", "dog", "eel", "fox"]), i) for i in range(n)]


def chain_reference(records) -> list[tuple]:
    out = []
    for word, i in records:
        value = (word.upper(), i * 3)
        if value[1] % 2 == 0:
            out.extend((value[0], value[1], part) for part in range(value[1] % 3 + 1))
    return out


class Triple(MapFunction):
    def map(self, value):
        return value[0].upper(), value[1] * 3


class Even(FilterFunction):
    def filter(self, value):
        return value[1] % 2 == 0


class Explode(FlatMapFunction):
    def flat_map(self, value):
        for part in range(value[1] % 3 + 1):
            yield value[0], value[1], part


class WithSubtask(MapFunction):
    """Tags a record with the subtask that maps it."""

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()

    def map(self, value):
        return self.index, value


def test_map_filter_flat_map_chain_with_functions_and_lambdas(make_env, spark):
    records = words_records()
    env = make_env(parallelism=2, max_records_per_split=50)
    jobs = SparkJobCounter(spark)
    stream = (
        env.from_collection(records)
        .set_parallelism(2)  # source and chain at the same parallelism: one task
        .map(Triple())
        .filter(Even())
        .flat_map(Explode())
        .map(lambda v: (v[0], v[1], v[2]))
        .filter(lambda v: True)
        .flat_map(lambda v: [v])
    )
    actual = collect(stream)
    assert jobs.count(at_least=4) >= 4
    assert Counter(actual) == Counter(chain_reference(records))


def test_chain_after_non_parallel_source_keeps_order_per_subtask(make_env):
    """Source (parallelism 1) -> map/filter/flat_map at parallelism 3: a rebalance edge."""
    records = words_records()
    env = make_env(parallelism=3, max_records_per_split=100)
    stream = env.from_collection(records).map(Triple()).filter(Even()).flat_map(Explode())
    actual = collect(stream.map(WithSubtask()))
    assert Counter(v for _, v in actual) == Counter(chain_reference(records))
    assert {s for s, _ in actual} == {0, 1, 2}
    # Records of one subtask keep the source order (sequence numbers never go back).
    for subtask, outputs in by_key(actual, lambda r: r[0]).items():
        numbers = [v[1] for _, v in outputs]
        assert numbers == sorted(numbers), subtask


def test_rebalance_spreads_records_round_robin(make_env, spark):
    records = list(range(600))
    env = make_env(parallelism=3, max_records_per_split=120)
    jobs = SparkJobCounter(spark)
    actual = collect(env.from_collection(records).rebalance().map(WithSubtask()))
    assert jobs.count(at_least=5) >= 5
    assert sorted(v for _, v in actual) == records
    per_subtask = Counter(s for s, _ in actual)
    assert set(per_subtask) == {0, 1, 2}
    assert max(per_subtask.values()) - min(per_subtask.values()) <= 1


def test_rebalance_from_parallel_source_to_lower_parallelism(make_env):
    records = list(range(300))
    env = make_env(parallelism=2, max_records_per_split=40)
    stream = env.from_collection(records).set_parallelism(3).rebalance().map(WithSubtask())
    actual = collect(stream)
    assert sorted(v for _, v in actual) == records
    assert set(Counter(s for s, _ in actual)) == {0, 1}


def test_union_of_differently_partitioned_streams(make_env, spark):
    """A rebalanced stream, a keyed stream and a forward stream feed one operator."""
    left = [("L", i) for i in range(150)]
    right = [("R", f"k{i % 7}", i) for i in range(200)]
    middle = [("M", i) for i in range(90)]
    env = make_env(parallelism=2, max_records_per_split=40)
    jobs = SparkJobCounter(spark)
    rebalanced = env.from_collection(left).rebalance().map(lambda r: (r[0], r[1] * 2))
    keyed = env.from_collection(right).key_by(lambda r: r[1])  # unioned as a KeyedStream
    forward = env.from_collection(middle).set_parallelism(2).map(lambda r: r)
    actual = collect(rebalanced.union(keyed, forward).map(lambda r: ("out", *r)))
    assert jobs.count(at_least=4) >= 4
    expected = (
        [("out", "L", i * 2) for _, i in left]
        + [("out", *r) for r in right]
        + [("out", *r) for r in middle]
    )
    assert Counter(actual) == Counter(expected)


def test_union_feeding_a_keyed_operator(make_env):
    a = [(f"k{i % 5}", 1) for i in range(120)]
    b = [(f"k{i % 3}", 10) for i in range(90)]
    env = make_env(parallelism=3, max_records_per_split=30)
    left = env.from_collection(a).map(lambda r: r)
    right = env.from_collection(b).set_parallelism(2).filter(lambda r: True)
    sums = left.union(right).key_by(lambda r: r[0]).reduce(lambda x, y: (x[0], x[1] + y[1]))
    actual = collect(sums)
    final = {key: outputs[-1][1] for key, outputs in by_key(actual, lambda r: r[0]).items()}
    expected: Counter[str] = Counter()
    for key, value in a + b:
        expected[key] += value
    assert final == dict(expected)
    assert len(actual) == len(a) + len(b)


class CountCalls(MapFunction):
    """Identity map leaving one line per record in a file: shows how often it ran."""

    def __init__(self, path: str):
        self.path = path

    def map(self, value):
        with open(self.path, "a") as log:
            log.write(f"{value[2]}\n")
        return value


def test_two_key_by_branches_share_one_source(make_env, spark, tmp_path):
    rng = random.Random(5)
    records = [(rng.choice("abcd"), rng.choice("xyz"), i) for i in range(240)]
    calls = tmp_path / "calls.txt"
    env = make_env(parallelism=2, max_records_per_split=60)
    jobs = SparkJobCounter(spark)
    # parallelism 1: chained with the source, so every key has one sender (source order)
    source = env.from_collection(records).map(CountCalls(str(calls))).set_parallelism(1)
    by_first = source.key_by(lambda r: r[0]).map(lambda r: ("first", r[0], r[2]))
    by_second = source.key_by(lambda r: r[1]).map(lambda r: ("second", r[1], r[2]))
    actual = collect(by_first.union(by_second))
    assert jobs.count(at_least=4) >= 4
    expected = [("first", r[0], r[2]) for r in records] + [("second", r[1], r[2]) for r in records]
    assert Counter(actual) == Counter(expected)
    # Per key, each branch sees its records in source order.
    for tag in ("first", "second"):
        for key, outputs in by_key([r for r in actual if r[0] == tag], lambda r: r[1]).items():
            assert [r[2] for r in outputs] == sorted(r[2] for r in outputs), (tag, key)
    # Both branches consumed one run of the source: the chained map saw every record once.
    assert Counter(Path(calls).read_text().split()) == Counter(str(r[2]) for r in records)


def test_two_keyed_aggregations_of_one_source(make_env):
    rng = random.Random(9)
    records = [(rng.choice("abc"), rng.choice("uv"), rng.randint(1, 9)) for _ in range(180)]
    env = make_env(parallelism=2, max_records_per_split=45)
    source = env.from_collection(records)
    totals = source.key_by(lambda r: r[0]).sum(2).map(lambda r: ("sum", r[0], r[2]))
    peaks = source.key_by(lambda r: r[1]).max(2).map(lambda r: ("max", r[1], r[2]))
    actual = collect(totals.union(peaks))
    final = {key: outputs[-1][2] for key, outputs in by_key(actual, lambda r: (r[0], r[1])).items()}
    expected = {}
    for first, second, value in records:
        expected[("sum", first)] = expected.get(("sum", first), 0) + value
        expected[("max", second)] = max(expected.get(("max", second), 0), value)
    assert final == expected
    assert len(actual) == 2 * len(records)


def test_stream_printed_and_collected(make_env, tmp_path):
    """One stream feeds a print sink and the collect sink; both see every record."""
    printed = tmp_path / "printed.txt"
    records = [f"line-{i}" for i in range(40)]
    env = make_env(parallelism=2)  # one epoch: the capture map opens and closes in one task
    stream = env.from_collection(records).rebalance().map(CaptureWorkerOutput(str(printed)))
    upper = stream.map(str.upper)
    upper.print()
    actual = collect(upper)
    assert sorted(actual) == sorted(r.upper() for r in records)
    lines = printed.read_text().splitlines()
    assert sorted(line.split("> ", 1)[1] for line in lines) == sorted(actual)
    assert {line.split("> ", 1)[0] for line in lines} == {"1", "2"}


def test_chain_breaks_and_rescale_shuffle_forward_custom_edges(make_env):
    """start_new_chain and disable_chaining split the chain into tasks joined by forward
    edges (same results); rescale sends each subtask's records to its block of the next
    operator's subtasks; shuffle reaches every subtask; forward keeps subtask i to i;
    partition_custom sends each record where its partitioner says, opened once per subtask."""
    records = words_records()
    env = make_env(parallelism=2, max_records_per_split=50)
    broken = (
        env.from_collection(records)
        .set_parallelism(2)
        .map(Triple())
        .filter(Even())
        .start_new_chain()
        .flat_map(Explode())
        .disable_chaining()
        .map(WithSubtask())
    )
    rescaled = broken.rescale().map(WithSubtask()).set_parallelism(4)
    shuffled = rescaled.shuffle().map(WithSubtask()).set_parallelism(3)
    forwarded = shuffled.forward().map(WithSubtask()).set_parallelism(3)
    custom = forwarded.partition_custom(ByPartHopping(), lambda r: r[1][1][1][1][2])
    actual = collect(custom.map(WithSubtask()).set_parallelism(2))
    assert Counter(value for _, (_, (_, (_, (_, value)))) in actual) == Counter(
        chain_reference(records)
    )
    assert all(down // 2 == up for _, (_, (_, (down, (up, _)))) in actual)  # 2 -> 4: blocks
    assert {shuffled_at for _, (_, (shuffled_at, _)) in actual} == {0, 1, 2}
    assert all(f == s for _, (f, (s, _)) in actual)  # forward: subtask i to subtask i
    assert all(at == value[2] % 2 for at, (_, (_, (_, (_, value)))) in actual)


class ByPartHopping(Partitioner):
    """Partition = the record's part number modulo the partitions; it fails unless open()
    ran first."""

    def open(self, runtime_context):
        self.opened = True

    def partition(self, key, num_partitions):
        assert self.opened
        return key % num_partitions
