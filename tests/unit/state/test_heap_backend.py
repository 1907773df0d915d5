"""HeapKeyedStateBackend and its states, with PyFlink's method set and empty semantics."""

from __future__ import annotations

import pytest

from lockgate.datastream.functions import AggregateFunction, ReduceFunction
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
from lockgate.state.heap import HeapKeyedStateBackend
from lockgate.state.key_groups import KeyGroupRange, key_group_range

MAX_P = 128
RANGE = key_group_range(MAX_P, 3, 1)  # key groups 43..85
G1, G2 = 43, 85  # first and last key group of the range


def make_backend(key_groups: KeyGroupRange = RANGE) -> HeapKeyedStateBackend:
    return HeapKeyedStateBackend(key_groups, MAX_P)


class AverageAgg(AggregateFunction):
    """Accumulator (sum, count); result: the average."""

    def __init__(self):
        self.results = 0

    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return (accumulator[0] + value, accumulator[1] + 1)

    def get_result(self, accumulator):
        self.results += 1
        return accumulator[0] / accumulator[1]

    def merge(self, acc_a, acc_b):
        return (acc_a[0] + acc_b[0], acc_a[1] + acc_b[1])


# ValueState ----------------------------------------------------------------------------------


def test_value_state():
    b = make_backend()
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


def test_value_state_update_none_reads_back_as_unset():
    b = make_backend()
    state = b.get_state(ValueStateDescriptor("v"))
    b.set_current_key(G1, "k")
    state.update(1)
    state.update(None)
    assert state.value() is None
    assert b.num_entries() == 0


def test_falsy_values_are_kept():
    b = make_backend()
    state = b.get_state(ValueStateDescriptor("v"))
    b.set_current_key(G1, "k")
    for falsy in (0, "", False, [], 0.0):
        state.update(falsy)
        assert state.value() == falsy
        assert type(state.value()) is type(falsy)


def test_states_are_isolated_between_keys_and_key_groups():
    b = make_backend()
    state = b.get_state(ValueStateDescriptor("v"))
    cells = [(G1, "a"), (G1, "b"), (G2, "a"), (60, 1), (60, (1, "x"))]
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
    b.set_current_key(G2, "a")  # same key, other key group: untouched
    assert state.value() == 2
    b.set_current_key(G1, "b")
    assert state.value() == 1


def test_states_with_different_names_are_isolated():
    b = make_backend()
    first = b.get_state(ValueStateDescriptor("first"))
    second = b.get_state(ValueStateDescriptor("second"))
    b.set_current_key(G1, "k")
    first.update("one")
    assert second.value() is None
    second.update("two")
    assert first.value() == "one"


# ListState -----------------------------------------------------------------------------------


def test_list_state():
    b = make_backend()
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


def test_list_state_update_with_empty_list_clears():
    b = make_backend()
    state = b.get_state(ListStateDescriptor("l"))
    b.set_current_key(G1, "k")
    state.add(1)
    state.update([])
    assert list(state.get()) == []
    assert b.num_entries() == 0


def test_list_state_update_copies_its_argument():
    b = make_backend()
    state = b.get_state(ListStateDescriptor("l"))
    b.set_current_key(G1, "k")
    values = [1, 2]
    state.update(values)
    values.append(3)
    assert list(state.get()) == [1, 2]


def test_list_state_add_all_empty_on_unset_key_stores_nothing():
    b = make_backend()
    state = b.get_state(ListStateDescriptor("l"))
    b.set_current_key(G1, "k")
    state.add_all([])
    assert list(state.get()) == []
    assert b.num_entries() == 0


def test_list_state_rejects_none():
    b = make_backend()
    state = b.get_state(ListStateDescriptor("l"))
    b.set_current_key(G1, "k")
    with pytest.raises(ValueError, match="None"):
        state.add(None)
    assert list(state.get()) == []


def test_list_state_is_per_key():
    b = make_backend()
    state = b.get_state(ListStateDescriptor("l"))
    b.set_current_key(G1, "a")
    state.add("a1")
    b.set_current_key(G1, "b")
    state.add("b1")
    b.set_current_key(G2, "a")
    assert list(state.get()) == []
    b.set_current_key(G1, "a")
    assert list(state.get()) == ["a1"]


# MapState ------------------------------------------------------------------------------------


def test_map_state_methods():
    b = make_backend()
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


def test_map_state_python_protocols():
    b = make_backend()
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


def test_map_state_views_are_snapshots_safe_to_mutate_during_iteration():
    b = make_backend()
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


def test_map_state_removing_the_last_entry_drops_the_key():
    b = make_backend()
    state = b.get_state(MapStateDescriptor("m"))
    b.set_current_key(G1, "k")
    state.put("a", 1)
    state.remove("a")
    assert state.is_empty()
    assert b.num_entries() == 0
    assert b.group_contents(G1) == {}


def test_map_state_is_per_key():
    b = make_backend()
    state = b.get_state(MapStateDescriptor("m"))
    b.set_current_key(G1, "a")
    state.put("f", 1)
    b.set_current_key(G1, "b")
    assert state.get("f") is None
    assert state.is_empty()
    state.put("f", 2)
    b.set_current_key(G1, "a")
    assert state.get("f") == 1


def test_map_state_put_all_of_nothing_stores_nothing():
    b = make_backend()
    state = b.get_state(MapStateDescriptor("m"))
    b.set_current_key(G1, "k")
    state.put_all({})
    assert state.is_empty()
    assert b.num_entries() == 0
    assert b.group_contents(G1) == {}


# ReducingState -------------------------------------------------------------------------------


def test_reducing_state_with_callable():
    calls = []

    def add(a, b):
        calls.append((a, b))
        return a + b

    b = make_backend()
    state = b.get_state(ReducingStateDescriptor("r", add))
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


def test_reducing_state_with_reduce_function_and_per_key_values():
    class Max(ReduceFunction):
        def reduce(self, value1, value2):
            return max(value1, value2)

    b = make_backend()
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


def test_reducing_state_stores_a_falsy_first_value():
    b = make_backend()
    state = b.get_state(ReducingStateDescriptor("r", lambda a, b: a + b))
    b.set_current_key(G1, "k")
    state.add(0)
    assert state.get() == 0
    state.add(3)
    assert state.get() == 3


def test_reducing_state_descriptor_needs_a_callable():
    with pytest.raises(TypeError, match="ReduceFunction"):
        ReducingStateDescriptor("r", 42)


# AggregatingState ----------------------------------------------------------------------------


def test_aggregating_state():
    agg = AverageAgg()
    b = make_backend()
    state = b.get_state(AggregatingStateDescriptor("a", agg))
    assert isinstance(state, AggregatingState)
    b.set_current_key(G1, "k")
    assert state.get() is None
    assert agg.results == 0  # get_result is not called without an accumulator
    state.add(2)
    assert state.get() == 2
    state.add(4)
    assert state.get() == 3
    b.set_current_key(G2, "k")
    assert state.get() is None
    state.add(10)
    assert state.get() == 10
    b.set_current_key(G1, "k")
    state.clear()
    assert state.get() is None
    state.add(1)
    assert state.get() == 1


def test_aggregating_state_descriptor_needs_an_aggregate_function():
    with pytest.raises(TypeError, match="create_accumulator"):
        AggregatingStateDescriptor("a", lambda x: x)


def test_aggregating_state_add_none_clears_like_pyflink():
    b = make_backend()
    state = b.get_state(AggregatingStateDescriptor("a", AverageAgg()))
    b.set_current_key(G1, "k")
    state.add(2)
    state.add(None)
    assert state.get() is None


# Registration --------------------------------------------------------------------------------


def test_same_name_returns_the_same_state():
    b = make_backend()
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
def test_state_kind_conflict_raises(first, second):
    b = make_backend()
    b.get_state(first)
    with pytest.raises(ValueError, match=rf"'s'.*{first.kind}.*{second.kind}"):
        b.get_state(second)


def test_descriptor_needs_a_name():
    with pytest.raises(ValueError, match="name"):
        ValueStateDescriptor("")


# Dirty key groups ----------------------------------------------------------------------------


def test_dirty_groups_track_writes_as_absolute_key_groups():
    b = make_backend()
    value = b.get_state(ValueStateDescriptor("v"))
    listing = b.get_state(ListStateDescriptor("l"))
    assert b.take_dirty_groups() == []
    b.set_current_key(70, "a")
    value.update(1)
    b.set_current_key(G1, "b")
    listing.add(1)
    b.set_current_key(G2, "c")
    value.update(2)
    assert b.take_dirty_groups() == [G1, 70, G2]
    assert b.take_dirty_groups() == []  # taking resets


def test_reads_do_not_dirty():
    b = make_backend()
    states = [
        b.get_state(ValueStateDescriptor("v")),
        b.get_state(ListStateDescriptor("l")),
        b.get_state(MapStateDescriptor("m")),
        b.get_state(ReducingStateDescriptor("r", max)),
        b.get_state(AggregatingStateDescriptor("a", AverageAgg())),
    ]
    b.set_current_key(G1, "k")
    value, listing, mapping, reducing, aggregating = states
    value.value()
    list(listing.get())
    mapping.get("x")
    mapping.contains("x")
    list(mapping.keys())
    list(mapping.items())
    mapping.is_empty()
    reducing.get()
    aggregating.get()
    assert b.take_dirty_groups() == []


def test_no_op_removals_do_not_dirty():
    b = make_backend()
    value = b.get_state(ValueStateDescriptor("v"))
    mapping = b.get_state(MapStateDescriptor("m"))
    b.set_current_key(G1, "k")
    value.clear()
    mapping.clear()
    mapping.remove("absent")
    assert b.take_dirty_groups() == []


def one_state_of_each_kind(b):
    return {
        "v": b.get_state(ValueStateDescriptor("v")),
        "l": b.get_state(ListStateDescriptor("l")),
        "m": b.get_state(MapStateDescriptor("m")),
        "r": b.get_state(ReducingStateDescriptor("r", max)),
        "a": b.get_state(AggregatingStateDescriptor("a", AverageAgg())),
    }


@pytest.mark.parametrize(
    "write",
    [
        lambda s: s["v"].update(1),
        lambda s: s["l"].add(1),
        lambda s: s["l"].add_all([1, 2]),
        lambda s: s["l"].update([1]),
        lambda s: s["m"].put("a", 1),
        lambda s: s["m"].put_all({"a": 1}),
        lambda s: s["r"].add(1),
        lambda s: s["a"].add(1),
    ],
)
def test_every_write_dirties_its_key_group(write):
    b = make_backend()
    states = one_state_of_each_kind(b)
    b.set_current_key(60, "k")
    write(states)
    assert b.take_dirty_groups() == [60]


@pytest.mark.parametrize("name", ["v", "l", "m", "r", "a"])
def test_clearing_a_value_dirties_its_key_group(name):
    b = make_backend()
    states = one_state_of_each_kind(b)
    b.set_current_key(61, "k")
    {
        "v": lambda: states["v"].update(1),
        "l": lambda: states["l"].add(1),
        "m": lambda: states["m"].put("x", 1),
        "r": lambda: states["r"].add(1),
        "a": lambda: states["a"].add(1),
    }[name]()
    b.take_dirty_groups()
    states[name].clear()
    assert b.take_dirty_groups() == [61]
    assert b.num_entries() == 0


def test_map_remove_of_a_present_key_dirties():
    b = make_backend()
    mapping = b.get_state(MapStateDescriptor("m"))
    b.set_current_key(62, "k")
    mapping.put_all({"a": 1, "b": 2})
    b.take_dirty_groups()
    mapping.remove("a")
    assert b.take_dirty_groups() == [62]


# Out-of-range key groups ---------------------------------------------------------------------


def test_key_group_above_the_range_is_not_silently_accepted():
    b = make_backend()
    state = b.get_state(ValueStateDescriptor("v"))
    b.set_current_key(RANGE.end + 1, "k")
    with pytest.raises(KeyError):
        state.update(1)


def test_key_group_below_the_range_is_not_silently_accepted():
    b = make_backend()
    state = b.get_state(ValueStateDescriptor("v"))
    b.set_current_key(RANGE.start - 1, "k")  # 42: index -1, which is key group 85's dict
    with pytest.raises((ValueError, IndexError, KeyError)):
        state.update(1)
    assert b.group_contents(RANGE.end) == {}


# Group contents and install ------------------------------------------------------------------


def _fill(backend: HeapKeyedStateBackend) -> None:
    value = backend.get_state(ValueStateDescriptor("v"))
    listing = backend.get_state(ListStateDescriptor("l"))
    mapping = backend.get_state(MapStateDescriptor("m"))
    reducing = backend.get_state(ReducingStateDescriptor("r", lambda a, b: a + b))
    aggregating = backend.get_state(AggregatingStateDescriptor("a", AverageAgg()))
    for group in (G1, 50, G2):
        for key in ("x", ("y", 1)):
            backend.set_current_key(group, key)
            value.update(f"{group}-{key}")
            listing.add_all([group, key])
            mapping.put(key, group)
            reducing.add(group)
            reducing.add(1)
            aggregating.add(group)


def _check(backend: HeapKeyedStateBackend, groups) -> None:
    value = backend.get_state(ValueStateDescriptor("v"))
    listing = backend.get_state(ListStateDescriptor("l"))
    mapping = backend.get_state(MapStateDescriptor("m"))
    reducing = backend.get_state(ReducingStateDescriptor("r", lambda a, b: a + b))
    aggregating = backend.get_state(AggregatingStateDescriptor("a", AverageAgg()))
    for group in groups:
        for key in ("x", ("y", 1)):
            backend.set_current_key(group, key)
            assert value.value() == f"{group}-{key}"
            assert list(listing.get()) == [group, key]
            assert mapping.items() == [(key, group)]
            assert reducing.get() == group + 1
            assert aggregating.get() == group


def test_group_contents_lists_only_non_empty_states():
    b = make_backend()
    _fill(b)
    b.get_state(ValueStateDescriptor("unused"))
    contents = b.group_contents(50)
    assert set(contents) == {"v", "l", "m", "r", "a"}
    assert contents["v"] == {"x": "50-x", ("y", 1): "50-('y', 1)"}
    assert b.group_contents(60) == {}
    assert b.num_entries() == 3 * 2 * 5


def test_group_contents_install_group_round_trip_same_range():
    source = make_backend()
    _fill(source)
    target = make_backend()
    for group in RANGE:
        target.install_group(group, source.group_contents(group), source.kinds)
    assert target.kinds == source.kinds
    assert target.num_entries() == source.num_entries()
    _check(target, (G1, 50, G2))
    assert target.take_dirty_groups() == []  # a restore is not a change


def test_install_group_into_a_rescaled_backend():
    # One subtask (0..127) scaled out to three: the middle one takes 43..85.
    whole = make_backend(key_group_range(MAX_P, 1, 0))
    _fill(whole)
    middle = make_backend(RANGE)
    for group in RANGE:
        middle.install_group(group, whole.group_contents(group), whole.kinds)
    _check(middle, (G1, 50, G2))
    first = make_backend(key_group_range(MAX_P, 3, 0))
    for group in key_group_range(MAX_P, 3, 0):
        first.install_group(group, whole.group_contents(group), whole.kinds)
    assert first.num_entries() == 0


def test_install_group_is_seen_by_already_registered_states():
    source = make_backend()
    _fill(source)
    target = make_backend()
    value = target.get_state(ValueStateDescriptor("v"))
    target.install_group(50, source.group_contents(50), source.kinds)
    target.set_current_key(50, "x")
    assert value.value() == "50-x"
    value.update("changed")
    assert target.take_dirty_groups() == [50]


def test_install_group_with_conflicting_kind_raises():
    target = make_backend()
    target.get_state(ListStateDescriptor("s"))
    with pytest.raises(ValueError, match="'s'"):
        target.install_group(50, {"s": {"k": 1}}, {"s": "value"})
