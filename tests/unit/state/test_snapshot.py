"""The keyed-state snapshot file: encode/decode round trip and clear errors on damage."""

from __future__ import annotations

import itertools
import json
import struct

import pytest

from lockgate.common.records import RecordFormatError
from lockgate.datastream.state import ListStateDescriptor, ValueStateDescriptor
from lockgate.state import snapshot
from lockgate.state.heap import HeapKeyedStateBackend
from lockgate.state.key_groups import key_group_range
from lockgate.state.snapshot import GroupHandle, SnapshotFormatError

PATH = "chk-3/op-uid/subtask-1.state"
KINDS = {"v": "value", "l": "list", "m": "map"}
GROUPS = {
    7: {"v": {"a": 1, ("t", 2): None}, "l": {"a": [1, 2, 3]}},
    3: {"m": {"k": {"x": 1.5, b"y": "z"}}},
    100: {"v": {"big": "x" * 5000}},
}


def handles(index, file=PATH):
    return {group: GroupHandle(file, *entry) for group, entry in index.items()}


def test_round_trip():
    data, index = snapshot.encode(KINDS, GROUPS, False)
    assert isinstance(data, bytes)
    assert set(index) == set(GROUPS)
    assert snapshot.read_kinds(data, PATH) == KINDS
    for group, handle in handles(index).items():
        assert (
            snapshot.decode_group(snapshot.group_blob(data, handle, group, PATH)) == GROUPS[group]
        )


def test_file_starts_with_magic_and_version():
    data, _ = snapshot.encode(KINDS, GROUPS, False)
    assert data[:4] == snapshot.MAGIC == b"LGKS"
    (version,) = struct.unpack_from(">H", data, 4)
    assert version == snapshot.FORMAT_VERSION


def test_group_blobs_are_laid_out_in_key_group_order_without_overlap():
    data, index = snapshot.encode(KINDS, GROUPS, False)
    entries = [index[group] for group in sorted(index)]
    for (offset, length, _, _), (next_offset, _, _, _) in itertools.pairwise(entries):
        assert offset + length == next_offset
    last_offset, last_length, _, _ = entries[-1]
    assert last_offset + last_length == len(data)


def test_each_group_decodes_on_its_own():
    data, index = snapshot.encode(KINDS, GROUPS, False)
    offset, length, crc, _ = index[7]
    # Only the group's own bytes are needed (a restore may read one range of the file).
    padded = bytes(offset) + data[offset : offset + length]
    assert (
        snapshot.decode_group(
            snapshot.group_blob(padded, GroupHandle(PATH, offset, length, crc), 7, PATH)
        )
        == (GROUPS[7])
    )


def test_empty_snapshot():
    data, index = snapshot.encode({}, {}, False)
    assert index == {}
    assert snapshot.read_kinds(data, PATH) == {}


def test_handle_json_round_trip():
    handle = GroupHandle("shared/abc.state", 12, 345, 0xDEADBEEF)
    encoded = json.loads(json.dumps(handle.to_json()))
    assert GroupHandle.from_json(encoded, "manifest") == handle


@pytest.mark.parametrize("raw", [["f", 1, 2], ["f", 1, 2, "3"], [1, 2, 3, 4], {"file": "f"}])
def test_a_damaged_handle_names_where_it_was_read(raw):
    with pytest.raises(RecordFormatError, match=r"manifest, key group 7.* is .*, not"):
        GroupHandle.from_json(raw, "manifest, key group 7")


def test_round_trip_through_the_heap_backend():
    max_p = 128
    source = HeapKeyedStateBackend(key_group_range(max_p, 2, 0), max_p)
    value = source.get_state(ValueStateDescriptor("v"))
    listing = source.get_state(ListStateDescriptor("l"))
    for group, key in [(0, "a"), (5, "b"), (63, ("c", 1))]:
        source.set_current_key(group, key)
        value.update(group)
        listing.add_all([key, group])
    dirty = source.take_dirty_groups()
    assert dirty == [0, 5, 63]
    data, index = snapshot.encode(source.kinds, {g: source.group_contents(g) for g in dirty}, False)

    target = HeapKeyedStateBackend(key_group_range(max_p, 2, 0), max_p)
    kinds = snapshot.read_kinds(data, PATH)
    for group, handle in handles(index).items():
        target.install_group(
            group, snapshot.decode_group(snapshot.group_blob(data, handle, group, PATH)), kinds
        )
    value = target.get_state(ValueStateDescriptor("v"))
    listing = target.get_state(ListStateDescriptor("l"))
    for group, key in [(0, "a"), (5, "b"), (63, ("c", 1))]:
        target.set_current_key(group, key)
        assert value.value() == group
        assert list(listing.get()) == [key, group]


def test_corrupt_group_fails_its_checksum_naming_file_and_key_group():
    data, index = snapshot.encode(KINDS, GROUPS, False)
    offset, length, crc, _ = index[7]
    damaged = bytearray(data)
    damaged[offset + length // 2] ^= 0x01
    with pytest.raises(SnapshotFormatError, match="checksum") as info:
        snapshot.decode_group(
            snapshot.group_blob(bytes(damaged), GroupHandle(PATH, offset, length, crc), 7, PATH)
        )
    message = str(info.value)
    assert PATH in message
    assert "key group 7" in message
    # The other groups are untouched and still decode.
    for group in (3, 100):
        handle = GroupHandle(PATH, *index[group])
        assert (
            snapshot.decode_group(snapshot.group_blob(bytes(damaged), handle, group, PATH))
            == GROUPS[group]
        )


def test_wrong_crc_in_handle_is_detected():
    data, index = snapshot.encode(KINDS, GROUPS, False)
    offset, length, crc, _ = index[3]
    handle = GroupHandle(PATH, offset, length, crc ^ 1)
    with pytest.raises(SnapshotFormatError, match=r"key group 3 fails its checksum"):
        snapshot.decode_group(snapshot.group_blob(data, handle, 3, PATH))


def test_truncated_group_is_detected():
    data, index = snapshot.encode(KINDS, GROUPS, False)
    offset, length, crc, _ = index[100]
    with pytest.raises(SnapshotFormatError, match=rf"{PATH}.*key group 100"):
        snapshot.decode_group(
            snapshot.group_blob(data[:-10], GroupHandle(PATH, offset, length, crc), 100, PATH)
        )


def test_snapshot_format_error_is_a_value_error():
    assert issubclass(SnapshotFormatError, ValueError)


def test_wrong_magic_is_rejected_naming_the_file():
    data, _ = snapshot.encode(KINDS, GROUPS, False)
    with pytest.raises(SnapshotFormatError, match="not a lockgate keyed-state snapshot") as info:
        snapshot.read_kinds(b"PK\x03\x04" + data[4:], PATH)
    assert PATH in str(info.value)


def test_other_format_version_is_rejected_naming_both_versions():
    data, _ = snapshot.encode(KINDS, GROUPS, False)
    future = data[:4] + struct.pack(">H", snapshot.FORMAT_VERSION + 1) + data[6:]
    with pytest.raises(SnapshotFormatError) as info:
        snapshot.read_kinds(future, PATH)
    message = str(info.value)
    assert PATH in message
    assert f"version {snapshot.FORMAT_VERSION + 1}" in message
    assert f"version {snapshot.FORMAT_VERSION}" in message


@pytest.mark.parametrize("size", [0, 3, 9])
def test_file_shorter_than_its_prefix_is_rejected(size):
    data, _ = snapshot.encode(KINDS, GROUPS, False)
    with pytest.raises(SnapshotFormatError, match="truncated") as info:
        snapshot.read_kinds(data[:size], PATH)
    assert PATH in str(info.value)


def test_file_cut_inside_its_header_is_rejected_naming_the_file():
    data, _ = snapshot.encode(KINDS, GROUPS, False)
    with pytest.raises(SnapshotFormatError) as info:
        snapshot.read_kinds(data[:14], PATH)
    assert PATH in str(info.value)
