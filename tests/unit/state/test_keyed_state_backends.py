"""Keyed state semantics every backend shares: PyFlink's method set and empty semantics.

Each test runs on the heap backend, on RocksDB, and on RocksDB with a write-back cache of
two keys (so cached values go to RocksDB, and are read back from it, mid-epoch). What only
one backend has (the heap backend's dirty key groups, RocksDB's instance) is tested in
``test_heap_backend.py`` and ``test_rocksdb_backend.py``.
"""

from __future__ import annotations

from collections import namedtuple
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from enum import IntEnum, StrEnum

import pytest
from keyed_backends import G1, G2, MAX_P, RANGE, AverageAgg, stored_entries

from lockgate.common import Row
from lockgate.datastream.functions import ReduceFunction
from lockgate.datastream.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    ReducingState,
    ReducingStateDescriptor,
    ValueState,
    ValueStateDescriptor,
)
from lockgate.state.key_groups import NO_KEY_GROUP, key_group_range


def add(a, b):
    return a + b


# ValueState ----------------------------------------------------------------------------------


def test_value_state(new_backend):
    b = new_backend()
    state = b.get_state(ValueStateDescriptor("v"))
    assert isinstance(state, ValueState)
    b.set_current_key(G1, "k")
    assert state.value() is None
    state.update(5)
    assert state.value() == 5
    state.update({"x": 1})
    assert state.value() == {"x": 1}
    state.clear()
    assert state.value() is None
    state.clear()  # clearing an unset value is fine
    assert state.value() is None


def test_value_state_update_none_reads_back_as_unset(new_backend):
    b = new_backend()
    state = b.get_state(ValueStateDescriptor("v"))
    b.set_current_key(G1, "k")
    state.update(1)
    state.update(None)
    assert state.value() is None
    assert stored_entries(b) == 0


def test_falsy_values_are_kept(new_backend):
    b = new_backend()
    state = b.get_state(ValueStateDescriptor("v"))
    b.set_current_key(G1, "k")
    for falsy in (0, "", False, [], 0.0):
        state.update(falsy)
        assert state.value() == falsy
        assert type(state.value()) is type(falsy)


def test_states_are_isolated_between_keys_and_key_groups(new_backend):
    # A key has one key group (its hash decides), so every cell has a key of its own; the
    # heap backend's test_same_key_in_two_key_groups_is_two_cells goes beyond that.
    b = new_backend()
    state = b.get_state(ValueStateDescriptor("v"))
    cells = [(G1, "a"), (G1, "b"), (G2, "c"), (60, 1), (60, (1, "x")), (61, (1, "y"))]
    for i, (group, key) in enumerate(cells):
        b.set_current_key(group, key)
        state.update(i)
    for i, (group, key) in enumerate(cells):
        b.set_current_key(group, key)
        assert state.value() == i
        assert b.get_current_key() == key
    b.set_current_key(G1, "a")
    state.clear()
    assert state.value() is None
    b.set_current_key(G1, "b")  # same key group, other key: untouched
    assert state.value() == 1
    b.set_current_key(G2, "a")  # a key never set
    assert state.value() is None
    b.set_current_key(G2, "c")
    assert state.value() == 2


def test_states_with_different_names_are_isolated(new_backend):
    b = new_backend()
    first = b.get_state(ValueStateDescriptor("first"))
    second = b.get_state(ValueStateDescriptor("second"))
    b.set_current_key(G1, "k")
    first.update("one")
    assert second.value() is None
    second.update("two")
    assert first.value() == "one"


# ListState -----------------------------------------------------------------------------------


def test_list_state(new_backend):
    b = new_backend()
    state = b.get_state(ListStateDescriptor("l"))
    assert isinstance(state, ListState)
    b.set_current_key(G1, "k")
    assert list(state.get()) == []
    assert list(state) == []
    state.add(1)
    state.add(2)
    assert list(state.get()) == [1, 2]
    state.add_all([3, 4])
    assert list(state.get()) == [1, 2, 3, 4]
    assert list(state) == [1, 2, 3, 4]
    state.update([9, 8])
    assert list(state.get()) == [9, 8]
    state.clear()
    assert list(state.get()) == []


def test_list_state_update_with_empty_list_clears(new_backend):
    b = new_backend()
    state = b.get_state(ListStateDescriptor("l"))
    b.set_current_key(G1, "k")
    state.add(1)
    state.update([])
    assert list(state.get()) == []
    assert stored_entries(b) == 0


def test_list_state_update_copies_its_argument(new_backend):
    b = new_backend()
    state = b.get_state(ListStateDescriptor("l"))
    b.set_current_key(G1, "k")
    values = [1, 2]
    state.update(values)
    values.append(3)
    assert list(state.get()) == [1, 2]


def test_list_state_add_all_empty_on_unset_key_stores_nothing(new_backend):
    b = new_backend()
    state = b.get_state(ListStateDescriptor("l"))
    b.set_current_key(G1, "k")
    state.add_all([])
    assert list(state.get()) == []
    assert stored_entries(b) == 0


def test_list_state_rejects_none(new_backend):
    b = new_backend()
    state = b.get_state(ListStateDescriptor("l"))
    b.set_current_key(G1, "k")
    with pytest.raises(ValueError, match="None"):
        state.add(None)
    assert list(state.get()) == []
    with pytest.raises(ValueError, match="None"):
        state.add_all([1, None])


def test_list_state_is_per_key(new_backend):
    b = new_backend()
    state = b.get_state(ListStateDescriptor("l"))
    b.set_current_key(G1, "a")
    state.add("a1")
    b.set_current_key(G1, "b")
    state.add("b1")
    b.set_current_key(G2, "c")
    assert list(state.get()) == []
    b.set_current_key(G1, "a")
    assert list(state.get()) == ["a1"]


def test_list_state_get_is_not_a_live_view(new_backend):
    b = new_backend()
    state = b.get_state(ListStateDescriptor("l"))
    b.set_current_key(G1, "k")
    state.add(1)
    got = list(state.get())
    state.add(2)
    assert got == [1]
    assert list(state.get()) == [1, 2]


# MapState ------------------------------------------------------------------------------------


def test_map_state_methods(new_backend):
    b = new_backend()
    state = b.get_state(MapStateDescriptor("m"))
    assert isinstance(state, MapState)
    b.set_current_key(G1, "k")
    assert state.is_empty()
    assert state.get("missing") is None
    assert not state.contains("missing")
    assert list(state.keys()) == [] and list(state.values()) == [] and list(state.items()) == []
    state.put("a", 1)
    state.put_all({"b": 2, "c": 3})
    assert not state.is_empty()
    assert state.get("a") == 1
    assert state.contains("b")
    assert sorted(state.keys()) == ["a", "b", "c"]
    assert sorted(state.values()) == [1, 2, 3]
    assert sorted(state.items()) == [("a", 1), ("b", 2), ("c", 3)]
    state.put("a", 10)
    assert state.get("a") == 10
    state.remove("a")
    assert state.get("a") is None
    assert not state.contains("a")
    state.remove("never-there")  # no error, as in Flink
    assert sorted(state.keys()) == ["b", "c"]
    state.clear()
    assert state.is_empty()
    assert state.get("b") is None


def test_map_state_python_protocols(new_backend):
    b = new_backend()
    state = b.get_state(MapStateDescriptor("m"))
    b.set_current_key(G1, "k")
    state["x"] = 1
    state["y"] = 2
    assert state["x"] == 1
    assert state["missing"] is None
    assert "x" in state
    assert "z" not in state
    assert sorted(state) == ["x", "y"]
    del state["x"]
    assert "x" not in state
    assert list(iter(state)) == ["y"]


def test_map_state_is_safe_to_mutate_during_iteration(new_backend):
    b = new_backend()
    state = b.get_state(MapStateDescriptor("m"))
    b.set_current_key(G1, "k")
    state.put_all({i: i for i in range(5)})
    for key in state:
        state.remove(key)
    assert state.is_empty()
    state.put_all({i: i for i in range(5)})
    for key, _ in state.items():
        state.put(key + 10, key)
        state.remove(key)
    assert sorted(state.keys()) == list(range(10, 15))


def test_map_state_removing_the_last_entry_drops_the_key(new_backend):
    b = new_backend()
    state = b.get_state(MapStateDescriptor("m"))
    b.set_current_key(G1, "k")
    state.put("a", 1)
    state.remove("a")
    assert state.is_empty()
    assert stored_entries(b) == 0


def test_map_state_is_per_key(new_backend):
    b = new_backend()
    state = b.get_state(MapStateDescriptor("m"))
    b.set_current_key(G1, "a")
    state.put("f", 1)
    b.set_current_key(G1, "b")
    assert state.get("f") is None
    assert state.is_empty()
    state.put("f", 2)
    b.set_current_key(G1, "a")
    assert state.get("f") == 1
    state.clear()
    b.set_current_key(G1, "b")
    assert state.get("f") == 2


def test_map_state_put_all_of_nothing_stores_nothing(new_backend):
    b = new_backend()
    state = b.get_state(MapStateDescriptor("m"))
    b.set_current_key(G1, "k")
    state.put_all({})
    assert state.is_empty()
    assert stored_entries(b) == 0


def test_map_state_keys_and_values_of_any_type(new_backend):
    b = new_backend()
    state = b.get_state(MapStateDescriptor("m"))
    b.set_current_key(G1, ("user", 7))
    entries = {
        None: "none",
        0: "zero",
        -1: "minus one",
        2**80: "big",
        1.5: "float",
        "": "empty string",
        "ß": "unicode",
        b"\x00\xff": "bytes",
        (): "empty tuple",
        (1, ("a", b"b")): "nested",
        frozenset({1, 2}): "pickled",
    }
    state.put_all(entries)
    assert {k: state.get(k) for k in entries} == entries
    assert dict(state.items()) == entries
    assert state.get(0.0) == "zero" and state.get(False) == "zero"  # the same dict key


def test_map_state_none_value_is_stored_as_such(new_backend):
    """PyFlink allows None map values; the entry exists and reads back as None."""
    b = new_backend()
    state = b.get_state(MapStateDescriptor("m"))
    b.set_current_key(G1, "k")
    state.put("a", None)
    assert state.get("a") is None
    assert list(state.items()) == [("a", None)]
    assert not state.is_empty()


# ReducingState -------------------------------------------------------------------------------


def test_reducing_state_with_callable(new_backend):
    calls = []

    def add_and_log(a, b):
        calls.append((a, b))
        return a + b

    b = new_backend()
    state = b.get_state(ReducingStateDescriptor("r", add_and_log))
    assert isinstance(state, ReducingState)
    b.set_current_key(G1, "k")
    assert state.get() is None
    state.add(5)
    assert state.get() == 5
    assert calls == []  # the first value is stored as is
    state.add(7)
    assert state.get() == 12
    assert calls == [(5, 7)]
    state.clear()
    assert state.get() is None
    state.add(1)
    assert state.get() == 1
    assert calls == [(5, 7)]


def test_reducing_state_with_reduce_function_and_per_key_values(new_backend):
    class Max(ReduceFunction):
        def reduce(self, value1, value2):
            return max(value1, value2)

    b = new_backend()
    state = b.get_state(ReducingStateDescriptor("r", Max()))
    for key, values in {"a": [3, 9, 1], "b": [2]}.items():
        b.set_current_key(G1, key)
        for value in values:
            state.add(value)
    b.set_current_key(G1, "a")
    assert state.get() == 9
    b.set_current_key(G1, "b")
    assert state.get() == 2
    b.set_current_key(G1, "c")
    assert state.get() is None


def test_reducing_state_stores_a_falsy_first_value(new_backend):
    b = new_backend()
    state = b.get_state(ReducingStateDescriptor("r", add))
    b.set_current_key(G1, "k")
    state.add(0)
    assert state.get() == 0
    state.add(3)
    assert state.get() == 3


def test_reducing_state_descriptor_needs_a_callable():
    with pytest.raises(TypeError, match="ReduceFunction"):
        ReducingStateDescriptor("r", 42)


# AggregatingState ----------------------------------------------------------------------------


def test_aggregating_state(new_backend):
    agg = AverageAgg()
    b = new_backend()
    state = b.get_state(AggregatingStateDescriptor("a", agg))
    assert isinstance(state, AggregatingState)
    b.set_current_key(G1, "k")
    assert state.get() is None
    assert agg.results == 0  # get_result is not called without an accumulator
    state.add(2)
    assert state.get() == 2
    state.add(4)
    assert state.get() == 3
    b.set_current_key(G2, "other")
    assert state.get() is None
    state.add(10)
    assert state.get() == 10
    b.set_current_key(G1, "k")
    assert state.get() == 3
    state.clear()
    assert state.get() is None
    state.add(1)
    assert state.get() == 1


def test_aggregating_state_descriptor_needs_an_aggregate_function():
    with pytest.raises(TypeError, match="create_accumulator"):
        AggregatingStateDescriptor("a", lambda x: x)


def test_aggregating_state_add_none_clears_like_pyflink(new_backend):
    b = new_backend()
    state = b.get_state(AggregatingStateDescriptor("a", AverageAgg()))
    b.set_current_key(G1, "k")
    state.add(2)
    state.add(None)
    assert state.get() is None
    assert stored_entries(b) == 0


# Registration --------------------------------------------------------------------------------


def test_same_name_returns_the_same_state(new_backend):
    b = new_backend()
    first = b.get_state(ValueStateDescriptor("v"))
    assert b.get_state(ValueStateDescriptor("v")) is first
    assert b.kinds == {"v": "value"}


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (ValueStateDescriptor("s"), ListStateDescriptor("s")),
        (ListStateDescriptor("s"), MapStateDescriptor("s")),
        (MapStateDescriptor("s"), ReducingStateDescriptor("s", max)),
        (ReducingStateDescriptor("s", max), AggregatingStateDescriptor("s", AverageAgg())),
        (AggregatingStateDescriptor("s", AverageAgg()), ValueStateDescriptor("s")),
    ],
)
def test_state_kind_conflict_raises(new_backend, first, second):
    b = new_backend()
    b.get_state(first)
    with pytest.raises(ValueError, match=rf"'s'.*{first.kind}.*{second.kind}"):
        b.get_state(second)


def test_descriptor_needs_a_name():
    with pytest.raises(ValueError, match="name"):
        ValueStateDescriptor("")


# Keys ----------------------------------------------------------------------------------------

Point = namedtuple("Point", "x y")


class Color(IntEnum):
    RED = 1


class Flavor(StrEnum):
    SWEET = "sweet"


# Values that are one dict key in Python (equal, with equal hashes). The key hash puts each
# pair in the same key group, and the heap backend's dicts treat them as one key.
EQUAL_KEYS = {
    "int-float": (1, 1.0),
    "int-bool": (1, True),
    "zero-negative-zero": (0, -0.0),
    "big-int-float": (2**70, 2.0**70),
    "tuples": ((1, "a"), (1.0, "a")),
    "decimal-scale": (Decimal("1.0"), Decimal("1.00")),
    "decimal-int": (Decimal(7), 7),
    "int-enum": (Color.RED, 1),
    "str-enum": (Flavor.SWEET, "sweet"),
    "namedtuple": (Point(1, 2), (1, 2)),
    "row": (Row("a", 1), Row("a", 1.0)),
    "aware-datetimes": (
        datetime(2026, 1, 1, 12, tzinfo=UTC),
        datetime(2026, 1, 1, 13, tzinfo=timezone(timedelta(hours=1))),
    ),
}


@pytest.mark.parametrize("pair", EQUAL_KEYS.values(), ids=EQUAL_KEYS.keys())
def test_equal_keys_are_one_key(new_backend, pair):
    first, second = pair
    assert first == second and hash(first) == hash(second)
    b = new_backend()
    value = b.get_state(ValueStateDescriptor("v"))
    mapping = b.get_state(MapStateDescriptor("m"))
    b.set_current_key(60, first)
    value.update("set through the first")
    mapping.put(first, 1)
    b.set_current_key(60, second)
    assert value.value() == "set through the first"
    mapping.put(second, 2)  # the same map key: replaces
    assert mapping.get(first) == 2
    assert len(list(mapping.items())) == 1


# Key groups ----------------------------------------------------------------------------------


@pytest.mark.parametrize("group", [RANGE.end + 1, RANGE.start - 1], ids=["above", "below"])
def test_key_group_outside_the_range_is_not_silently_accepted(new_backend, group):
    b = new_backend()
    state = b.get_state(ValueStateDescriptor("v"))
    b.set_current_key(group, "k")
    with pytest.raises(ValueError, match=f"key group {group} is outside this subtask's range"):
        state.update(1)
    # Nothing landed in a key group of the range either
    for inside in (RANGE.start, RANGE.end):
        b.set_current_key(inside, "k")
        assert state.value() is None
    assert stored_entries(b) == 0


def test_keyed_state_without_a_current_key_fails_saying_so(new_backend):
    """As on the broadcast side of a KeyedBroadcastProcessFunction (Flink: "No key set")."""
    b = new_backend()
    states = one_state_of_each_kind(b)
    b.set_current_key(NO_KEY_GROUP, None)
    accesses = [
        states["v"].value,
        states["l"].get,
        lambda: list(states["m"].items()),  # read lazily
        lambda: states["m"].put("x", 1),
        states["r"].get,
        states["a"].get,
        *(state.clear for state in states.values()),
    ]
    for access in accesses:
        with pytest.raises(RuntimeError, match=r"^no key is current: keyed state is read"):
            access()
    assert stored_entries(b) == 0


# Many keys, persisted and restored -----------------------------------------------------------


def one_state_of_each_kind(b):
    return {
        "v": b.get_state(ValueStateDescriptor("v")),
        "l": b.get_state(ListStateDescriptor("l")),
        "m": b.get_state(MapStateDescriptor("m")),
        "r": b.get_state(ReducingStateDescriptor("r", add)),
        "a": b.get_state(AggregatingStateDescriptor("a", AverageAgg())),
    }


def cells(keys, groups=(G1, 60, G2)):
    """(key group, key): each key in one key group, the keys spread over ``groups``."""
    return [(groups[i % len(groups)], key) for i, key in enumerate(keys)]


def fill(b, keys) -> None:
    states = one_state_of_each_kind(b)
    for group, key in cells(keys):
        b.set_current_key(group, key)
        states["v"].update(f"{group}-{key}")
        states["l"].add_all([group, key])
        states["m"].put(key, group)
        states["m"].put("other", -group)
        states["r"].add(group)
        states["r"].add(1)
        states["a"].add(group)


def check(b, keys, skip=frozenset()) -> None:
    states = one_state_of_each_kind(b)
    for group, key in cells(keys):
        if group in skip:
            continue
        b.set_current_key(group, key)
        assert states["v"].value() == f"{group}-{key}"
        assert list(states["l"].get()) == [group, key]
        assert sorted(states["m"].items(), key=repr) == sorted(
            [(key, group), ("other", -group)], key=repr
        )
        assert states["r"].get() == group + 1
        assert states["a"].get() == group


KEYS = ["x", ("y", 1), 7, b"z"]


def test_many_keys_through_every_state_kind(new_backend):
    """Hundreds of keys: with a two-key cache most reads come back from RocksDB."""
    b = new_backend()
    keys = [f"key-{i}" for i in range(300)] + KEYS
    fill(b, keys)
    check(b, keys)
    states = one_state_of_each_kind(b)
    changed = [(i, key) for i, (group, key) in enumerate(cells(keys)) if group == 60]
    for i, key in changed:  # in key group 60: change every other key, clear every third
        b.set_current_key(60, key)
        if i % 2 == 0:
            states["v"].update("changed")
            states["l"].add("more")
            states["r"].add(100)
        if i % 3 == 0:
            for state in states.values():
                state.clear()
    for i, key in changed:
        b.set_current_key(60, key)
        if i % 3 == 0:
            assert states["v"].value() is None and list(states["l"].get()) == []
            assert states["m"].is_empty() and states["r"].get() is None
            assert states["a"].get() is None
        elif i % 2 == 0:
            assert states["v"].value() == "changed"
            assert list(states["l"].get()) == [60, key, "more"]
            assert states["r"].get() == 161
        else:
            assert states["v"].value() == f"60-{key}"
            assert states["r"].get() == 61
    check(b, keys, skip={60})  # other key groups untouched


def test_state_survives_a_snapshot_and_restore(new_backend):
    b = new_backend()
    fill(b, KEYS)
    restored = new_backend.reopen(b)
    assert restored.kinds == b.kinds
    check(restored, KEYS)
    # The restored backend is independent of the original
    value = restored.get_state(ValueStateDescriptor("v"))
    restored.set_current_key(G1, "x")
    value.update("changed")
    b.set_current_key(G1, "x")
    assert b.get_state(ValueStateDescriptor("v")).value() == f"{G1}-x"


def test_restore_with_a_state_registered_before_the_values_are_read(new_backend):
    """States obtained right after the restore see the restored values, and a state first
    registered after the restore is empty and takes its own place."""
    b = new_backend()
    fill(b, KEYS)
    restored = new_backend.reopen(b)
    fresh = restored.get_state(ValueStateDescriptor("fresh"))
    check(restored, KEYS)
    restored.set_current_key(G1, "x")
    assert fresh.value() is None
    fresh.update(1)
    assert restored.get_state(ValueStateDescriptor("v")).value() == f"{G1}-x"


def test_restore_into_a_wider_key_group_range(new_backend):
    """All key groups of one subtask restored into a subtask owning every key group."""
    b = new_backend()
    fill(b, KEYS)
    whole = key_group_range(MAX_P, 1, 0)
    restored = new_backend.reopen(b, key_groups=whole)
    check(restored, KEYS)
    value = restored.get_state(ValueStateDescriptor("v"))
    restored.set_current_key(0, "new")  # a key group b never had
    assert value.value() is None
    value.update(1)
    assert value.value() == 1
