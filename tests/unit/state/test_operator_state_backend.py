"""Operator state: list, union list and broadcast state, their file, and their restore."""

from __future__ import annotations

import pytest

from lockgate.common import Time
from lockgate.core.fs.storage import Storage
from lockgate.datastream.state import StateTtlConfig
from lockgate.state.descriptors import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor
from lockgate.state.operator_state_backend import OperatorStateBackend, ReadOnlyView
from lockgate.state.operator_state_handle import (
    OperatorStateFormatError,
    OperatorStateHandle,
    OperatorStatePart,
)

WHERE = "operator 'buffer' (uid 'buffer', subtask 0)"


def filled(tmp_path) -> tuple[Storage, OperatorStateHandle]:
    storage = Storage(str(tmp_path))
    backend = OperatorStateBackend(WHERE, [])
    backend.get_list_state(ListStateDescriptor("split")).update([1, (2, "two"), 3])
    backend.get_union_list_state(ListStateDescriptor("union")).add_all(["u0", "u1"])
    rules = backend.get_broadcast_state(MapStateDescriptor("rules"))
    rules.put("a", 1)
    rules.put_all({"b": [2], "c": {"x": 3}})
    rules.remove("a")
    handle = backend.snapshot(storage, "op/0-t.lgos", reuse=True)
    assert handle is not None
    return storage, handle


def test_states_restore_from_their_file_with_mode_and_order(tmp_path):
    _, handle = filled(tmp_path)
    assert {n: (m.mode, m.count) for n, m in handle.states.items()} == {
        "split": ("split", 3),
        "union": ("union", 2),
        "rules": ("broadcast", 2),
    }
    restored = OperatorStateBackend(WHERE, [OperatorStatePart.whole(handle)])
    assert restored.get_list_state(ListStateDescriptor("split")).get() == [1, (2, "two"), 3]
    assert list(restored.get_union_list_state(ListStateDescriptor("union"))) == ["u0", "u1"]
    rules = restored.get_broadcast_state(MapStateDescriptor("rules"))
    assert dict(rules.items()) == {"b": [2], "c": {"x": 3}}
    assert OperatorStateHandle.from_json(handle.to_json(), "here") == handle


def test_a_part_takes_only_its_element_ranges(tmp_path):
    _, handle = filled(tmp_path)
    part = OperatorStatePart(handle, {"split": (1, 3)})
    restored = OperatorStateBackend(WHERE, [part, OperatorStatePart(handle, {"split": (0, 1)})])
    assert restored.get_list_state(ListStateDescriptor("split")).get() == [(2, "two"), 3, 1]
    assert restored.lists.keys() == {"split"}  # the states the parts do not name stay out
    assert OperatorStatePart.from_json(part.to_json(), "here") == part


def test_a_state_asked_for_in_another_mode_fails_naming_it(tmp_path):
    _, handle = filled(tmp_path)
    restored = OperatorStateBackend(WHERE, [OperatorStatePart.whole(handle)])
    with pytest.raises(ValueError, match=r"subtask 0\): state 'split' is list state, not union"):
        restored.get_union_list_state(ListStateDescriptor("split"))
    with pytest.raises(ValueError, match=r"state 'rules' is broadcast state, not list state"):
        restored.get_list_state(ListStateDescriptor("rules"))
    with pytest.raises(ValueError, match=r"state 'union' is union list state, not broadcast"):
        restored.get_broadcast_state(MapStateDescriptor("union"))
    with pytest.raises(ValueError, match=r"state 'split' is list state, not broadcast"):
        restored.get_broadcast_state(MapStateDescriptor("split"))
    with pytest.raises(TypeError, match=r"get_list_state needs a ListStateDescriptor"):
        restored.get_list_state(ValueStateDescriptor("v"))
    with_ttl = MapStateDescriptor("rules")
    with_ttl.enable_time_to_live(StateTtlConfig.new_builder(Time.hours(1)).build())
    with pytest.raises(ValueError, match=r"state 'rules': time-to-live is for keyed state"):
        restored.get_broadcast_state(with_ttl)


def test_an_unchanged_state_names_its_last_file_again(tmp_path):
    storage = Storage(str(tmp_path))
    backend = OperatorStateBackend(WHERE, [])
    state = backend.get_list_state(ListStateDescriptor("split"))
    state.add("x")
    first = backend.snapshot(storage, "op/0-a.lgos", reuse=True)
    assert backend.snapshot(storage, "op/0-b.lgos", reuse=True) == first
    assert not (tmp_path / "op" / "0-b.lgos").exists()
    state.add("y")
    third = backend.snapshot(storage, "op/0-c.lgos", reuse=True)
    assert third is not None and third.file.endswith("0-c.lgos")
    assert OperatorStateBackend(WHERE, []).snapshot(storage, "op/none", reuse=True) is None


def test_a_damaged_file_is_refused_naming_it(tmp_path):
    _, handle = filled(tmp_path)
    path = tmp_path / "op" / "0-t.lgos"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(OperatorStateFormatError, match=r"0-t.lgos is damaged"):
        OperatorStateBackend(WHERE, [OperatorStatePart.whole(handle)])


def test_list_state_refuses_none_and_the_read_only_view_refuses_changes(tmp_path):
    backend = OperatorStateBackend(WHERE, [])
    with pytest.raises(ValueError, match="does not take None"):
        backend.get_list_state(ListStateDescriptor("split")).add(None)
    rules = backend.get_broadcast_state(MapStateDescriptor("rules"))
    rules["k"] = "v"
    view = ReadOnlyView(rules, "rules")
    assert view["k"] == "v" and "k" in view and list(view) == ["k"] and not view.is_empty()
    with pytest.raises(TypeError, match="read-only"):
        view.clear()
    assert not hasattr(view, "put")
