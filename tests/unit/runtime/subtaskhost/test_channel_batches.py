"""Shuffle batches are bounded in records and in bytes, and cut the same way on every attempt.

A channel writer buffers pickled records per target subtask and hands each buffer to Spark's
shuffle as one item. Without a byte bound, 2048 records of 1 MB would be one 2 GB item.
"""

from __future__ import annotations

import random
import re
from itertools import pairwise
from pickle import HIGHEST_PROTOCOL, dumps, loads
from typing import Any

import pytest
from epoch_harness import HASHMAP, Cluster

from lockgate.common.config_options import ConfigurationError
from lockgate.common.watermark_strategy import LONG_MIN
from lockgate.runtime.errors import UserFunctionError
from lockgate.runtime.jobmaster.job_settings import JobSettings
from lockgate.runtime.messages.spark_items import ItemKind, ShuffleItem
from lockgate.runtime.messages.task_deployment import BatchBounds
from lockgate.runtime.subtaskhost.channels import (
    BroadcastWriter,
    CustomPartitionWriter,
    ForwardWriter,
    KeyGroupWriter,
    RebalanceWriter,
    RescaleWriter,
    ShuffleWriter,
    rescale_receivers,
)
from lockgate.runtime.subtaskhost.context import RecordTimestamp
from lockgate.runtime.subtaskhost.operators import CollectSinkOperator, OperatorContext
from lockgate.runtime.subtaskhost.watermarks import ChannelEnd

TARGETS = 3
MAX_PARALLELISM = 128
WRITERS = ["forward", "rebalance", "key_group", "rescale", "shuffle"]


def first(record: tuple[Any, Any]) -> Any:
    return record[0]


def make_writer(
    kind: str,
    bounds: BatchBounds,
    attempt: str = "a1",
    timestamped: bool = False,
    max_record_bytes: int = 1 << 30,
) -> Any:
    ctx = OperatorContext("upstream", "upstream-uid", 1, 2, None, None, [], RecordTimestamp())
    ctx.attempt = attempt
    ctx.max_record_bytes = max_record_bytes
    if kind == "forward":
        return ForwardWriter(ctx, 7, bounds, timestamped)
    if kind == "rebalance":
        return RebalanceWriter(ctx, 7, TARGETS, bounds, timestamped)
    if kind == "broadcast":
        return BroadcastWriter(ctx, 7, TARGETS, bounds, timestamped)
    if kind == "rescale":
        return RescaleWriter(ctx, 7, 2, TARGETS * 2, bounds, timestamped)
    if kind == "shuffle":
        return ShuffleWriter(ctx, 7, TARGETS, bounds, timestamped)
    return KeyGroupWriter(
        ctx, 7, TARGETS, bounds, timestamped, first, MAX_PARALLELISM, "downstream"
    )


def feed(writer: Any, records: list[Any]) -> list[Any]:
    """The items the writer hands to the shuffle for one epoch of ``records``: half come one
    by one (as from chained operators), half as one batch (as from a source)."""
    half = len(records) // 2
    for record in records[:half]:
        writer.process(record)
    writer.process_batch(records[half:])
    writer.end_channels(ChannelEnd(LONG_MIN, False))
    items = writer.ctx.outbox[:]
    writer.ctx.outbox.clear()
    return items


def write(kind: str, bounds: BatchBounds, records: list[Any], attempt: str = "a1") -> list[Any]:
    return feed(make_writer(kind, bounds, attempt), records)


def batches(items: list[Any]) -> list[tuple[int, int, list[bytes]]]:
    """(target partition, sequence number, pickled records) of every batch, in output order:
    of a writer's outbox items (HostOutput) or of a task's output items (ShuffleItem)."""
    found = []
    for item in items:
        partition, carried = (
            (item.target, item.channel) if isinstance(item, ShuffleItem) else (item.target, item)
        )
        if carried.kind is not ItemKind.BATCH:
            continue  # the end-of-epoch marker
        sequence = carried.sequence
        batch = loads(carried.payload)
        data = batch.records
        if batch.key_groups is not None:
            assert len(batch.key_groups) == len(data)  # a key group per record
        found.append((partition, sequence, data))
    return found


def sized_records(count: int, smallest: int, largest: int, seed: int = 5) -> list[Any]:
    rng = random.Random(seed)
    return [(n % 11, "x" * rng.randint(smallest, largest)) for n in range(count)]


def by_target(found: list[tuple[int, int, list[bytes]]]) -> dict[int, list[list[bytes]]]:
    targets: dict[int, list[list[bytes]]] = {}
    for partition, _, data in found:
        targets.setdefault(partition, []).append(data)
    return targets


@pytest.mark.parametrize("kind", WRITERS)
def test_batches_of_big_records_stay_within_the_byte_bound(kind):
    bound = 10_000
    writer = make_writer(kind, BatchBounds(records=2048, bytes=bound, record_bytes=1 << 30))
    for epoch in (1, 2):  # what epoch 1 left buffered must not count in epoch 2
        records = sized_records(300, 1_000, 4_000, seed=epoch)
        found = batches(feed(writer, records))

        for partition, _, data in found:
            assert sum(map(len, data)) <= bound, f"a batch to {partition} is over the bound"
        # and a batch ends only when the next record for its target would not fit
        for sent in by_target(found).values():
            for batch, following in pairwise(sent):
                assert sum(map(len, batch)) + len(following[0]) > bound
        delivered = [loads(data) for _, _, batch in found for data in batch]
        assert sorted(delivered) == sorted(records)


@pytest.mark.parametrize("kind", WRITERS)
def test_a_record_larger_than_the_byte_bound_travels_alone(kind):
    big = ("same key", "y" * 50_000)
    small = [("same key", n) for n in range(20)]
    records = [*small[:10], big, *small[10:]]
    found = batches(
        write(kind, BatchBounds(records=2048, bytes=1_000, record_bytes=1 << 30), records)
    )

    alone = [data for _, _, data in found if loads(data[0]) == big]
    assert alone == [[dumps(big, HIGHEST_PROTOCOL)]]
    for _, _, data in found:
        assert len(data) == 1 or sum(map(len, data)) <= 1_000


@pytest.mark.parametrize("kind", WRITERS)
def test_the_record_bound_still_holds_for_small_records(kind):
    records = [(n % 5, n) for n in range(1_000)]
    found = batches(
        write(kind, BatchBounds(records=16, bytes=1 << 20, record_bytes=1 << 30), records)
    )

    for sent in by_target(found).values():
        assert all(len(batch) == 16 for batch in sent[:-1])
        assert 1 <= len(sent[-1]) <= 16
    assert sum(len(data) for _, _, data in found) == len(records)


@pytest.mark.parametrize("kind", WRITERS)
def test_records_keep_their_order_within_a_target(kind):
    records = sized_records(400, 10, 3_000, seed=8)
    writer = make_writer(kind, BatchBounds(records=7, bytes=5_000, record_bytes=1 << 30))
    shuffle_targets = random.Random("7/1/0")  # edge 7, subtask 1, epoch 0
    expected: dict[int, list[Any]] = {}
    for record in records:
        if kind == "key_group":
            target = writer.target_of[writer._key_group(record[0])]
        elif kind == "rebalance":
            target = writer.next_target
        elif kind == "rescale":
            target = writer.receivers[writer.position]
        elif kind == "shuffle":
            target = shuffle_targets.randrange(TARGETS)
        else:
            target = 1  # the sending subtask's index
        expected.setdefault(target, []).append(record)
        writer.process(record)
    writer.end_channels(ChannelEnd(LONG_MIN, False))

    received: dict[int, list[Any]] = {}
    for partition, _, data in sorted(batches(writer.ctx.outbox), key=lambda b: b[1]):
        received.setdefault(partition, []).extend(loads(d) for d in data)
    assert received == expected


@pytest.mark.parametrize("kind", WRITERS)
def test_a_retried_subtask_cuts_the_same_batches(kind):
    """The receiver replays its input by (edge, sender, sequence number): a retry must send
    the same records under the same numbers, whatever their sizes."""
    records = sized_records(500, 1, 6_000, seed=11)
    bounds = BatchBounds(records=9, bytes=8_000, record_bytes=1 << 30)

    first_attempt = write(kind, bounds, records, attempt="a1")
    retry = write(kind, bounds, records, attempt="a2")

    assert batches(retry) == batches(first_attempt)
    sequences = [sequence for _, sequence, _ in batches(retry)]
    assert sequences == list(range(len(sequences)))


@pytest.mark.parametrize(
    ("senders", "receivers", "blocks"),
    [
        (2, 4, [[0, 1], [2, 3]]),  # Flink's documented example
        (4, 2, [[0], [0], [1], [1]]),
        (3, 3, [[0], [1], [2]]),
        (2, 5, [[0, 1, 2], [3, 4]]),
        (5, 2, [[0], [0], [1], [1], [1]]),
    ],
)
def test_rescale_sends_each_subtask_to_its_block_of_receivers(senders, receivers, blocks):
    assert [list(rescale_receivers(i, senders, receivers)) for i in range(senders)] == blocks


def test_rescale_goes_round_robin_over_the_block_and_ends_every_channel():
    ctx = OperatorContext("upstream", "upstream-uid", 1, 2, None, None, [], RecordTimestamp())
    writer = RescaleWriter(
        ctx, 7, 2, 4, BatchBounds(records=100, bytes=1 << 20, record_bytes=1 << 30), False
    )
    items = feed(writer, list(range(10)))
    received = {p: [loads(d) for d in data] for p, _, data in batches(items)}
    assert received == {2: [0, 2, 4, 6, 8], 3: [1, 3, 5, 7, 9]}
    markers = {item.target for item in items if item.kind is ItemKind.CHANNEL_END}
    assert markers == {0, 1, 2, 3}  # every receiver expects a marker from every sender


def test_shuffle_spreads_records_and_draws_anew_each_epoch():
    ctx = OperatorContext("upstream", "upstream-uid", 1, 2, None, None, [], RecordTimestamp())
    writer = ShuffleWriter(
        ctx, 7, TARGETS, BatchBounds(records=10_000, bytes=1 << 30, record_bytes=1 << 30), False
    )
    placements = []
    for epoch in (1, 2):
        ctx.epoch = epoch
        found = batches(feed(writer, list(range(3_000))))
        placements.append({loads(d): p for p, _, data in found for d in data})
        counts = [len(data) for _, _, data in found]
        assert len(counts) == TARGETS and min(counts) > 900  # about 1000 each
    assert placements[0] != placements[1]


class Modulo:
    """A Partitioner by its methods; counts its open() and close() calls."""

    def __init__(self):
        self.calls = []

    def open(self, runtime_context):
        self.calls.append(("open", runtime_context))

    def close(self):
        self.calls.append(("close",))

    def partition(self, key, num_partitions):
        return key % num_partitions


def custom_writer(partitioner: Any, key_selector: Any) -> CustomPartitionWriter:
    ctx = OperatorContext("upstream", "upstream-uid", 1, 2, "rc", None, [], RecordTimestamp())
    bounds = BatchBounds(records=100, bytes=1 << 20, record_bytes=1 << 30)
    return CustomPartitionWriter(ctx, 7, TARGETS, bounds, False, partitioner, key_selector)


def test_partition_custom_sends_each_record_where_its_partitioner_says():
    partitioner = Modulo()
    writer = custom_writer(partitioner, first)
    writer.open()
    found = batches(feed(writer, [(n, str(n)) for n in range(10)]))
    writer.close()
    received = {p: [loads(d)[0] for d in data] for p, _, data in found}
    assert received == {0: [0, 3, 6, 9], 1: [1, 4, 7], 2: [2, 5, 8]}
    assert partitioner.calls == [("open", "rc"), ("close",)]
    # plain functions too, for both
    found = batches(feed(custom_writer(lambda key, n: n - 1, lambda r: r), [1, 2]))
    assert [(p, [loads(d) for d in data]) for p, _, data in found] == [(2, [1, 2])]


@pytest.mark.parametrize("bad", [3, -1, "0", None])
def test_a_partition_out_of_range_fails_naming_the_operator_and_record(bad):
    writer = custom_writer(lambda key, n: bad, first)
    with pytest.raises(Exception, match=r"operator 'upstream'.*partition_custom.*\(5, 'x'\)"):
        writer.process((5, "x"))


def bounds_of(config: dict[str, str]) -> BatchBounds:
    return JobSettings.resolve(config, "job", "local[2]").batch_bounds


def test_bounds_come_from_the_configuration():
    assert bounds_of({}) == BatchBounds(records=8192, bytes=1 << 20, record_bytes=256 << 20)
    configured = bounds_of(
        {
            "lockgate.shuffle.batch.max-records": "100",
            "lockgate.shuffle.batch.max-size": "64kb",
            "lockgate.record.max-size": "1536mb",
        }
    )
    assert configured == BatchBounds(records=100, bytes=64 << 10, record_bytes=1536 << 20)


def test_a_record_maximum_beyond_pysparks_frames_fails_before_the_job():
    with pytest.raises(ConfigurationError, match=r"lockgate\.record\.max-size.*at most 1536mb"):
        bounds_of({"lockgate.record.max-size": "2gb"})


def test_an_epoch_task_sends_batches_within_its_bounds(cluster):
    """The bounds an EpochTask carries reach the writers of the subtask it builds: the source
    task's output to the keyed task, and the counts the keyed task makes of it."""
    records = [(n % 4, "z" * 3_000) for n in range(40)]
    c: Cluster = cluster(records, backend=HASHMAP, batch_bounds=BatchBounds(1_000, 10_000, 1 << 30))

    run = c.begin_epoch(max_records=40)

    found = batches(run.source_out)
    assert [len(data) for _, _, data in found] == [3] * 13 + [1]
    assert all(sum(map(len, data)) <= 10_000 for _, _, data in found)
    run.run("w1")
    run.accept()
    assert c.accepted_counts() == {0: 10, 1: 10, 2: 10, 3: 10}


@pytest.mark.parametrize("kind", WRITERS)
def test_a_timestamped_edge_carries_each_records_timestamp_beside_it(kind):
    records = [(n % 5, n) for n in range(100)]
    writer = make_writer(
        kind, BatchBounds(records=16, bytes=1 << 20, record_bytes=1 << 30), timestamped=True
    )
    for n, record in enumerate(records[:50]):  # one by one: the record's current timestamp
        writer.record.value = 1000 + n
        writer.process(record)
    writer.record.value = LONG_MIN
    writer.process_batch(records[50:], [2000 + n for n in range(50)])  # as from a source
    assert writer.record.value == LONG_MIN
    writer.end_channels(ChannelEnd(1500, False))
    stamped = {}
    markers = []
    for item in writer.ctx.outbox:
        if item.kind is ItemKind.CHANNEL_END:
            markers.append(ChannelEnd.decode(item.payload, "marker"))
            continue
        batch = loads(item.payload)
        data, timestamps = batch.records, batch.timestamps
        assert len(data) == len(timestamps)
        stamped.update({loads(d): t for d, t in zip(data, timestamps, strict=True)})
    assert stamped == {
        record: (1000 + n if n < 50 else 2000 + n - 50) for n, record in enumerate(records)
    }
    targets = 1 if kind == "forward" else writer.targets
    assert markers == [ChannelEnd(1500, False)] * targets


def test_a_broadcast_writer_sends_every_batch_and_marker_to_every_target():
    writer = make_writer("broadcast", BatchBounds(records=4, bytes=1 << 20, record_bytes=1 << 30))
    items = feed(writer, list(range(10)))
    for target in range(TARGETS):
        mine = [item for item in items if item.target == target]
        # three batches, then the marker
        assert [(item.kind, item.sequence) for item in mine] == [
            (ItemKind.BATCH, 0),
            (ItemKind.BATCH, 1),
            (ItemKind.BATCH, 2),
            (ItemKind.CHANNEL_END, 3),
        ]
        received = [r for item in mine[:-1] for r in map(loads, loads(item.payload).records)]
        assert received == list(range(10))


@pytest.mark.parametrize("kind", WRITERS)
@pytest.mark.parametrize("one_by_one", [True, False])
def test_a_record_above_the_maximum_fails_naming_operator_subtask_and_size(kind, one_by_one):
    bounds = BatchBounds(records=100, bytes=1 << 20, record_bytes=4_000)
    writer = make_writer(kind, bounds, max_record_bytes=bounds.record_bytes)
    writer.process((1, "small"))
    big = (2, "x" * 5_000)
    with pytest.raises(UserFunctionError) as failure:
        if one_by_one:
            writer.process(big)
        else:
            writer.process_batch([(3, "y"), big])
    message = str(failure.value)
    assert "operator 'upstream' (uid 'upstream-uid', subtask 1/2, epoch 0)" in message
    assert re.search(r"pickles to 50\d\d bytes, more than lockgate.record.max-size \(4000", message)


def test_the_collect_sink_refuses_a_record_above_the_maximum():
    ctx = OperatorContext("collect", "collect-uid", 0, 1, None, None, [], RecordTimestamp())
    ctx.max_record_bytes = 100
    sink = CollectSinkOperator(ctx)
    sink.process("fits")
    with pytest.raises(UserFunctionError, match=r"uid 'collect-uid'.*pickles to 2\d\d bytes"):
        sink.process("z" * 200)


def test_the_collect_sink_keeps_each_batch_under_the_maximum():
    ctx = OperatorContext("collect", "collect-uid", 0, 1, None, None, [], RecordTimestamp())
    ctx.max_record_bytes = 1_000
    sink = CollectSinkOperator(ctx)
    for n in range(10):
        sink.process("r" * 300 + str(n))
    sink.end_epoch()
    batches = [loads(output.payload) for output in ctx.outbox]
    assert all(sum(len(record) for record in batch) <= 1_000 for batch in batches)
    assert [loads(r) for batch in batches for r in batch] == ["r" * 300 + str(n) for n in range(10)]
