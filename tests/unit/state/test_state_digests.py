"""State handles of a job that signs its checkpoints carry SHA-256 digests, and every reader
checks them before it unpickles a byte. The attacker here can write state files and make
their CRC-32 match (it is no secret), but not change the handles: a signed ``_metadata``
holds them."""

from __future__ import annotations

import hashlib
import os
import pickle
import zlib
from dataclasses import replace
from pathlib import Path

import pytest

from lockgate.core.fs.storage import Storage
from lockgate.datastream.state import ListStateDescriptor, ValueStateDescriptor
from lockgate.state.backend_settings import KeyedStateSettings
from lockgate.state.heap import HeapKeyedStateBackend
from lockgate.state.heap_restore import HeapRestoreOperation
from lockgate.state.key_groups import KeyGroupRange
from lockgate.state.keyed_subtask import KeyedSubtask
from lockgate.state.manifests import HeapManifest, RocksDBManifest
from lockgate.state.operator_state_backend import OperatorStateBackend
from lockgate.state.operator_state_handle import OperatorStatePart, read_part
from lockgate.state.rocksdb import RocksDBSettings, StateBackendError
from lockgate.state.rocksdb_restore import RocksDBRestoreOperation
from lockgate.state.state_digest import StateDigestError

SUBTASK = KeyedSubtask("counter", "Counter", 0, "counter-0", KeyGroupRange(0, 127), 128)


class Planted:
    """A pickle that, once loaded, leaves a file behind: proof that it ran."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def counted(backend, keys=range(20)) -> None:
    """A count per key, one key per key group."""
    state = backend.get_state(ValueStateDescriptor("count"))
    for key in keys:
        backend.set_current_key(key, key)
        state.update(key * 10)


def test_heap_handles_carry_the_digest_of_their_blob_only_when_asked(tmp_path):
    storage = Storage(str(tmp_path))
    for digests in (False, True):
        backend = HeapKeyedStateBackend(SUBTASK.key_groups, 128)
        counted(backend)
        changes = backend.snapshot(SUBTASK, storage, f"t{digests}", True, digests=digests).changes
        data = (tmp_path / f"counter/0/t{digests}.lgks").read_bytes()
        for handle in changes.groups.values():
            blob = data[handle.offset : handle.offset + handle.length]
            assert handle.sha256 == (sha256(blob) if digests else None)


def test_a_heap_blob_swapped_with_a_matching_crc_is_refused_before_it_is_unpickled(tmp_path):
    backend = HeapKeyedStateBackend(SUBTASK.key_groups, 128)
    counted(backend)
    manifest = backend.snapshot(SUBTASK, Storage(str(tmp_path)), "t", True, digests=True).changes
    key_group, handle = next(iter(manifest.groups.items()))
    path = tmp_path / "counter/0/t.lgks"
    planted = pickle.dumps(Planted(tmp_path / "ran"))
    data = bytearray(path.read_bytes())
    data[handle.offset : handle.offset + handle.length] = planted
    path.write_bytes(bytes(data))
    # What the attacker's bytes pass: the length and CRC the handle would then give
    swapped = replace(handle, offset=handle.offset, length=len(planted), crc=zlib.crc32(planted))
    tampered = HeapManifest(manifest.kinds, {key_group: swapped})
    with pytest.raises(StateDigestError, match=rf"t.lgks: key group {key_group} does not match"):
        HeapRestoreOperation().restore(SUBTASK, tampered, True)
    assert not (tmp_path / "ran").exists()
    # The same bytes without a digest to check are unpickled: what signing prevents
    unsigned = HeapManifest(manifest.kinds, {key_group: replace(swapped, sha256=None)})
    with pytest.raises(Exception):  # noqa: B017 - the planted pickle is no key group
        HeapRestoreOperation().restore(SUBTASK, unsigned, True)
    assert (tmp_path / "ran").exists()


def test_an_operator_state_file_swapped_with_a_matching_crc_is_refused(tmp_path):
    storage = Storage(str(tmp_path))
    backend = OperatorStateBackend("operator 'buffer'", [])
    backend.get_list_state(ListStateDescriptor("buffer")).update([1, 2, 3])
    handle = backend.snapshot(storage, "op/0.lgos", reuse=False, digests=True)
    assert handle is not None
    assert handle.sha256 == sha256((tmp_path / "op/0.lgos").read_bytes())
    assert backend.snapshot(storage, "op/1.lgos", reuse=False).sha256 is None
    planted = pickle.dumps(Planted(tmp_path / "ran"))
    data = (tmp_path / "op/0.lgos").read_bytes()
    forged = data[: -len(planted)] + planted  # the last element's bytes, whatever they are
    (tmp_path / "op/0.lgos").write_bytes(forged)
    swapped = replace(handle, size=len(forged), crc=zlib.crc32(forged))
    with pytest.raises(StateDigestError, match=r"operator state file .*0.lgos does not match"):
        list(read_part(OperatorStatePart.whole(swapped)))
    assert not (tmp_path / "ran").exists()


@pytest.fixture
def rocksdb_snapshot(tmp_path):
    """A RocksDB subtask's snapshot with digests, restored on "another executor" (local
    directories without its local snapshot)."""

    def restore_operation(name: str) -> RocksDBRestoreOperation:
        settings = KeyedStateSettings(
            "rocksdb", "job", True, (str(tmp_path / name),), RocksDBSettings()
        )
        return RocksDBRestoreOperation(settings)

    backend = restore_operation("first").restore(SUBTASK, None, True)
    counted(backend)
    storage = Storage(str(tmp_path / "checkpoints"))
    manifest = backend.snapshot(SUBTASK, storage, "t", True, digests=True).changes
    backend.dispose()
    assert isinstance(manifest, RocksDBManifest)
    return manifest, restore_operation("second")


def test_rocksdb_files_carry_their_digests_and_restore_as_copies(rocksdb_snapshot):
    manifest, elsewhere = rocksdb_snapshot
    for handle in manifest.files.values():
        stored = handle.url.removeprefix("file://")
        assert handle.sha256 == sha256(Path(stored).read_bytes())
    backend = elsewhere.restore(SUBTASK, manifest, True)
    try:
        backend.set_current_key(7, 7)
        assert backend.get_state(ValueStateDescriptor("count")).value() == 70
        for name, handle in backend.uploaded.items():
            # a copy: later changes to the stored file do not reach the checked instance
            local = os.stat(f"{backend.path}/{name}")
            assert local.st_ino != os.stat(handle.url.removeprefix("file://")).st_ino
    finally:
        backend.dispose()


def test_a_rocksdb_file_altered_in_storage_is_refused(rocksdb_snapshot):
    manifest, elsewhere = rocksdb_snapshot
    name, handle = next((n, h) for n, h in manifest.files.items() if n.endswith(".sst"))
    stored = Path(handle.url.removeprefix("file://"))
    data = bytearray(stored.read_bytes())
    data[len(data) // 2] ^= 0xFF  # the same size: RocksDB would open it
    stored.write_bytes(bytes(data))
    with pytest.raises(StateBackendError, match=rf"{name} does not match the SHA-256 digest"):
        elsewhere.restore(SUBTASK, manifest, True)
