"""What the state processor's driver and tasks exchange: typed, versioned JSON records."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from lockgate.common.records import RecordFormatError
from lockgate.state.key_groups import KeyGroupRange
from lockgate.state.manifests import CanonicalManifest, FileHandle, RocksDBManifest
from lockgate.state.operator_state_handle import (
    BROADCAST,
    SPLIT_DISTRIBUTE,
    UNION,
    OperatorStateHandle,
    OperatorStatePart,
    StateMeta,
)
from lockgate.state.snapshot import GroupHandle
from lockgate.state_processor.task_records import (
    KEYED,
    TIMERS,
    BootstrapTask,
    CountedPartition,
    EntriesTask,
    OperatorStateBootstrapTask,
    OperatorStateReadTask,
    OperatorStateWriteTask,
    ReadTask,
    SubtaskFiles,
    WriteTask,
    WrittenOperatorState,
    WrittenSubtask,
    dump,
)

CANONICAL = SubtaskFiles(
    "op/1",
    "count per key",
    2,
    128,
    KeyGroupRange(86, 127),
    CanonicalManifest({"count": "value"}, {90: GroupHandle("file:///sp/op/2.lgcs", 10, 20, 7)}),
)
ROCKSDB = SubtaskFiles(
    "op",
    "op",
    0,
    128,
    KeyGroupRange(0, 63),
    RocksDBManifest({"m": "ttl-map"}, {"000012.sst": FileHandle("s3://b/x.sst", 99)}, "t1"),
)

OPERATOR_FILE = OperatorStateHandle(
    "file:///sp/op/2-operator.lgos",
    80,
    12345,
    {"offsets": StateMeta(UNION, 3), "buffer": StateMeta(SPLIT_DISTRIBUTE, 7)},
)
RECORDS = [
    (ReadTask(CANONICAL, KEYED, "count", "value", False), ReadTask.load),
    (ReadTask(ROCKSDB, TIMERS, "", "timers", True), ReadTask.load),
    (
        OperatorStateReadTask(2, "offsets", OperatorStatePart(OPERATOR_FILE, {"offsets": (0, 3)})),
        OperatorStateReadTask.load,
    ),
    (EntriesTask(ROCKSDB, ("m", "_timers/user/event"), 256), EntriesTask.load),
    (BootstrapTask("op", "key", (("a", "value"), ("b", "ttl-list")), 64, 5), BootstrapTask.load),
    (WriteTask("op", "file:///new", "op%2F1", {"a": "value"}, True), WriteTask.load),
    (WrittenSubtask(1, {5: GroupHandle("op/1-0.lgcs", 3, 4, 5)}, 17), WrittenSubtask.load),
    (CountedPartition(3, 1000), CountedPartition.load),
    (
        OperatorStateBootstrapTask(
            "tally", "seen", SPLIT_DISTRIBUTE, "", "v", False, 3, ((0, 0, 0, 4), (0, 1, 4, 7))
        ),
        OperatorStateBootstrapTask.load,
    ),
    (
        OperatorStateBootstrapTask("tally", "latest", BROADCAST, "k", "v", False, 2, ()),
        OperatorStateBootstrapTask.load,
    ),
    (
        OperatorStateWriteTask(
            "tally",
            "file:///new",
            "tally",
            {"seen": SPLIT_DISTRIBUTE, "l": BROADCAST},
            {"l": "k"},
            False,
        ),
        OperatorStateWriteTask.load,
    ),
    (
        WrittenOperatorState(2, replace(OPERATOR_FILE, file="op/2-9.lgos")),
        WrittenOperatorState.load,
    ),
]


@pytest.mark.parametrize(("record", "load"), RECORDS)
def test_records_round_trip(record, load):
    assert load(dump(record)) == record


def test_a_record_of_another_kind_or_version_is_refused():
    text = dump(RECORDS[0][0])
    with pytest.raises(RecordFormatError, match=r"is a 'read' record"):
        WriteTask.load(text)
    raw = json.loads(text)
    raw["version"] = 99
    with pytest.raises(RecordFormatError, match=r"version 99"):
        ReadTask.load(json.dumps(raw))
    raw = json.loads(text)
    del raw["files"]["manifest"]
    with pytest.raises(RecordFormatError, match=r"lacks the field 'manifest'"):
        ReadTask.load(json.dumps(raw))
    with pytest.raises(RecordFormatError, match=r"not JSON"):
        ReadTask.load("{")


def test_an_operator_state_read_record_reads_the_one_state_it_names():
    whole = OperatorStateReadTask(2, "offsets", OperatorStatePart.whole(OPERATOR_FILE))
    with pytest.raises(RecordFormatError, match=r"its part is not of state 'offsets' alone"):
        OperatorStateReadTask.load(dump(whole))


def test_an_operator_state_write_record_names_modes_and_their_key_columns():
    unknown = OperatorStateWriteTask("op", "file:///new", "op", {"s": "keyed"}, {}, False)
    with pytest.raises(RecordFormatError, match=r"field 'modes' names an unknown mode"):
        OperatorStateWriteTask.load(dump(unknown))
    listed = OperatorStateWriteTask("op", "file:///new", "op", {"s": UNION}, {"s": "key"}, False)
    with pytest.raises(RecordFormatError, match=r"a key column is not of a broadcast state"):
        OperatorStateWriteTask.load(dump(listed))
