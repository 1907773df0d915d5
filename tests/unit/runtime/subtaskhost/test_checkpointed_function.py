"""A ``CheckpointedFunction`` in a running operator: ``initialize_state`` before ``open``,
with its restored operator state and keyed state store; ``snapshot_state`` into it."""

from __future__ import annotations

from lockgate.core.fs.storage import Storage
from lockgate.datastream import CheckpointedFunction, MapFunction
from lockgate.runtime.subtaskhost.context import RecordTimestamp, SubtaskRuntimeContext
from lockgate.runtime.subtaskhost.operators import MapOperator, OperatorContext
from lockgate.state.descriptors import ListStateDescriptor, ValueStateDescriptor
from lockgate.state.heap import HeapKeyedStateBackend
from lockgate.state.key_groups import key_group_range
from lockgate.state.operator_state_handle import OperatorStatePart

SEEN = ListStateDescriptor("seen")


class Remember(MapFunction, CheckpointedFunction):
    def __init__(self):
        self.calls = []

    def initialize_state(self, context):
        self.calls.append("initialize_state")
        self.restored = context.is_restored(), context.get_restored_checkpoint_id()
        self.keyed = context.get_keyed_state_store()
        self.state = context.get_operator_state_store().get_list_state(SEEN)
        self.seen = list(self.state.get())

    def open(self, runtime_context):
        self.calls.append("open")

    def map(self, value):
        self.seen.append(value)
        return value

    def snapshot_state(self, context):
        self.calls.append(f"snapshot_state {context.get_checkpoint_id()}")
        self.state.update(self.seen)


def operator(function, backend=None, parts=None, restored_epoch=None) -> MapOperator:
    runtime = SubtaskRuntimeContext("remember", 0, 1, 128, 0, {}, backend)
    ctx = OperatorContext(
        "remember",
        "remember-uid",
        0,
        1,
        runtime,
        backend,
        [],
        RecordTimestamp(),
        managed_parts=parts,
        restored_epoch=restored_epoch,
    )
    return MapOperator(ctx, function)


def test_state_is_initialized_before_open_and_snapshotted_into_operator_state(tmp_path):
    function = Remember()
    first = operator(function)
    first.open()
    assert function.calls == ["initialize_state", "open"]
    assert function.restored == (False, None) and function.keyed is None
    first.process("a")
    first.process("b")
    backend = first.snapshot_function(4)
    assert function.calls[-1] == "snapshot_state 4"
    handle = backend.snapshot(Storage(str(tmp_path)), "op/0-x.lgos", reuse=False)

    again = Remember()
    keyed = HeapKeyedStateBackend(key_group_range(128, 1, 0), 128)
    operator(again, keyed, [OperatorStatePart.whole(handle)], restored_epoch=4).open()
    assert again.restored == (True, 4) and again.seen == ["a", "b"]
    keyed_store = again.keyed
    keyed.set_current_key(0, "k")
    keyed_store.get_state(ValueStateDescriptor("v")).update(1)
    assert keyed_store.get_list_state(ListStateDescriptor("l")).get() == []


def test_a_plain_function_has_no_operator_state():
    plain = operator(lambda value: value)
    plain.open()
    assert plain.snapshot_function(1) is None and plain.managed is None
