"""Timer queues on every backend kind: order, deduplication, deletion, firing while polled,
and timers surviving a snapshot and restore by key group."""

from __future__ import annotations

from typing import NamedTuple

import pytest
from keyed_backends import G1, G2, MAX_P, RANGE

from lockgate.state.heap import HeapKeyedStateBackend
from lockgate.state.timer_queues import _FIRED_BATCH


def _drain(queue, limit):
    return list(queue.poll_due(limit))


def test_due_timers_come_in_timestamp_order_and_once(new_backend):
    backend = new_backend()
    queue = backend.timer_queue("t")
    for ts, group, key in [(30, G1, "a"), (10, G2, "b"), (20, G1, "c"), (10, G2, "b")]:
        queue.add(group, key, None, ts)
    assert queue.earliest() == 10
    assert _drain(queue, 20) == [(10, G2, "b", None), (20, G1, "c", None)]
    assert _drain(queue, 20) == []
    assert queue.earliest() == 30
    assert _drain(queue, 100) == [(30, G1, "a", None)]
    assert queue.earliest() is None


def test_a_timer_is_one_per_key_namespace_and_time(new_backend):
    queue = new_backend().timer_queue("t")
    queue.add(G1, "k", (0, 5), 4)
    queue.add(G1, "k", (0, 5), 4)
    queue.add(G1, "k", (5, 10), 4)
    queue.add(G1, "j", (0, 5), 4)
    fired = _drain(queue, 4)
    assert sorted(fired, key=repr) == sorted(
        [(4, G1, "k", (0, 5)), (4, G1, "k", (5, 10)), (4, G1, "j", (0, 5))], key=repr
    )


def test_removed_timers_do_not_fire_and_can_come_back(new_backend):
    queue = new_backend().timer_queue("t")
    queue.add(G1, "a", None, 5)
    queue.add(G1, "b", None, 6)
    queue.remove(G1, "a", None, 5)
    queue.remove(G1, "zzz", None, 5)  # never registered: nothing happens
    assert _drain(queue, 10) == [(6, G1, "b", None)]
    queue.add(G1, "a", None, 5)
    queue.remove(G1, "a", None, 5)
    queue.add(G1, "a", None, 5)
    assert _drain(queue, 10) == [(5, G1, "a", None)]


def test_timers_added_while_polling_fire_in_the_same_pass_when_due(new_backend):
    queue = new_backend().timer_queue("t")
    queue.add(G1, "a", None, 10)
    queue.add(G2, "b", None, 30)
    fired = []
    for timer in queue.poll_due(40):
        fired.append(timer)
        if timer[2] == "a":
            queue.add(G2, "c", None, 20)  # due, before b
            queue.add(G1, "d", None, 50)  # not due
            queue.add(G2, "b", None, 30)  # already there: still once
            queue.remove(G1, "a", None, 10)  # firing already removed it
    assert fired == [(10, G1, "a", None), (20, G2, "c", None), (30, G2, "b", None)]
    assert queue.earliest() == 50


def test_a_timer_removed_while_polling_does_not_fire(new_backend):
    queue = new_backend().timer_queue("t")
    for key, ts in [("a", 1), ("b", 2), ("c", 3)]:
        queue.add(G1, key, None, ts)
    fired = []
    for timer in queue.poll_due(10):
        fired.append(timer[2])
        if timer[2] == "a":
            queue.remove(G1, "b", None, 2)
    assert fired == ["a", "c"]


def test_timers_are_keyed_state_restored_by_key_group(new_backend):
    backend = new_backend()
    queue = backend.timer_queue("t")
    queue.add(G1, "a", (0, 10), 9)
    queue.add(G2, "b", None, 5)
    queue.add(G2, "b", None, 7)
    assert backend.kinds["t"] == "timers"
    restored = new_backend.reopen(backend)
    again = restored.timer_queue("t")
    assert again.earliest() == 5
    assert _drain(again, 100) == [(5, G2, "b", None), (7, G2, "b", None), (9, G1, "a", (0, 10))]


def test_many_timers_drain_in_order(new_backend):
    queue = new_backend().timer_queue("t")
    stamps = [(i * 7919) % 1000 - 500 for i in range(1000)] + [-(2**63), 2**63 - 1]
    for i, ts in enumerate(stamps):
        queue.add(G1 + i % 3, i, None, ts)
    fired = [ts for ts, *_ in queue.poll_due(2**63 - 2)]
    assert fired == sorted(stamps)[:-1]
    assert queue.earliest() == 2**63 - 1


class Window(NamedTuple):
    start: int
    end: int


def test_a_namespace_comes_back_as_the_object_it_was(new_backend):
    backend = new_backend()
    queue = backend.timer_queue("t")
    queue.add(G1, ("composite", 1), Window(0, 10), 9)
    restored = new_backend.reopen(backend)
    ((_, _, key, namespace),) = list(restored.timer_queue("t").poll_due(9))
    assert key == ("composite", 1)
    assert type(namespace) is Window and namespace == Window(0, 10)


def test_a_timer_removed_and_added_again_while_polling_fires_once(new_backend):
    queue = new_backend().timer_queue("t")
    queue.add(G1, "a", None, 1)
    queue.add(G2, "e", None, 5)
    fired = []
    for timer in queue.poll_due(10):
        fired.append(timer[2])
        if timer[2] == "a":
            queue.remove(G2, "e", None, 5)
            queue.add(G2, "e", None, 5)
            queue.add(G2, "e", None, 5)
        if timer[2] == "e" and fired.count("e") == 1:
            queue.add(G2, "e", None, 5)  # a fired timer registered again fires again
    assert fired == ["a", "e", "e"]
    assert queue.earliest() is None


def test_a_firing_that_registers_an_earlier_timer_fires_it_next(new_backend):
    # Flink polls the queue's head after each firing: an earlier timer registered by a
    # firing fires before the rest of the timers that share the firing one's time.
    queue = new_backend().timer_queue("t")
    for key in "abc":
        queue.add(G1, key, None, 10)
    queue.add(G2, "z", None, 20)
    fired = []
    for timer in queue.poll_due(30):
        fired.append(timer[2])
        if timer[2] == "a":
            queue.add(G1, "x", None, 5)
        if timer[2] == "c":  # the last of its time
            queue.add(G2, "y", None, 6)
    assert fired == ["a", "x", "b", "c", "y", "z"]
    assert queue.earliest() is None


def test_removing_most_timers_while_polling(new_backend):
    queue = new_backend().timer_queue("t")
    for i in range(3000):
        queue.add(G1 + i % 2, i, None, 100 + i % 3)
    fired = []
    for _, _, key, _ in queue.poll_due(101):
        fired.append(key)
        if key == 0:  # at 100, with all others whose i % 3 == 0
            for i in range(1, 3000):
                if i % 3 != 0:
                    queue.remove(G1 + i % 2, i, None, 100 + i % 3)
    assert sorted(fired) == list(range(0, 3000, 3))
    assert queue.earliest() is None
    queue.add(G1, "late", None, 50)
    assert list(queue.poll_due(101)) == [(50, G1, "late", None)]


def test_a_pass_cut_short_by_an_error_leaves_the_rest_due(new_backend):
    queue = new_backend().timer_queue("t")
    for key in "abcd":
        queue.add(G1, key, None, 10)
    fired = []
    try:
        for timer in queue.poll_due(10):
            fired.append(timer[2])
            if timer[2] == "b":
                raise RuntimeError("on_timer failed")
    except RuntimeError:
        pass
    assert queue.earliest() == 10
    assert [timer[2] for timer in queue.poll_due(10)] == ["c", "d"]
    assert fired == ["a", "b"]


def test_a_pass_over_many_due_timers_holds_few_of_them(new_backend):
    """RocksDB is for state larger than memory: a pass at the end of event time must not
    keep every fired timer in memory until it ends (it deletes them as it goes)."""
    backend = new_backend()
    queue = backend.timer_queue("t")
    for i in range(30_000):
        queue.add(G1 + i % 2, i, None, i)
    held = 0
    fired = []
    again = set()
    for timestamp, key_group, key, _ in queue.poll_due(40_000):
        fired.append(timestamp)
        if key % 1000 == 0 and key not in again:  # some firings register timers again
            again.add(key)
            queue.add(key_group, key, None, timestamp)  # due: fires again in this pass
            queue.add(key_group, key, None, timestamp + 50_000)  # not due
        if new_backend.is_rocksdb:  # the heap holds every timer anyway
            held = max(held, len(queue.during) + len(queue.fired))
    assert sorted(fired) == sorted(list(range(30_000)) + list(range(0, 30_000, 1000)))
    # the pass's own registrations, and fired timers until a batch of them is deleted
    assert held <= 60 + _FIRED_BATCH
    assert queue.earliest() == 50_000
    assert [ts for ts, *_ in queue.poll_due(2**63 - 1)] == list(range(50_000, 80_000, 1000))


def test_heap_timers_removed_and_added_again_keep_compaction_going():
    """A removed timer added again is in its bucket twice; compaction keeps it once, so the
    count of stale entries never goes below zero (where compaction would stop for good)."""
    queue = HeapKeyedStateBackend(RANGE, MAX_P).timer_queue("t")
    for key in range(3000):
        queue.add(G1, key, None, 10)
    for _ in range(3):
        for key in range(3000):
            queue.remove(G1, key, None, 10)
            queue.add(G1, key, None, 10)
    assert sorted(k for _, _, k, _ in queue.poll_due(10)) == list(range(3000))
    assert queue.stale == 0 and queue.queued == 0
    for key in range(3000):
        queue.add(G1, key, None, 20)
    for key in range(2000):
        queue.remove(G1, key, None, 20)
    assert queue.queued < 3000  # compacted


def counting_seeks(queue) -> list[int]:
    """Counts the iterators a RocksDB queue opens: one per key group it seeks."""
    seeks: list[int] = []
    db = queue.db

    class Counting:
        def __getattr__(self, name):
            return getattr(db, name)

        def iter(self):
            seeks.append(1)
            return db.iter()

    queue.db = Counting()
    return seeks


def test_a_rocksdb_poll_with_nothing_due_seeks_nothing(new_backend):
    if not new_backend.is_rocksdb:
        pytest.skip("the heap's queue has its earliest timer at hand")
    queue = new_backend().timer_queue("t")
    seeks = counting_seeks(queue)
    queue.add(G1, "a", None, 50)
    queue.add(G2, "b", None, 70)
    assert _drain(queue, 10) == []
    first = len(seeks)
    assert first == len(RANGE)  # one pass to find the floor
    for limit in (20, 30, 49):
        assert _drain(queue, limit) == []
    assert len(seeks) == first  # then none while nothing is due
    queue.add(G2, "c", None, 15)  # an earlier timer lowers the floor
    assert _drain(queue, 20) == [(15, G2, "c", None)]
    assert _drain(queue, 60) == [(50, G1, "a", None)]
    assert queue.earliest() == 70
    assert _drain(queue, 100) == [(70, G2, "b", None)]
    seeks.clear()
    assert queue.earliest() is None and _drain(queue, 2**63 - 1) == []
    assert seeks == []  # known to be empty


def test_rocksdb_earliest_is_known_without_seeks_until_a_timer_is_removed(new_backend):
    if not new_backend.is_rocksdb:
        pytest.skip("the heap's queue has its earliest timer at hand")
    queue = new_backend().timer_queue("t")
    seeks = counting_seeks(queue)
    queue.add(G1, "a", None, 50)
    assert queue.earliest() == 50 and len(seeks) == len(RANGE)
    seeks.clear()
    queue.add(G2, "b", None, 40)  # an add keeps the earliest known
    assert queue.earliest() == 40 and _drain(queue, 10) == [] and seeks == []
    assert _drain(queue, 45) == [(40, G2, "b", None)]
    seeks.clear()
    assert queue.earliest() == 50 and seeks == []  # a pass with no removal finds it
    queue.remove(G1, "a", None, 50)
    assert queue.earliest() is None and len(seeks) == len(RANGE)  # a removal: seek again
