"""State TTL: PyFlink's StateTtlConfig, the TTL decorators of every state kind on the heap
and RocksDB backends (with an injected clock, so no test sleeps), and the cleanup strategies.

Backend-level tests take the ``backends`` fixture and run once per backend: heap, RocksDB,
and (where named) RocksDB with a two-key write-back cache, so that write-backs happen in the
middle of a test. Heap-only tests cover what is heap-specific by nature (its per-key-group
cleanup cursor, dirty key groups, cleanup in full snapshots); RocksDB-only tests cover its
end-of-epoch cleanup scan."""

from __future__ import annotations

import pickle
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
import rocksdict
from pyspark import cloudpickle

from lockgate.common import clock
from lockgate.common.time import Duration, Time
from lockgate.datastream.functions import AggregateFunction
from lockgate.datastream.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    ReducingState,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueState,
    ValueStateDescriptor,
)
from lockgate.state import ttl
from lockgate.state.heap import HeapKeyedStateBackend, HeapValueState
from lockgate.state.key_codec import decode_key, encode_key
from lockgate.state.key_groups import key_group_range
from lockgate.state.rocksdb import RocksDBKeyedStateBackend, RocksDBSettings, RocksDBValueState

MAX_P = 128
RANGE = key_group_range(MAX_P, 3, 1)  # key groups 43..85
G1, G2 = 43, 85
TTL_MS = 100
T0 = 1_000_000

UpdateType = StateTtlConfig.UpdateType
Visibility = StateTtlConfig.StateVisibility


class Clock:
    def __init__(self, now: int = T0):
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


class SumAgg(AggregateFunction):
    """Accumulator [sum, count]; result: "sum/count"."""

    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return (accumulator[0] + value, accumulator[1] + 1)

    def get_result(self, accumulator):
        return f"{accumulator[0]}/{accumulator[1]}"

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


def config(
    update: StateTtlConfig.UpdateType = UpdateType.OnCreateAndWrite,
    visibility: StateTtlConfig.StateVisibility = Visibility.NeverReturnExpired,
    ttl_ms: int = TTL_MS,
) -> StateTtlConfig.Builder:
    return (
        StateTtlConfig.new_builder(Time.milliseconds(ttl_ms))
        .set_update_type(update)
        .set_state_visibility(visibility)
    )


def descriptor(kind: str, name: str | None = None):
    name = name or kind
    if kind == "value":
        return ValueStateDescriptor(name)
    if kind == "list":
        return ListStateDescriptor(name)
    if kind == "map":
        return MapStateDescriptor(name)
    if kind == "reducing":
        return ReducingStateDescriptor(name, lambda a, b: a + b)
    return AggregatingStateDescriptor(name, SumAgg())


def heap_backend(clock: Clock) -> HeapKeyedStateBackend:
    return HeapKeyedStateBackend(RANGE, MAX_P, ttl_clock=clock)


HEAP, ROCKSDB, ROCKSDB_CACHE_2 = "heap", "rocksdb", "rocksdb-cache-2"
_PREFIX = struct.Struct(">HH")  # RocksDB key layout: key group, state id, key [, map key]
_REGISTRY = b"\xff\xff"  # RocksDB: the state registry's key starts so


class Backends:
    """Opens backends of one type with a TTL clock; RocksDB instances get directories under
    ``root`` and are disposed at teardown. Also reads what a backend stores, exactly."""

    def __init__(self, kind: str, root: Path):
        self.kind = kind
        self.root = root
        self.opened: list[Any] = []

    @property
    def is_rocksdb(self) -> bool:
        return self.kind != HEAP

    @property
    def plain_value_type(self) -> type:
        return RocksDBValueState if self.is_rocksdb else HeapValueState

    def __call__(self, clock: Clock, path: Path | None = None):
        if not self.is_rocksdb:
            return heap_backend(clock)
        settings = RocksDBSettings(
            write_buffer_bytes=1 << 20,
            block_cache_bytes=1 << 20,
            cache_entries=2 if self.kind == ROCKSDB_CACHE_2 else 100_000,
        )
        path = path or self.root / f"db-{len(self.opened)}"
        b = RocksDBKeyedStateBackend(RANGE, MAX_P, str(path), settings, ttl_clock=clock)
        self.opened.append(b)
        return b

    def restore(self, b, clock: Clock):
        """A new backend with what ``b`` holds, as a restore builds it: the heap backend from
        its key groups' contents, RocksDB by opening a copy of a checkpoint of the instance
        (taken with values still in the write-back cache)."""
        if not self.is_rocksdb:
            restored = heap_backend(clock)
            for group in RANGE:
                restored.install_group(group, b.group_contents(group), b.kinds)
            return restored
        checkpoint = self.root / f"checkpoint-{len(self.opened)}"
        b.checkpoint_to(str(checkpoint))
        copy = self.root / f"restored-{len(self.opened)}"
        shutil.copytree(checkpoint, copy)
        return self(clock, copy)

    def close(self) -> None:
        for b in self.opened:
            b.dispose()

    def _rows(self, b) -> list[bytes]:
        b.write_back()
        rows = b.db.keys()  # an Rdict itself is not iterable
        return [key for key in rows if not key.startswith(_REGISTRY)]

    def entries(self, b, group: int | None = None) -> int:
        """Stored entries (of one key group): the heap backend's (state, key) entries; RocksDB
        rows after a write-back (one per value or list, one per map entry)."""
        if not self.is_rocksdb:
            if group is None:
                return b.num_entries()
            return sum(len(groups[group]) for groups in b._tables.values())
        rows = self._rows(b)
        if group is not None:
            rows = [row for row in rows if _PREFIX.unpack_from(row)[0] == group]
        return len(rows)

    def raw(self, b, name: str, group: int, key: Any) -> Any:
        """What state ``name`` stores for ``key``, timestamps included (None: nothing)."""
        if not self.is_rocksdb:
            return b._tables[name][group].get(key)
        b.write_back()
        sid, kind = b._registry[name]
        prefix = _PREFIX.pack(group, sid) + encode_key(key)
        if ttl.raw_kind(kind) != "map":
            stored = b.db.get(prefix)
            return None if stored is None else pickle.loads(stored)
        entries = {
            decode_key(row[len(prefix) :]): pickle.loads(stored)
            for row, stored in b.db.items()
            if row.startswith(prefix)
        }
        return entries or None

    def value_keys(self, b) -> list[tuple[int, Any]]:
        """RocksDB: (key group, key) of every row of value-like states, in RocksDB's order."""
        return [(_PREFIX.unpack_from(row)[0], decode_key(row[4:])) for row in self._rows(b)]


@pytest.fixture(params=[HEAP, ROCKSDB])
def backends(request, tmp_path):
    factory = Backends(request.param, tmp_path)
    yield factory
    factory.close()


# Overrides the fixture's backends: these tests run with the two-key cache too, or on RocksDB
with_small_cache = pytest.mark.parametrize(
    "backends", [HEAP, ROCKSDB, ROCKSDB_CACHE_2], indirect=True
)
rocksdb_only = pytest.mark.parametrize("backends", [ROCKSDB, ROCKSDB_CACHE_2], indirect=True)
rocksdb_default_cache = pytest.mark.parametrize("backends", [ROCKSDB], indirect=True)


def ttl_state(b, kind, cfg: StateTtlConfig | StateTtlConfig.Builder, name=None):
    d = descriptor(kind, name)
    d.enable_time_to_live(cfg.build() if isinstance(cfg, StateTtlConfig.Builder) else cfg)
    return b.get_state(d)


update_types = pytest.mark.parametrize(
    "update", [UpdateType.OnCreateAndWrite, UpdateType.OnReadAndWrite], ids=["write", "read"]
)
visibilities = pytest.mark.parametrize(
    "visibility",
    [Visibility.NeverReturnExpired, Visibility.ReturnExpiredIfNotCleanedUp],
    ids=["never", "return"],
)


# StateTtlConfig: PyFlink's API and defaults --------------------------------------------------


def test_builder_defaults_are_pyflinks():
    cfg = StateTtlConfig.new_builder(Time.seconds(1)).build()
    assert cfg.get_ttl() == Time.seconds(1)
    assert cfg.get_update_type() is UpdateType.OnCreateAndWrite
    assert cfg.get_state_visibility() is Visibility.NeverReturnExpired
    assert cfg.get_ttl_time_characteristic() is StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
    assert cfg.is_enabled()
    strategies = cfg.get_cleanup_strategies()
    assert strategies.is_cleanup_in_background()
    assert not strategies.in_full_snapshot()
    incremental = strategies.get_incremental_cleanup_strategy()
    assert (incremental.get_cleanup_size(), incremental.run_cleanup_for_every_record()) == (
        5,
        False,
    )
    compaction = strategies.get_rocksdb_compact_filter_cleanup_strategy()
    assert compaction.get_query_time_after_num_entries() == 1000
    assert compaction.get_periodic_compaction_time() == Duration.of_days(30)


def test_builder_setters_and_strategies():
    cfg = (
        StateTtlConfig.new_builder(Duration.of_minutes(2))
        .update_ttl_on_read_and_write()
        .return_expired_if_not_cleaned_up()
        .use_processing_time()
        .cleanup_full_snapshot()
        .cleanup_incrementally(10, True)
        .cleanup_in_rocksdb_compact_filter(50, Duration.of_hours(1))
        .disable_cleanup_in_background()
        .set_ttl(Time.minutes(3))
        .build()
    )
    assert cfg.get_ttl() == Time.minutes(3)
    assert cfg.get_update_type() is UpdateType.OnReadAndWrite
    assert cfg.get_state_visibility() is Visibility.ReturnExpiredIfNotCleanedUp
    strategies = cfg.get_cleanup_strategies()
    assert not strategies.is_cleanup_in_background()
    assert strategies.in_full_snapshot()
    assert strategies.get_incremental_cleanup_strategy().get_cleanup_size() == 10
    assert strategies.get_incremental_cleanup_strategy().run_cleanup_for_every_record()
    compaction = strategies.get_rocksdb_compact_filter_cleanup_strategy()
    assert compaction.get_query_time_after_num_entries() == 50
    assert compaction.get_periodic_compaction_time() == Duration.of_hours(1)
    back = (
        StateTtlConfig.new_builder(Time.seconds(1))
        .update_ttl_on_read_and_write()
        .update_ttl_on_create_and_write()
        .return_expired_if_not_cleaned_up()
        .never_return_expired()
        .build()
    )
    assert back.get_update_type() is UpdateType.OnCreateAndWrite
    assert back.get_state_visibility() is Visibility.NeverReturnExpired
    assert "ttl=1000 ms" in repr(back)


def test_disabled_background_cleanup_leaves_only_configured_strategies():
    strategies = (
        StateTtlConfig.new_builder(Time.seconds(1))
        .disable_cleanup_in_background()
        .build()
        .get_cleanup_strategies()
    )
    assert strategies.get_incremental_cleanup_strategy() is None
    assert strategies.get_rocksdb_compact_filter_cleanup_strategy() is None
    # PyFlink: a compaction filter without a periodic compaction time gets 30 days
    compaction = (
        StateTtlConfig.new_builder(Time.seconds(1))
        .cleanup_in_rocksdb_compact_filter(7)
        .build()
        .get_cleanup_strategies()
        .get_rocksdb_compact_filter_cleanup_strategy()
    )
    assert compaction.get_periodic_compaction_time() == Duration.of_days(30)


def test_update_type_disabled_is_not_enabled_and_gives_a_plain_state(backends):
    cfg = StateTtlConfig.new_builder(Time.seconds(1)).set_update_type(UpdateType.Disabled).build()
    assert not cfg.is_enabled()
    clock = Clock()
    b = backends(clock)
    state = ttl_state(b, "value", cfg)
    assert type(state) is backends.plain_value_type
    b.set_current_key(G1, "k")
    state.update(1)
    clock.advance(10**9)
    assert state.value() == 1
    assert b.kinds == {"value": "value"}


def test_states_without_ttl_are_the_plain_states(backends):
    b = backends(Clock())
    assert type(b.get_state(ValueStateDescriptor("v"))) is backends.plain_value_type
    assert b.kinds == {"v": "value"}


@pytest.mark.parametrize("ms", [0, -5])
def test_ttl_must_be_positive(ms):
    builder = StateTtlConfig.new_builder(Time.milliseconds(ms))
    with pytest.raises(ValueError, match="TTL must be positive"):
        builder.build()


def test_enable_time_to_live_validates_and_names_the_state():
    d = ValueStateDescriptor("seen")
    with pytest.raises(TypeError, match=r"'seen'.*StateTtlConfig"):
        d.enable_time_to_live("1 hour")
    cfg = StateTtlConfig.new_builder(Time.seconds(1)).build()
    cfg._ttl = Time.milliseconds(0)  # built right, then damaged
    with pytest.raises(ValueError, match=r"'seen'.*TTL must be positive"):
        d.enable_time_to_live(cfg)
    assert d.ttl_config is None


def test_builder_input_errors():
    with pytest.raises(TypeError, match="Time or Duration"):
        StateTtlConfig.new_builder(1000)
    with pytest.raises(TypeError, match="Time or Duration"):
        StateTtlConfig.new_builder(Time.seconds(1)).set_ttl(5)
    builder = StateTtlConfig.new_builder(Time.seconds(1))
    with pytest.raises(TypeError, match="UpdateType"):
        builder.set_update_type("OnReadAndWrite")
    with pytest.raises(TypeError, match="StateVisibility"):
        builder.set_state_visibility(1)
    with pytest.raises(TypeError, match="TtlTimeCharacteristic"):
        builder.set_ttl_time_characteristic("EventTime")
    for size in (0, -3):
        with pytest.raises(ValueError, match=r"cleanup_size.*positive"):
            builder.cleanup_incrementally(size, False)
    with pytest.raises(TypeError, match="cleanup_size"):
        builder.cleanup_incrementally("5", False)
    with pytest.raises(ValueError, match="query_time_after_num_entries"):
        builder.cleanup_in_rocksdb_compact_filter(-1)
    with pytest.raises(ValueError, match="periodic_compaction_time"):
        builder.cleanup_in_rocksdb_compact_filter(10, Duration.of_millis(-1))


def test_config_and_descriptor_pickle():
    cfg = (
        StateTtlConfig.new_builder(Time.seconds(3))
        .update_ttl_on_read_and_write()
        .cleanup_incrementally(4, True)
        .cleanup_full_snapshot()
        .build()
    )
    d = ValueStateDescriptor("v")
    d.enable_time_to_live(cfg)
    for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, pickle.loads)):
        copy = loads(dumps(d)).ttl_config
        assert copy.get_ttl() == Time.seconds(3)
        assert copy.get_update_type() is UpdateType.OnReadAndWrite
        assert copy.get_cleanup_strategies().in_full_snapshot()
        assert copy.get_cleanup_strategies().get_incremental_cleanup_strategy().get_cleanup_size()


# Pure helpers shared with other backends ----------------------------------------------------


def test_is_expired_and_default_clock():
    assert not ttl.is_expired(1000, 100, 1099)
    assert ttl.is_expired(1000, 100, 1100)
    import time

    assert abs(clock.processing_time_ms() - time.time() * 1000) < 1000


def test_kinds_and_raw_descriptors():
    assert {k: ttl.raw_kind(k) for k in ("value", "reducing", "aggregating", "list", "map")} == {
        "value": "value",
        "reducing": "value",
        "aggregating": "value",
        "list": "list",
        "map": "map",
    }
    assert ttl.raw_kind("ttl-aggregating") == "value"
    assert ttl.is_ttl_kind("ttl-map") and not ttl.is_ttl_kind("map")
    with pytest.raises(ValueError, match="unknown state kind"):
        ttl.raw_kind("window")
    for kind, raw in [("value", "value"), ("reducing", "value"), ("list", "list"), ("map", "map")]:
        d = descriptor(kind, "s")
        assert ttl.stored_kind(d) == kind
        d.enable_time_to_live(config().build())
        assert ttl.stored_kind(d) == "ttl-" + kind
        r = ttl.raw_descriptor(d)
        assert (r.name, r.kind, r.stored_kind, r.ttl_config) == ("s", raw, "ttl-" + kind, None)


def test_purge_expired_per_kind_without_mutating():
    now, ms = 1000, 100  # expired: last access <= 900
    value = ("v", 950)
    assert ttl.purge_expired("ttl-value", value, ms, now) is value
    assert ttl.purge_expired("reducing", ("v", 900), ms, now) is None
    items = [("a", 800), ("b", 950)]
    assert ttl.purge_expired("list", items, ms, now) == [("b", 950)]
    assert items == [("a", 800), ("b", 950)]
    assert ttl.purge_expired("list", items[1:], ms, now) is not None
    live = [("b", 950)]
    assert ttl.purge_expired("ttl-list", live, ms, now) is live
    assert ttl.purge_expired("list", [("a", 1)], ms, now) is None
    mapping = {"x": (1, 800), "y": (2, 901)}
    assert ttl.purge_expired("ttl-map", mapping, ms, now) == {"y": (2, 901)}
    assert mapping == {"x": (1, 800), "y": (2, 901)}
    assert ttl.purge_expired("map", {"x": (1, 800)}, ms, now) is None
    entries = {"k1": ("a", 990), "k2": ("b", 100), "k3": [("c", 100), ("d", 999)]}
    kinds_entries = {"k1": ("a", 990), "k2": ("b", 100)}
    assert ttl.purge_expired_entries("value", kinds_entries, ms, now) == {"k1": ("a", 990)}
    assert ttl.purge_expired_entries("value", {"k1": ("a", 990)}, ms, now) == {"k1": ("a", 990)}
    same = {"k1": ("a", 990)}
    assert ttl.purge_expired_entries("value", same, ms, now) is same
    lists = {"k0": [("z", 999)], "k3": entries["k3"], "k4": [("e", 5)]}
    assert ttl.purge_expired_entries("list", lists, ms, now) == {
        "k0": [("z", 999)],
        "k3": [("d", 999)],
    }
    assert list(lists) == ["k0", "k3", "k4"] and len(lists["k3"]) == 2


# Value state ---------------------------------------------------------------------------------


@with_small_cache
@update_types
@visibilities
def test_value_state_expiry(backends, update, visibility):
    clock = Clock()
    b = backends(clock)
    state = ttl_state(b, "value", config(update, visibility))
    assert isinstance(state, ValueState)
    b.set_current_key(G1, "k")
    assert state.value() is None
    state.update("x")
    clock.advance(60)
    assert state.value() == "x"  # a read at 60: refreshes with OnReadAndWrite
    clock.advance(60)  # 120 after the write, 60 after the read
    if update is UpdateType.OnReadAndWrite:
        assert state.value() == "x"
        clock.advance(TTL_MS)
    expected = "x" if visibility is Visibility.ReturnExpiredIfNotCleanedUp else None
    assert state.value() == expected
    # the read found it expired and removed it, whatever the visibility
    assert state.value() is None
    assert backends.entries(b, G1) == 0
    assert backends.entries(b) == 0


def test_value_state_write_refreshes_and_expiry_is_at_exactly_ttl(backends):
    clock = Clock()
    b = backends(clock)
    state = ttl_state(b, "value", config())
    b.set_current_key(G1, "k")
    state.update(1)
    clock.advance(90)
    state.update(2)  # a write always refreshes
    clock.advance(99)
    assert state.value() == 2
    clock.advance(1)  # last access + ttl == now: expired
    assert state.value() is None


@with_small_cache
def test_value_state_per_key_and_update_none_clears(backends):
    clock = Clock()
    b = backends(clock)
    state = ttl_state(b, "value", config())
    b.set_current_key(G1, "old")
    state.update("o")
    clock.advance(70)
    b.set_current_key(G2, "new")
    state.update("n")
    clock.advance(70)
    assert state.value() == "n"
    b.set_current_key(G1, "old")
    assert state.value() is None
    b.set_current_key(G2, "new")
    state.update(None)
    assert state.value() is None
    assert backends.entries(b) == 0
    state.update("again")
    state.clear()
    assert state.value() is None


# Reducing and aggregating state --------------------------------------------------------------


@with_small_cache
@update_types
@visibilities
def test_reducing_state_expiry(backends, update, visibility):
    clock = Clock()
    b = backends(clock)
    state = ttl_state(b, "reducing", config(update, visibility))
    assert isinstance(state, ReducingState)
    b.set_current_key(G1, "k")
    assert state.get() is None
    state.add(1)
    clock.advance(50)
    state.add(2)  # a write: the timestamp is now 50
    clock.advance(90)
    assert state.get() == 3  # read at 140 (refreshes with OnReadAndWrite)
    clock.advance(60)  # 200: 150 since the last write, 60 since the read
    if update is UpdateType.OnReadAndWrite:
        assert state.get() == 3
        clock.advance(TTL_MS)
    returned = visibility is Visibility.ReturnExpiredIfNotCleanedUp
    assert state.get() == (3 if returned else None)
    assert state.get() is None
    assert backends.entries(b) == 0


@visibilities
def test_reducing_add_to_an_expired_value(backends, visibility):
    """As Flink: with ReturnExpiredIfNotCleanedUp, an expired value not yet cleaned up is
    still merged into; with NeverReturnExpired the add starts from scratch."""
    clock = Clock()
    b = backends(clock)
    state = ttl_state(b, "reducing", config(visibility=visibility))
    b.set_current_key(G1, "k")
    state.add(10)
    clock.advance(TTL_MS + 1)
    state.add(5)
    merged = 15 if visibility is Visibility.ReturnExpiredIfNotCleanedUp else 5
    assert state.get() == merged
    clock.advance(TTL_MS - 1)
    assert state.get() == merged  # the add refreshed the timestamp


@update_types
@visibilities
def test_aggregating_state_expiry(backends, update, visibility):
    clock = Clock()
    b = backends(clock)
    state = ttl_state(b, "aggregating", config(update, visibility))
    assert isinstance(state, AggregatingState)
    b.set_current_key(G1, "k")
    assert state.get() is None
    state.add(4)
    state.add(6)
    clock.advance(70)
    assert state.get() == "10/2"
    clock.advance(70)
    if update is UpdateType.OnReadAndWrite:
        assert state.get() == "10/2"
        clock.advance(TTL_MS)
    returned = visibility is Visibility.ReturnExpiredIfNotCleanedUp
    assert state.get() == ("10/2" if returned else None)
    assert state.get() is None
    state.add(1)
    assert state.get() == "1/1"
    state.add(None)  # as PyFlink: adding None clears
    assert state.get() is None
    assert backends.entries(b) == 0


@visibilities
def test_aggregating_add_to_an_expired_accumulator(backends, visibility):
    clock = Clock()
    b = backends(clock)
    state = ttl_state(b, "aggregating", config(visibility=visibility))
    b.set_current_key(G1, "k")
    state.add(4)
    clock.advance(TTL_MS)
    state.add(6)
    assert state.get() == (
        "10/2" if visibility is Visibility.ReturnExpiredIfNotCleanedUp else "6/1"
    )


# List state ----------------------------------------------------------------------------------


@with_small_cache
@update_types
@visibilities
def test_list_state_expires_per_element(backends, update, visibility):
    clock = Clock()
    b = backends(clock)
    state = ttl_state(b, "list", config(update, visibility))
    assert isinstance(state, ListState)
    b.set_current_key(G1, "k")
    assert state.get() == []
    state.add("a")  # at 0
    clock.advance(50)
    state.add_all(["b", "c"])  # at 50
    clock.advance(40)
    assert state.get() == ["a", "b", "c"]  # read at 90: refreshes all with OnReadAndWrite
    clock.advance(30)  # 120
    if update is UpdateType.OnReadAndWrite:
        assert state.get() == ["a", "b", "c"]  # read at 120: live until 220
        clock.advance(TTL_MS)
        returned = visibility is Visibility.ReturnExpiredIfNotCleanedUp
        assert state.get() == (["a", "b", "c"] if returned else [])
        assert state.get() == []
        assert backends.entries(b) == 0
        return
    returned = visibility is Visibility.ReturnExpiredIfNotCleanedUp
    assert state.get() == (["a", "b", "c"] if returned else ["b", "c"])
    assert list(state) == ["b", "c"]  # "a" was removed by the read
    assert backends.raw(b, "list", G1, "k") == [("b", T0 + 50), ("c", T0 + 50)]
    clock.advance(30)  # 150: b and c expire too
    assert list(state) == (["b", "c"] if returned else [])
    assert state.get() == []
    assert backends.entries(b) == 0


def test_list_state_update_add_and_none(backends):
    clock = Clock()
    b = backends(clock)
    state = ttl_state(b, "list", config())
    b.set_current_key(G1, "k")
    state.update([1, 2])
    clock.advance(60)
    state.add(3)
    clock.advance(60)
    assert state.get() == [3]
    state.update([7])  # update rewrites every element with a fresh timestamp
    clock.advance(99)
    assert state.get() == [7]
    with pytest.raises(ValueError, match="None"):
        state.add(None)
    with pytest.raises(ValueError, match="None"):
        state.add_all([8, None])
    assert state.get() == [7]  # add_all checks before adding
    state.add_all([])
    state.update([])
    assert state.get() == []
    assert backends.entries(b) == 0


# Map state -----------------------------------------------------------------------------------


@update_types
@visibilities
def test_map_state_expires_per_entry(backends, update, visibility):
    clock = Clock()
    b = backends(clock)
    state = ttl_state(b, "map", config(update, visibility))
    assert isinstance(state, MapState)
    returned = visibility is Visibility.ReturnExpiredIfNotCleanedUp
    b.set_current_key(G1, "k")
    assert state.is_empty()
    state.put("a", 1)  # at 0
    clock.advance(50)
    state.put_all({"b": 2, "c": 3})  # at 50
    clock.advance(40)
    assert state.get("a") == 1  # read at 90: refreshes "a" alone with OnReadAndWrite
    clock.advance(30)  # 120
    if update is UpdateType.OnReadAndWrite:
        assert state.items() == [("a", 1), ("b", 2), ("c", 3)]  # refreshes all at 120
        clock.advance(TTL_MS)
        assert state.items() == ([("a", 1), ("b", 2), ("c", 3)] if returned else [])
        assert state.items() == []
        assert state.is_empty()
        assert backends.entries(b) == 0
        return
    assert state.get("a") == (1 if returned else None)
    assert not state.contains("a")  # the read above removed it
    assert "b" in state and state["c"] == 3
    assert state.keys() == ["b", "c"]
    assert state.values() == [2, 3]
    assert backends.raw(b, "map", G1, "k") == {"b": (2, T0 + 50), "c": (3, T0 + 50)}
    clock.advance(30)  # 150: b and c expire
    if returned:
        assert not state.is_empty()  # expired, but not cleaned up yet
        assert state.contains("b")  # returned once, and removed
        assert not state.contains("b")
        assert list(state) == ["c"]
    else:
        assert state.is_empty()
    assert state.items() == [] and state.is_empty()
    assert backends.entries(b) == 0


def test_map_state_entries_refresh_individually(backends):
    clock = Clock()
    b = backends(clock)
    state = ttl_state(b, "map", config(UpdateType.OnReadAndWrite))
    b.set_current_key(G1, "k")
    state.put_all({"x": 1, "y": 2})
    clock.advance(60)
    assert state.contains("x")  # contains is a read: refreshes "x" only
    clock.advance(60)
    assert dict(state.items()) == {"x": 1}
    state["z"] = None  # a None value is a value
    assert state.contains("z") and state.get("z") is None
    del state["z"]
    assert not state.contains("z")
    state.remove("absent")
    state.clear()
    assert state.is_empty()


# Empty-state semantics and bookkeeping -------------------------------------------------------


@with_small_cache
def test_every_kind_looks_empty_after_expiry(backends):
    clock = Clock()
    b = backends(clock)
    states = {kind: ttl_state(b, kind, config()) for kind in RAW_KINDS}
    b.set_current_key(G2, 42)
    states["value"].update("v")
    states["list"].add("e")
    states["map"].put("mk", "mv")
    states["reducing"].add(1)
    states["aggregating"].add(1)
    assert backends.entries(b) == 5
    clock.advance(TTL_MS)
    assert states["value"].value() is None
    assert states["list"].get() == [] and list(states["list"]) == []
    assert states["map"].get("mk") is None and not states["map"].contains("mk")
    assert states["map"].items() == [] and states["map"].is_empty()
    assert states["reducing"].get() is None
    assert states["aggregating"].get() is None
    assert backends.entries(b) == 0
    assert backends.entries(b, G2) == 0


RAW_KINDS = ("value", "list", "map", "reducing", "aggregating")


def test_kinds_record_ttl_and_mixing_with_and_without_ttl_fails(backends):
    clock = Clock()
    b = backends(clock)
    for kind in RAW_KINDS:
        ttl_state(b, kind, config())
    assert b.kinds == {kind: "ttl-" + kind for kind in RAW_KINDS}
    with pytest.raises(ValueError, match="TTL cannot be turned on or off"):
        b.get_state(ValueStateDescriptor("value"))
    plain = b.get_state(ValueStateDescriptor("plain"))
    with pytest.raises(ValueError, match="TTL cannot be turned on or off"):
        ttl_state(b, "value", config(), name="plain")
    with pytest.raises(ValueError, match="ttl-list state and cannot be used as ttl-map"):
        ttl_state(b, "map", config(), name="list")
    assert b.get_state(ValueStateDescriptor("plain")) is plain
    # the same TTL state twice is the same object
    assert ttl_state(b, "value", config()) is ttl_state(b, "value", config())


def test_snapshot_round_trip_keeps_timestamps(backends):
    clock = Clock()
    source = backends(clock)
    state = ttl_state(source, "map", config())
    source.set_current_key(G1, "k")
    state.put("a", 1)
    clock.advance(60)
    state.put("b", 2)
    target = backends.restore(source, clock)
    with pytest.raises(ValueError, match="registered as ttl-map"):
        target.get_state(MapStateDescriptor("map"))
    restored = ttl_state(target, "map", config())
    target.set_current_key(G1, "k")
    assert restored.items() == [("a", 1), ("b", 2)]
    clock.advance(50)  # "a" (written at 0) has expired, "b" (at 60) not
    assert restored.items() == [("b", 2)]


def test_ttl_cannot_be_turned_on_or_off_after_a_restore(backends):
    """The stored kind travels with the state: a restored (RocksDB: reopened) state written
    with TTL is never read without it, nor the other way round."""
    clock = Clock()
    source = backends(clock)
    with_ttl = ttl_state(source, "value", config(), name="with_ttl")
    without_ttl = source.get_state(ValueStateDescriptor("without_ttl"))
    source.set_current_key(G1, "k")
    with_ttl.update(1)
    without_ttl.update(2)
    target = backends.restore(source, clock)
    assert target.kinds == {"with_ttl": "ttl-value", "without_ttl": "value"}
    on_or_off = "TTL cannot be turned on or off"
    with pytest.raises(ValueError, match=rf"'with_ttl'.*ttl-value.*{on_or_off}"):
        target.get_state(ValueStateDescriptor("with_ttl"))
    disabled = config(UpdateType.Disabled).build()  # a disabled TTL is no TTL
    with pytest.raises(ValueError, match=rf"'with_ttl'.*{on_or_off}"):
        ttl_state(target, "value", disabled, name="with_ttl")
    with pytest.raises(ValueError, match=rf"'without_ttl'.*as ttl-value state.*{on_or_off}"):
        ttl_state(target, "value", config(), name="without_ttl")
    target.set_current_key(G1, "k")
    assert ttl_state(target, "value", config(), name="with_ttl").value() == 1
    assert ttl_state(target, "value", disabled, name="without_ttl").value() == 2


# Incremental cleanup -------------------------------------------------------------------------

KEYS = [(G1 + i % 5, f"key-{i}") for i in range(20)]  # 4 keys in each of 5 key groups


def fill(b, state, keys=KEYS):
    for group, key in keys:
        b.set_current_key(group, key)
        state.update(key)


def touch(b, state, times: int, key=(G2, "live")):
    """``times`` state accesses on a key of its own."""
    b.set_current_key(*key)
    for _ in range(times):
        state.update("live")


# Heap: a cursor per state over its key groups; changed key groups are marked dirty


def test_heap_incremental_cleanup_checks_cleanup_size_entries_per_access():
    clock = Clock()
    b = heap_backend(clock)
    state = ttl_state(b, "value", config().cleanup_incrementally(2, False))
    fill(b, state)  # 20 accesses
    b.end_epoch()  # checks all 20 keys: none expired yet; the cursor is back at the start
    assert b.num_entries() == 20
    assert state.accesses == 0
    clock.advance(TTL_MS)
    b.take_dirty_groups()
    touch(b, state, 3)  # 3 accesses -> 6 keys checked: the live one in G2, then 5 expired
    b.end_epoch()
    assert b.num_entries() == 20 + 1 - 5
    # 4 keys per group, in insertion order (G2: the writes of touch)
    assert b.take_dirty_groups() == [G1, G1 + 1, G2]
    b.end_epoch()  # no access this epoch: no cleanup
    assert b.num_entries() == 16
    touch(b, state, 4)  # 8 more, from where the last cleanup stopped
    b.end_epoch()
    assert b.num_entries() == 8
    assert b.take_dirty_groups() == [G1 + 1, G1 + 2, G1 + 3, G2]
    touch(b, state, 50)  # more than there is: each key checked once, the live one kept
    b.end_epoch()
    assert b.num_entries() == 1
    assert b.take_dirty_groups() == [G1 + 3, G1 + 4, G2]
    b.set_current_key(G2, "live")
    assert state.value() == "live"


def test_heap_incremental_cleanup_default_is_five_per_access_and_can_be_disabled():
    clock = Clock()
    b = heap_backend(clock)
    default = ttl_state(b, "value", config(), name="default")
    off = ttl_state(b, "value", config().disable_cleanup_in_background(), name="off")
    fill(b, default)
    fill(b, off)
    default.accesses = off.accesses = 0
    clock.advance(TTL_MS)
    touch(b, default, 2)
    touch(b, off, 2)
    b.end_epoch()
    assert b.num_entries() == 2 * 21 - 10
    groups = {name: sum(map(len, b._tables[name].values())) for name in ("default", "off")}
    assert groups == {"default": 11, "off": 21}


def test_heap_incremental_cleanup_per_record():
    clock = Clock()
    b = heap_backend(clock)
    per_record = ttl_state(b, "value", config().cleanup_incrementally(1, True), name="r")
    per_access = ttl_state(b, "value", config().cleanup_incrementally(1, False), name="a")
    fill(b, per_record)
    fill(b, per_access)
    clock.advance(TTL_MS)
    per_record.accesses = per_access.accesses = 0
    b.end_epoch(records=7)
    assert sum(map(len, b._tables["r"].values())) == 13
    assert sum(map(len, b._tables["a"].values())) == 20


def test_heap_incremental_cleanup_tolerates_changes_between_runs():
    clock = Clock()
    b = heap_backend(clock)
    state = ttl_state(b, "value", config().cleanup_incrementally(1, False))
    fill(b, state)
    state.accesses = 0
    clock.advance(TTL_MS)
    touch(b, state, 2, key=KEYS[-1])  # refreshes the last key; 2 checks
    b.end_epoch()
    for group, key in KEYS[5:10]:  # deletions behind and ahead of the cursor
        b.set_current_key(group, key)
        state.clear()
    fill(b, state, [(G2, "fresh")])
    assert b.cleanup_expired("value") > 0  # a full round
    assert b.num_entries() == 2
    b.set_current_key(G2, "fresh")
    assert state.value() == "fresh"
    assert b.cleanup_expired("value") == 0


# Every backend


def test_incremental_cleanup_drops_expired_elements_and_entries(backends):
    clock = Clock()
    b = backends(clock)
    lists = ttl_state(b, "list", config().cleanup_incrementally(10, False))
    maps = ttl_state(b, "map", config().cleanup_incrementally(10, False))
    b.set_current_key(G2, "gone")
    lists.add("x")
    b.set_current_key(G1, "k")
    lists.add("old")
    maps.put("old", 1)
    clock.advance(60)
    lists.add("new")
    maps.put("new", 2)
    clock.advance(60)
    if not backends.is_rocksdb:
        b.take_dirty_groups()
    b.end_epoch()
    assert backends.raw(b, "list", G1, "k") == [("new", T0 + 60)]
    assert backends.raw(b, "map", G1, "k") == {"new": (2, T0 + 60)}
    assert backends.entries(b, G1) == 2
    assert backends.entries(b, G2) == 0
    if not backends.is_rocksdb:
        assert b.take_dirty_groups() == [G1, G2]


def test_end_epoch_without_ttl_states_does_nothing(backends):
    b = backends(Clock())
    plain = b.get_state(ValueStateDescriptor("v"))
    b.set_current_key(G1, "k")
    plain.update(1)
    b.end_epoch(records=100)
    assert backends.entries(b) == 1


# Cleanup in full snapshots -------------------------------------------------------------------


@pytest.mark.parametrize("in_snapshot", [True, False], ids=["cleanup", "no-cleanup"])
def test_heap_full_snapshot_cleanup_leaves_expired_out_of_group_contents(in_snapshot):
    clock = Clock()
    b = heap_backend(clock)
    builder = config().disable_cleanup_in_background()
    if in_snapshot:
        builder = builder.cleanup_full_snapshot()
    values = ttl_state(b, "value", builder)
    lists = ttl_state(b, "list", builder)
    maps = ttl_state(b, "map", builder)
    plain = b.get_state(ValueStateDescriptor("plain"))
    b.set_current_key(G1, "old")
    values.update("o")
    lists.add("o")
    maps.put("o", 1)
    plain.update("p")
    clock.advance(60)
    b.set_current_key(G1, "new")
    values.update("n")
    lists.add("n")
    maps.put("n", 2)
    b.set_current_key(G2, "old")
    values.update("o2")
    clock.advance(60)
    b.set_current_key(G1, "old")
    lists.add("late")
    maps.put("late", 3)
    contents = b.group_contents(G1)
    if in_snapshot:
        assert contents == {
            "value": {"new": ("n", T0 + 60)},
            "list": {"old": [("late", T0 + 120)], "new": [("n", T0 + 60)]},
            "map": {"old": {"late": (3, T0 + 120)}, "new": {"n": (2, T0 + 60)}},
            "plain": {"old": "p"},
        }
    else:
        assert contents["value"]["old"] == ("o", T0)
        assert contents["list"]["old"] == [("o", T0), ("late", T0 + 120)]
    assert b.num_entries() == 8  # memory keeps everything until read or cleaned up
    b.set_current_key(G1, "old")
    assert lists.get() == ["late"]
    clock.advance(TTL_MS)
    assert (b.group_contents(G2) == {}) is in_snapshot


# RocksDB: an end-of-epoch scan over the instance's rows in place of a compaction filter -----


@rocksdb_only
def test_rocksdb_end_epoch_scan_drops_expired_values_elements_and_entries(backends):
    clock = Clock()
    b = backends(clock)
    # expired values not cleaned up yet are still returned: reads show what the scan did
    builder = config(visibility=Visibility.ReturnExpiredIfNotCleanedUp)
    values = ttl_state(b, "value", builder)
    lists = ttl_state(b, "list", builder)
    maps = ttl_state(b, "map", builder)
    plain = b.get_state(ValueStateDescriptor("plain"))
    fill(b, values)
    b.set_current_key(G1, "k")
    lists.add("old")
    maps.put("old", 1)
    plain.update("p")
    clock.advance(60)
    lists.add("new")
    maps.put("new", 2)
    b.set_current_key(G2, "live")
    values.update("live")
    clock.advance(60)  # everything written at 0 has expired
    assert backends.entries(b) == 20 + 1 + 1 + 2 + 1
    b.end_epoch()  # no read in between: the scan alone drops what expired
    assert backends.entries(b) == 4  # the live value, the list, one map entry, the plain value
    # RocksDB's own count, an estimate (the deletions' tombstones count against it), is
    # exact after a full compaction; the state registry is a row too
    b.db.flush()
    full = rocksdict.CompactOptions()
    full.set_bottommost_level_compaction(rocksdict.BottommostLevelCompaction.force())
    b.db.compact_range(None, None, full)
    assert b.num_entries() == 4 + 1
    assert backends.raw(b, "list", G1, "k") == [("new", T0 + 60)]
    assert backends.raw(b, "map", G1, "k") == {"new": (2, T0 + 60)}
    for group, key in KEYS:
        b.set_current_key(group, key)
        assert values.value() is None
    b.set_current_key(G1, "k")
    assert lists.get() == ["new"]
    assert maps.items() == [("new", 2)]
    assert plain.value() == "p"
    b.set_current_key(G2, "live")
    assert values.value() == "live"


@rocksdb_only
def test_rocksdb_cleanup_scan_resumes_from_its_cursor(backends):
    clock = Clock()
    b = backends(clock)
    builder = config().disable_cleanup_in_background().cleanup_in_rocksdb_compact_filter(3)
    state = ttl_state(b, "value", builder)
    fill(b, state)
    order = backends.value_keys(b)  # key group first
    assert sorted(order) == sorted(KEYS)
    assert [group for group, _ in order] == sorted(group for group, _ in KEYS)
    state.accesses = 0
    assert b.cleanup_expired(5) == 0  # nothing has expired; the cursor moves on all the same
    clock.advance(TTL_MS)
    assert b.cleanup_expired(10) == 10  # from where the last scan stopped
    assert backends.value_keys(b) == order[:5] + order[15:]
    touch(b, state, 3)  # (G2, "live") comes after every row of KEYS; end_epoch checks 3 rows
    b.end_epoch()
    assert backends.value_keys(b) == order[:5] + order[18:] + [(G2, "live")]
    b.end_epoch()  # 3 more: the last two expired rows and the live one
    assert backends.value_keys(b) == [*order[:5], (G2, "live")]
    # changes between scans: a row ahead of the cursor deleted, a new one behind it
    b.set_current_key(*order[19])
    state.clear()
    fill(b, state, [(G1, "fresh")])
    b.cleanup_expired(100)  # on to the last row, then round from the first one
    assert sorted(backends.value_keys(b)) == [(G1, "fresh"), (G2, "live")]
    assert b.cleanup_expired(100) == 0
    b.set_current_key(G1, "fresh")
    assert state.value() == "fresh"


@rocksdb_default_cache
def test_rocksdb_cleanup_scan_counts_each_dropped_row_once(backends):
    clock = Clock()
    b = backends(clock)
    state = ttl_state(b, "value", config())
    fill(b, state)
    assert b.cleanup_expired(5) == 0  # the cursor is now at the sixth row
    clock.advance(TTL_MS)
    dropped = b.cleanup_expired(100)
    assert backends.entries(b) == 0
    assert dropped == 20


@rocksdb_only
def test_rocksdb_cleanup_drops_values_cached_before_expiry(backends):
    """The scan writes the write-back cache out first and forgets it when it changed rows,
    so a value read (and cached) before it expired is not handed out after the cleanup.
    One key per state: the two-key cache keeps it across write-backs too."""
    clock = Clock()
    b = backends(clock)
    builder = config(visibility=Visibility.ReturnExpiredIfNotCleanedUp)

    def states(prefix):
        return [
            ttl_state(b, kind, builder, prefix + kind) for kind in ("value", "list", "reducing")
        ]

    def read(value, items, reducing):
        return value.value(), items.get(), reducing.get()

    cleaned, control = states(""), states("control-")
    b.set_current_key(G1, "k")
    for value, items, reducing in (cleaned, control):
        value.update("v")
        items.add("old")
        reducing.add(1)
    clock.advance(60)
    cleaned[1].add("new")
    assert read(*cleaned) == ("v", ["old", "new"], 1)  # read, so cached, before expiry
    b.write_back()  # written back, still cached
    clock.advance(60)
    assert read(*control) == ("v", ["old"], 1)  # no cleanup yet: expired values are returned
    b.end_epoch()
    assert read(*cleaned) == (None, ["new"], None)
    assert backends.raw(b, "list", G1, "k") == [("new", T0 + 60)]


@rocksdb_default_cache
@pytest.mark.parametrize(
    "builder, accesses, records, checked",
    [
        (config().disable_cleanup_in_background(), 3, 5, 0),
        (config().disable_cleanup_in_background().cleanup_incrementally(2, False), 0, 9, 0),
        (config().disable_cleanup_in_background().cleanup_incrementally(2, False), 3, 9, 0),
        (config().disable_cleanup_in_background().cleanup_incrementally(1, True), 0, 7, 0),
        (config().disable_cleanup_in_background().cleanup_incrementally(1, True), 2, 7, 0),
        (config().disable_cleanup_in_background().cleanup_in_rocksdb_compact_filter(4), 0, 9, 4),
        (
            config()
            .disable_cleanup_in_background()
            .cleanup_in_rocksdb_compact_filter(4)
            .cleanup_incrementally(2, False),
            3,
            0,
            4,
        ),
        (config(), 0, 0, 20),  # by default: 1000 rows, with or without accesses
        (config().cleanup_in_rocksdb_compact_filter(3), 1, 0, 3),
    ],
    ids=[
        "none",
        "incremental-no-access",
        "incremental",
        "per-record",
        "per-record-and-access",
        "compaction-filter",
        "compaction-filter-and-incremental",
        "default",
        "compaction-filter-and-default-incremental",
    ],
)
def test_rocksdb_cleanup_budget(backends, builder, accesses, records, checked):
    """Rows an epoch's scan checks, per TTL state: its compaction filter's
    query_time_after_num_entries; incremental cleanup is a heap-backend strategy, as in
    Flink, and adds nothing on RocksDB."""
    clock = Clock()
    b = backends(clock)
    state = ttl_state(b, "value", builder)
    fill(b, state)
    state.accesses = 0
    clock.advance(TTL_MS)
    if accesses:
        touch(b, state, accesses)  # its row comes after every row of KEYS
    b.end_epoch(records=records)
    expired_left = backends.entries(b) - (1 if accesses else 0)
    assert expired_left == 20 - checked


@rocksdb_default_cache
def test_rocksdb_background_cleanup_can_be_disabled(backends):
    clock = Clock()
    b = backends(clock)
    returned = config(visibility=Visibility.ReturnExpiredIfNotCleanedUp)
    state = ttl_state(b, "value", returned.disable_cleanup_in_background())
    b.set_current_key(G1, "k")
    state.update("v")
    clock.advance(TTL_MS)
    b.end_epoch(records=10)
    assert backends.entries(b) == 1
    assert state.value() == "v"  # expired, but not cleaned up: returned once
    assert state.value() is None


@rocksdb_default_cache
def test_rocksdb_cleanup_leaves_a_state_without_background_cleanup_alone(backends):
    clock = Clock()
    b = backends(clock)
    returned = Visibility.ReturnExpiredIfNotCleanedUp
    cleaned = ttl_state(b, "value", config(visibility=returned), name="cleaned")
    no_background = config(visibility=returned).disable_cleanup_in_background()
    kept = ttl_state(b, "value", no_background, name="kept")
    fill(b, cleaned)
    fill(b, kept)
    clock.advance(TTL_MS)
    b.end_epoch()
    b.set_current_key(*KEYS[0])
    assert cleaned.value() is None
    assert kept.value() == KEYS[0][1]


@rocksdb_default_cache
def test_rocksdb_checkpoints_keep_expired_rows_full_snapshot_cleanup_aside(backends):
    """As Flink with incremental RocksDB snapshots: cleanup_full_snapshot() does not apply;
    expired rows go with a read or the end-of-epoch scan, and restored state still never
    returns them."""
    clock = Clock()
    b = backends(clock)
    builder = config().disable_cleanup_in_background().cleanup_full_snapshot()
    state = ttl_state(b, "value", builder)
    fill(b, state)
    clock.advance(TTL_MS)
    b.end_epoch()
    restored = backends.restore(b, clock)
    assert backends.entries(restored) == 20
    restored_state = ttl_state(restored, "value", builder)
    restored.set_current_key(*KEYS[0])
    assert restored_state.value() is None
    assert backends.entries(restored) == 19


# The wrappers use only the state interfaces, so any backend's raw states work -------------


class DictValue:
    def __init__(self):
        self.v = None

    def value(self):
        return self.v

    def update(self, v):
        self.v = v

    def clear(self):
        self.v = None


def test_wrap_with_ttl_on_a_foreign_raw_state():
    clock = Clock()
    d = ReducingStateDescriptor("r", lambda a, b: a * b)
    with pytest.raises(ValueError, match="no enabled state TTL"):
        ttl.wrap_with_ttl(d, lambda raw: DictValue(), clock)
    d.enable_time_to_live(config().build())
    asked = []
    raw = DictValue()
    state = ttl.wrap_with_ttl(d, lambda r: asked.append(r) or raw, clock)
    assert [(r.name, r.kind) for r in asked] == [("r", "value")]
    state.add(3)
    state.add(4)
    assert raw.v == (12, T0) and state.get() == 12
    assert state.accesses == 3
    clock.advance(TTL_MS)
    assert state.get() is None and raw.v is None
