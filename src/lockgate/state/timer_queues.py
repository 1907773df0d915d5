"""Timers as keyed state: a priority queue per operator and time domain, stored by key group.

A timer is (timestamp, key, namespace); a queue holds each at most once (Flink's
deduplication per key, namespace and time). Timers live in the keyed backend like any
keyed state, so they are snapshotted, restored and moved with their key groups:

- heap backend: a state table (key group -> {(timestamp, key, namespace): None}) plus the
  order in memory: buckets per (timestamp, key group) and a heap of their ids;
- RocksDB backend: one entry per timer, keyed ``key group | state id | timestamp | key |
  namespace`` (the key encoded as keyed state encodes it; the namespace pickled, so that a
  window comes back as the window it was), so each key group's timers are sorted by time on
  disk and only those due are read; registrations and deletions are cached until the queue
  is read, so a registration per record (a window's trigger) costs a dict lookup.

``poll_due(limit)`` yields the timers with timestamp <= ``limit`` in timestamp order (ties
by key group, then in a fixed order within it: insertion on the heap, encoded key on
RocksDB), removing each before it is yielded; timers added while it runs are seen if they
are due, so timers that a firing registers fire in the same pass, as in Flink.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Iterator
from pickle import HIGHEST_PROTOCOL, dumps, loads
from typing import Any, Protocol

import rocksdict

from lockgate.state.key_codec import decode_key_prefix, encode_key
from lockgate.state.key_groups import KeyGroupRange

TIMERS_KIND = "timers"
_TIMER_PREFIX = "_timers/"


def timer_state_name(service: str, domain: str) -> str:
    """The name of a timer service's queue of one time domain ("event", "processing")."""
    return f"{_TIMER_PREFIX}{service}/{domain}"


def timer_origin(name: str) -> tuple[str, str | None]:
    """(timer service, time domain) of a timer queue's name (no domain: another name)."""
    if name.startswith(_TIMER_PREFIX) and "/" in name[len(_TIMER_PREFIX) :]:
        service, _, domain = name[len(_TIMER_PREFIX) :].rpartition("/")
        return service, domain
    return name, None


# A due timer: (timestamp, key group, key, namespace)
Timer = tuple[int, int, Any, Any]


class TimerQueue(Protocol):
    def add(self, key_group: int, key: Any, namespace: Any, timestamp: int) -> None: ...

    def remove(self, key_group: int, key: Any, namespace: Any, timestamp: int) -> None: ...

    def poll_due(self, limit: int) -> Iterator[Timer]: ...

    def earliest(self) -> int | None:
        """The timestamp of the earliest timer; None when there is none."""
        ...


_MISSING = object()


class HeapTimerQueue:
    """Timers in a heap backend's table ``groups`` (key group -> entries); ``dirty`` is the
    backend's set of key groups changed since its last snapshot.

    The order lives in buckets, one per (timestamp, key group), each a list of (key,
    namespace) in insertion order, and a heap of the buckets' ids (one int: timestamp, then
    key group): many timers share a timestamp (the windows that end together), and they
    cost a list append each instead of a heap push. Removed timers stay in their bucket
    until it is read.
    """

    def __init__(self, groups: dict[int, dict[Any, Any]], dirty: set[int]):
        self.groups = groups
        self.dirty = dirty
        self.buckets: dict[int, list[tuple[Any, Any]]] = {}
        self.heap: list[int] = []
        self.queued = 0  # entries in the buckets, removed timers included
        self.stale = 0  # entries whose timer was removed
        self.polling = False  # poll_due reads a bucket by position: leave buckets as they are
        restored = ((kg, timer) for kg in sorted(groups) for timer in groups[kg])  # fixed order
        for key_group, (timestamp, key, namespace) in restored:
            self.buckets.setdefault(_bucket(timestamp, key_group), []).append((key, namespace))
        self._rebuild_heap()

    def _rebuild_heap(self) -> None:
        self.heap = list(self.buckets)
        heapq.heapify(self.heap)
        self.queued = sum(len(entries) for entries in self.buckets.values())

    def add(self, key_group: int, key: Any, namespace: Any, timestamp: int) -> None:
        entries = self.groups[key_group]
        timer = (timestamp, key, namespace)
        if timer in entries:
            return
        entries[timer] = None
        self.dirty.add(key_group)
        bucket = (timestamp << _GROUP_BITS) | key_group
        queued = self.buckets.get(bucket)
        if queued is None:
            self.buckets[bucket] = [(key, namespace)]
            heapq.heappush(self.heap, bucket)
        else:
            queued.append((key, namespace))
        self.queued += 1

    def remove(self, key_group: int, key: Any, namespace: Any, timestamp: int) -> None:
        if self.groups[key_group].pop((timestamp, key, namespace), _MISSING) is _MISSING:
            return
        self.dirty.add(key_group)
        self.stale += 1
        if self.stale > 1024 and self.stale > self.queued // 2 and not self.polling:
            self._compact()

    def _compact(self) -> None:
        groups = self.groups
        for bucket, entries in list(self.buckets.items()):
            timestamp, key_group = _unpack(bucket)
            live = groups[key_group]
            # once each: a timer removed and added again is in its bucket twice
            entries[:] = dict.fromkeys(e for e in entries if (timestamp, e[0], e[1]) in live)
            if not entries:
                del self.buckets[bucket]
        self._rebuild_heap()
        self.stale = 0

    def poll_due(self, limit: int) -> Iterator[Timer]:
        heap, buckets, groups, dirty = self.heap, self.buckets, self.groups, self.dirty
        bound = (limit + 1) << _GROUP_BITS  # bucket ids below it are due
        self.polling = True
        try:
            while heap and heap[0] < bound:
                bucket = heap[0]
                timestamp = bucket >> _GROUP_BITS
                key_group = bucket & _GROUP_MASK
                entries, live = buckets[bucket], groups[key_group]
                position = 0
                # A firing may add to this bucket (seen: the loop reads the list's length
                # each time) or to an earlier one (then the rest of this one waits for its
                # turn; an emptied bucket not at the top is dropped when it gets there).
                try:
                    while position < len(entries):
                        key, namespace = entries[position]
                        position += 1
                        if live.pop((timestamp, key, namespace), _MISSING) is _MISSING:
                            self.stale -= 1
                            continue
                        dirty.add(key_group)
                        yield timestamp, key_group, key, namespace
                        if heap[0] != bucket:
                            break
                finally:
                    self.queued -= position
                    if position == len(entries):
                        if heap[0] == bucket:
                            heapq.heappop(heap)
                            del buckets[bucket]
                        else:
                            entries.clear()
                    else:
                        del entries[:position]
        finally:
            self.polling = False

    def earliest(self) -> int | None:
        """Drops the removed timers ahead of the earliest live one (called between passes)."""
        heap, buckets = self.heap, self.buckets
        while heap:
            bucket = heap[0]
            timestamp, key_group = _unpack(bucket)
            entries, live = buckets[bucket], self.groups[key_group]
            removed = 0
            while removed < len(entries) and (timestamp, *entries[removed]) not in live:
                removed += 1
            del entries[:removed]
            self.queued -= removed
            self.stale -= removed
            if entries:
                return timestamp
            heapq.heappop(heap)
            del buckets[bucket]
        return None


# A bucket's id: timestamp * 2**16 + key group, for negative timestamps too (>> floors)
_GROUP_BITS = 16
_GROUP_MASK = 0xFFFF


def _bucket(timestamp: int, key_group: int) -> int:
    return (timestamp << _GROUP_BITS) | key_group


def _unpack(bucket: int) -> tuple[int, int]:
    """(timestamp, key group) of a bucket's id."""
    return bucket >> _GROUP_BITS, bucket & _GROUP_MASK


_TIMESTAMP = struct.Struct(">Q")  # offset binary: byte order is timestamp order
_OFFSET = 1 << 63
_FIRED_BATCH = 10_000  # fired timers deleted from RocksDB per write
_NO_TIMER = 1 << 63  # later than any timestamp


def timer_entry(prefix: bytes, timestamp: int, key_bytes: bytes, namespace: Any) -> bytes:
    """A timer's RocksDB key below ``prefix`` (key group, state id); ``key_bytes`` is the
    key's ``encode_key``."""
    return (
        prefix
        + _TIMESTAMP.pack(timestamp + _OFFSET)
        + key_bytes
        + dumps(namespace, HIGHEST_PROTOCOL)
    )


def read_timer_entry(entry: bytes, start: int) -> tuple[int, Any, Any]:
    """(timestamp, key, namespace) of a timer entry whose prefix ends at ``start``."""
    timestamp = _TIMESTAMP.unpack_from(entry, start)[0] - _OFFSET
    key, end = decode_key_prefix(entry, start + _TIMESTAMP.size)
    return timestamp, key, loads(entry[end:])


class RocksDBTimerQueue:
    """Timers in a RocksDB instance under state id ``sid``; ``prefix`` is the backend's
    (key group, state id) layout.

    ``pending`` caches changes (entry key -> True for added, False for removed) until the
    queue is read or the backend writes back (``write_back``). While ``poll_due`` runs, the
    iterators see the instance as the pass began; fired timers are deleted from it in
    batches as the pass goes, and ``during`` holds the pass's own changes (removed
    timers and those fired after being added again: False; added ones: True, and due ones
    join the pass), written to the instance when the pass ends.
    """

    def __init__(
        self,
        db: rocksdict.Rdict,
        prefix: struct.Struct,
        sid: int,
        key_groups: KeyGroupRange,
        cache_entries: int,
        flush: Any,
    ):
        self.db = db
        self.prefix = prefix
        self.sid = sid
        self.key_groups = key_groups
        self.cache_entries = cache_entries
        self.flush = flush  # the backend's write_back: this queue and its states alike
        self.pending: dict[bytes, bool] = {}
        self.known: dict[tuple[int, Any, Any], bool] = {}  # timer -> pending state
        self.draining: list[Any] | None = None  # the heads of a running poll_due
        self.during: dict[bytes, bool] = {}
        self.fired: set[bytes] = set()  # fired in the running pass, not yet deleted
        self.sequence = 0  # orders equal heads (a timer added again while polled)
        # No timer is earlier (_NO_TIMER: there is none; None: not known yet). It spares a
        # poll with nothing due a seek per key group: up to 32768 of them every epoch.
        self.floor: int | None = None
        # the floor is the earliest timer, not only a bound: adds keep it so, removes do not
        self.exact = False
        self.removed_in_pass = False

    def _entry(self, key_group: int, key: Any, namespace: Any, timestamp: int) -> bytes:
        return timer_entry(
            self.prefix.pack(key_group, self.sid), timestamp, encode_key(key), namespace
        )

    def add(self, key_group: int, key: Any, namespace: Any, timestamp: int) -> None:
        timer = (timestamp, key, namespace)
        if self.known.get(timer) is True:
            return
        self._change(key_group, timer, True)

    def remove(self, key_group: int, key: Any, namespace: Any, timestamp: int) -> None:
        timer = (timestamp, key, namespace)
        if self.known.get(timer) is False:
            return
        self._change(key_group, timer, False)

    def _change(self, key_group: int, timer: tuple[int, Any, Any], added: bool) -> None:
        timestamp, key, namespace = timer
        entry = self._entry(key_group, key, namespace, timestamp)
        if not added:
            self.exact = False
            if self.draining is not None:
                self.removed_in_pass = True
        elif self.floor is not None and timestamp < self.floor:
            self.floor = timestamp
        if self.draining is not None:
            self._change_now(entry, key_group, timestamp, added)
            return
        self.pending[entry] = added
        self.known[timer] = added
        if len(self.pending) >= self.cache_entries:
            self.flush()

    def _change_now(self, entry: bytes, key_group: int, timestamp: int, added: bool) -> None:
        status = self.during.get(entry)
        if not added:
            self.during[entry] = False
            return
        if status is True or (
            status is None and entry not in self.fired and self.db.get(entry) is not None
        ):
            return  # there already, not fired yet
        self.during[entry] = True
        heads = self.draining
        assert heads is not None
        heapq.heappush(heads, (timestamp, key_group, entry, self._next(), None))

    def _delete_fired(self) -> None:
        batch = rocksdict.WriteBatch(raw_mode=True)
        for entry in self.fired:
            batch.delete(entry)
        self.fired.clear()
        if not batch.is_empty():
            self.db.write(batch)

    def _write_during(self) -> None:
        """Apply ``during`` to the instance. Not before the pass ends: until then, a timer
        fired or removed must stay marked so, for an iterator may still come up with it."""
        batch = rocksdict.WriteBatch(raw_mode=True)
        for entry, added in self.during.items():
            if added:
                batch.put(entry, b"")
            else:
                batch.delete(entry)
        self.during.clear()
        if not batch.is_empty():
            self.db.write(batch)

    def _next(self) -> int:
        self.sequence += 1
        return self.sequence

    def write_back(self, batch: rocksdict.WriteBatch) -> None:
        for entry, added in self.pending.items():
            if added:
                batch.put(entry, b"")
            else:
                batch.delete(entry)
        self.pending.clear()
        self.known.clear()

    def drop_cache(self) -> None:
        """Pending changes were written back; the floor is found again, in case."""
        self.floor = None
        self.exact = False

    def _head(self, key_group: int, iterator: Any) -> tuple[int, bytes] | None:
        """The next timer of ``key_group`` at ``iterator``: (timestamp, entry)."""
        if not iterator.valid():
            return None
        entry = iterator.key()
        if entry[: self.prefix.size] != self.prefix.pack(key_group, self.sid):
            return None
        return _TIMESTAMP.unpack_from(entry, self.prefix.size)[0] - _OFFSET, entry

    def poll_due(self, limit: int) -> Iterator[Timer]:
        if self.floor is not None and self.floor > limit:
            return
        self.flush()
        heads: list[Any] = []
        later = _NO_TIMER  # the earliest timer not due
        self.removed_in_pass = False
        for key_group in self.key_groups:
            iterator = self.db.iter()
            iterator.seek(self.prefix.pack(key_group, self.sid))
            head = self._head(key_group, iterator)
            if head is None:
                continue
            if head[0] <= limit:
                heapq.heappush(heads, (head[0], key_group, head[1], self._next(), iterator))
            elif head[0] < later:
                later = head[0]
        self.draining = heads
        during, fired = self.during, self.fired
        try:
            while heads and heads[0][0] <= limit:
                timestamp, key_group, entry, _, iterator = heapq.heappop(heads)
                if iterator is not None:
                    iterator.next()
                    head = self._head(key_group, iterator)
                    if head is not None and head[0] <= limit:
                        heads_entry = (head[0], key_group, head[1], self._next(), iterator)
                        heapq.heappush(heads, heads_entry)
                    elif head is not None and head[0] < later:
                        later = head[0]
                status = during.get(entry)
                if status is False:
                    continue  # removed, or fired already, since the pass began
                if status is True:
                    # Added in this pass: it may come again, from the iterator that had it
                    # before it was removed and added back.
                    during[entry] = False
                else:
                    # Only its key group's iterator had it, and has passed it: it can go now,
                    # so that a pass over millions of due timers holds none of them.
                    fired.add(entry)
                    if len(fired) >= _FIRED_BATCH:
                        self._delete_fired()
                _, key, namespace = read_timer_entry(entry, self.prefix.size)
                yield timestamp, key_group, key, namespace
        finally:
            self.draining = None
            self._delete_fired()
            self._write_during()
            # what is left: the heads not yet polled (added in the pass, or a pass cut
            # short) and the timers not due
            self.floor = min(later, heads[0][0]) if heads else later
            # a timer removed in the pass may still be a head, or be ``later``
            self.exact = not self.removed_in_pass

    def earliest(self) -> int | None:
        if self.exact:
            return None if self.floor == _NO_TIMER else self.floor
        self.flush()
        earliest = _NO_TIMER
        for key_group in self.key_groups:
            iterator = self.db.iter()
            iterator.seek(self.prefix.pack(key_group, self.sid))
            head = self._head(key_group, iterator)
            if head is not None and head[0] < earliest:
                earliest = head[0]
        self.floor = earliest
        self.exact = True
        return None if earliest == _NO_TIMER else earliest
