"""What opening a RocksDB instance says when it fails: a lock only when the LOCK file is the
cause (every instance lives under a "lockgate-rocksdb" directory, whose name is no lock)."""

from __future__ import annotations

import pytest

from lockgate.state.key_groups import KeyGroupRange
from lockgate.state.rocksdb import (
    RocksDBKeyedStateBackend,
    RocksDBSettings,
    StateBackendError,
    open_instance,
)

SMALL = RocksDBSettings(write_buffer_bytes=1 << 20, block_cache_bytes=1 << 20)


@pytest.fixture
def instance_path(tmp_path):
    """Where the runtime puts instances: <local dir>/lockgate-rocksdb/<job>/op<task>-<n>/db-*"""
    return str(tmp_path / "lockgate-rocksdb" / "job" / "op1-0" / "db-1")


def test_a_damaged_instance_is_not_reported_as_locked(instance_path):
    db = open_instance(instance_path, SMALL)
    db.put(b"k", b"v")
    db.flush()
    db.close()
    with open(f"{instance_path}/CURRENT", "w") as current:
        current.write("MANIFEST-999999\n")  # points at a file that does not exist

    with pytest.raises(StateBackendError) as failure:
        open_instance(instance_path, SMALL)

    message = str(failure.value)
    assert "lock" not in message.replace("lockgate-rocksdb", "").lower()
    assert message.startswith(f"cannot open RocksDB instance {instance_path}: ")
    assert "MANIFEST-999999" in message


def test_an_instance_held_open_is_reported_as_locked(instance_path):
    db = open_instance(instance_path, SMALL)
    try:
        with pytest.raises(StateBackendError, match="is locked by another live instance"):
            open_instance(instance_path, SMALL)
    finally:
        db.close()


def test_an_instance_with_keys_of_another_encoding_is_refused(tmp_path):
    """Lookups encode keys anew: an instance whose keys were encoded otherwise (an older
    lockgate pickled dates) would lose them silently."""
    path = str(tmp_path / "db")
    db = open_instance(path, RocksDBSettings())
    db.put(b"\xff\xff" + b"lockgate-state-registry", b'{"v": [0, "value"]}')  # as 1 left it
    db.close()
    with pytest.raises(StateBackendError, match=r"holds keys in encoding 1.*reads encoding 2"):
        RocksDBKeyedStateBackend(KeyGroupRange(0, 127), 128, path, RocksDBSettings())
