"""Namespaced keyed state (per key and window) on every backend kind: namespaces are apart,
merge into one, survive a snapshot and restore, and a name is per window or per key."""

from __future__ import annotations

import pytest
from keyed_backends import G1, G2

from lockgate.datastream.functions import AggregateFunction
from lockgate.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)


class Average(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return accumulator[0] + value, accumulator[1] + 1

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, acc_a, acc_b):
        return acc_a[0] + acc_b[0], acc_a[1] + acc_b[1]


def at(backend, group, key, namespace):
    backend.ns_ctx.group = group
    backend.ns_ctx.key = (key, namespace)


def test_each_namespace_of_a_key_has_its_own_value(new_backend):
    backend = new_backend()
    contents = backend.get_state(ListStateDescriptor("contents"), namespaced=True)
    for group, key, window, value in [
        (G1, "a", (0, 10), 1),
        (G1, "a", (10, 20), 2),
        (G2, "b", (0, 10), 3),
        (G1, "a", (0, 10), 4),
    ]:
        at(backend, group, key, window)
        contents.add(value)
    at(backend, G1, "a", (0, 10))
    assert contents.get() == [1, 4]
    at(backend, G1, "a", (10, 20))
    assert contents.get() == [2]
    contents.clear()
    assert contents.get() == []
    at(backend, G2, "b", (0, 10))
    assert contents.get() == [3]


@pytest.mark.parametrize(
    ("descriptor", "values", "merged"),
    [
        (ListStateDescriptor("list"), [[1], [2, 3], [4]], [4, 1, 2, 3]),
        (ReducingStateDescriptor("sum", lambda a, b: a + b), [[1], [2, 3], [4]], 10),
        (AggregatingStateDescriptor("avg", Average()), [[1], [2, 3], [6]], 3.0),
    ],
)
def test_namespaces_merge_into_one(new_backend, descriptor, values, merged):
    backend = new_backend()
    state = backend.get_state(descriptor, namespaced=True)
    windows = [(0, 5), (3, 8), (7, 12)]
    for window, added in zip(windows, values, strict=True):
        at(backend, G1, "k", window)
        for value in added:
            state.add(value)
    at(backend, G1, "k", (7, 12))
    state.merge_namespaces((7, 12), [(0, 5), (3, 8), (20, 25)])  # (20, 25) is empty
    assert state.get() == merged
    for window in [(0, 5), (3, 8)]:
        at(backend, G1, "k", window)
        assert state.get() in (None, [])
    restored = new_backend.reopen(backend)
    again = restored.get_state(descriptor, namespaced=True)
    at(restored, G1, "k", (7, 12))
    assert again.get() == merged


def test_a_state_name_is_per_window_or_per_key(new_backend):
    backend = new_backend()
    backend.get_state(ValueStateDescriptor("x"))
    with pytest.raises(ValueError, match="per window or per key"):
        backend.get_state(ValueStateDescriptor("x"), namespaced=True)
