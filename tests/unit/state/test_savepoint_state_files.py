"""Canonical files are written blob by blob as they are made, and read back by byte range:
a restore reads of an old subtask's file only the part its key groups are in."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest

from lockgate.core.fs.storage import Storage
from lockgate.state import canonical_snapshot, savepoint_state, snapshot
from lockgate.state.manifests import CanonicalManifest
from lockgate.state.snapshot import SnapshotFormatError

KINDS = {"count": "value"}
BLOBS = {kg: bytes([kg]) * (10 + kg) for kg in range(8)}


def made_as_written(written: list[int]):
    """The blobs, made one by one; ``written`` sees how far the file had got meanwhile."""
    for key_group, blob in sorted(BLOBS.items()):
        written.append(key_group)
        yield key_group, blob


def test_a_canonical_file_is_written_from_blobs_made_one_by_one(tmp_path):
    storage = Storage(f"file://{tmp_path}")
    made: list[int] = []
    manifest = savepoint_state.write_canonical_file(
        storage, "sp/0.lgcs", KINDS, made_as_written(made), True
    )
    assert made == sorted(BLOBS)
    index: dict[int, snapshot.Position] = {}
    chunks = snapshot.frame_chunks(
        canonical_snapshot.MAGIC, KINDS, sorted(BLOBS.items()), index, True
    )
    assert (tmp_path / "sp" / "0.lgcs").read_bytes() == b"".join(chunks)
    assert {kg: (h.offset, h.length, h.crc, h.sha256) for kg, h in manifest.groups.items()} == index
    assert all(
        sha256 == hashlib.sha256(BLOBS[kg]).hexdigest() for kg, (*_, sha256) in index.items()
    )
    assert {h.file for h in manifest.groups.values()} == {"sp/0.lgcs"}
    with pytest.raises(FileExistsError):  # never replaced
        savepoint_state.write_canonical_file(
            storage, "sp/0.lgcs", KINDS, sorted(BLOBS.items()), False
        )
    empty = savepoint_state.write_canonical_file(storage, "sp/1.lgcs", KINDS, iter(()), False)
    assert empty.groups == {} and not (tmp_path / "sp" / "1.lgcs").exists()


def test_a_restore_reads_only_the_range_of_its_key_groups(tmp_path, monkeypatch):
    storage = Storage(f"file://{tmp_path}")
    written = savepoint_state.write_canonical_file(
        storage, "0.lgcs", KINDS, sorted(BLOBS.items()), False
    )
    url = storage.url_of("0.lgcs")
    part = CanonicalManifest(
        KINDS, {kg: replace(h, file=url) for kg, h in written.groups.items() if 3 <= kg <= 5}
    )
    reads = []
    read_url = savepoint_state.read_url

    def recording(url, start=None, end=None):
        reads.append((start, end))
        return read_url(url, start, end)

    monkeypatch.setattr(savepoint_state, "read_url", recording)
    assert dict(savepoint_state.group_blobs(part, canonical_snapshot.MAGIC)) == {
        kg: BLOBS[kg] for kg in (3, 4, 5)
    }
    first, last = written.groups[3], written.groups[5]
    assert reads == [(0, snapshot.PREFIX_SIZE), (first.offset, last.offset + last.length)]


def test_a_damaged_blob_or_a_file_of_another_kind_is_refused_naming_the_file(tmp_path):
    storage = Storage(f"file://{tmp_path}")
    written = savepoint_state.write_canonical_file(
        storage, "0.lgcs", KINDS, sorted(BLOBS.items()), False
    )
    url = storage.url_of("0.lgcs")
    manifest = CanonicalManifest(
        KINDS, {kg: replace(h, file=url) for kg, h in written.groups.items()}
    )
    data = bytearray((tmp_path / "0.lgcs").read_bytes())
    data[written.groups[6].offset] ^= 0xFF
    (tmp_path / "0.lgcs").write_bytes(bytes(data))
    with pytest.raises(SnapshotFormatError, match=r"0.lgcs: key group 6 fails its checksum"):
        dict(savepoint_state.group_blobs(manifest, canonical_snapshot.MAGIC))
    with pytest.raises(SnapshotFormatError, match=r"0.lgcs is not a lockgate keyed-state"):
        dict(savepoint_state.group_blobs(manifest, snapshot.MAGIC))
