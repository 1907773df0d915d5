"""``keys(state, key group)`` of both keyed backends: what ``apply_to_keyed_state`` visits."""

from __future__ import annotations

from keyed_backends import G1, G2

from lockgate.state.descriptors import MapStateDescriptor, ValueStateDescriptor


def test_keys_lists_each_key_with_the_state_once_per_key_group(new_backend):
    backend = new_backend()
    values = backend.get_state(ValueStateDescriptor("v"))
    maps = backend.get_state(MapStateDescriptor("m"))
    for group, key in [(G1, "a"), (G1, ("b", 2)), (G2, "c")]:
        backend.set_current_key(group, key)
        values.update(1)
        maps.put("x", 1)
        maps.put("y", 2)
    backend.set_current_key(G2, "only-in-m")
    maps.put("z", 3)
    assert sorted(map(repr, backend.keys("v", G1))) == sorted(map(repr, ["a", ("b", 2)]))
    assert list(backend.keys("v", G2)) == ["c"]
    assert sorted(backend.keys("m", G2)) == ["c", "only-in-m"]
    assert list(backend.keys("unknown", G1)) == []
    backend.set_current_key(G2, "c")
    values.clear()
    assert list(backend.keys("v", G2)) == []
