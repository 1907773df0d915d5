"""What only HeapKeyedStateBackend has: dirty key groups, and key groups' contents installed
anywhere. The state semantics it shares with RocksDB are in ``test_keyed_state_backends.py``."""

from __future__ import annotations

import pytest
from keyed_backends import AverageAgg

from lockgate.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from lockgate.state.heap import HeapKeyedStateBackend
from lockgate.state.key_groups import KeyGroupRange, key_group_range

MAX_P = 128
RANGE = key_group_range(MAX_P, 3, 1)  # key groups 43..85
G1, G2 = 43, 85  # first and last key group of the range


def make_backend(key_groups: KeyGroupRange = RANGE) -> HeapKeyedStateBackend:
    return HeapKeyedStateBackend(key_groups, MAX_P)


# Key groups ----------------------------------------------------------------------------------


def test_same_key_in_two_key_groups_is_two_cells():
    """Beyond what a job can do (a key's hash fixes its key group): the heap backend keeps
    one dict per key group. RocksDB's write-back cache is keyed by the key alone."""
    b = make_backend()
    value = b.get_state(ValueStateDescriptor("v"))
    listing = b.get_state(ListStateDescriptor("l"))
    b.set_current_key(G1, "a")
    value.update(1)
    listing.add("a1")
    b.set_current_key(G2, "a")
    assert value.value() is None
    assert list(listing.get()) == []
    value.update(2)
    b.set_current_key(G1, "a")
    value.clear()
    b.set_current_key(G2, "a")
    assert value.value() == 2


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
