"""The on-disk form of a keyed-state snapshot: one file per subtask and epoch.

A file holds the key groups that changed in the epoch, each as a separately checksummed
blob, so a restore (or a later rescale) can read any key group on its own. The file header
and the manifest that points into it are JSON; only the state values themselves are
pickled (storage lockgate writes itself and trusts).
"""

from __future__ import annotations

import json
import pickle
import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from lockgate.common.records import Record

MAGIC = b"LGKS"
FORMAT_VERSION = 1
_PREFIX = struct.Struct(">4sHI")  # magic, version, header length


class SnapshotFormatError(ValueError):
    """A state file that is not a lockgate keyed-state snapshot, or is damaged."""


@dataclass(frozen=True)
class GroupHandle(Record, array=True):
    """Where one key group's blob lives: a file (relative to the state root) and a range.
    JSON: ``[file, offset, length, crc]``."""

    file: str
    offset: int
    length: int
    crc: int


def encode(
    kinds: dict[str, str], groups: dict[int, dict[str, dict[Any, Any]]]
) -> tuple[bytes, dict[int, tuple[int, int, int]]]:
    """Serialize key groups; returns the file bytes and, per key group, (offset, length, crc)."""
    blobs = {
        key_group: pickle.dumps(contents, protocol=pickle.HIGHEST_PROTOCOL)
        for key_group, contents in groups.items()
    }
    return frame(MAGIC, kinds, blobs)


def frame(
    magic: bytes, kinds: dict[str, str], blobs: dict[int, bytes]
) -> tuple[bytes, dict[int, tuple[int, int, int]]]:
    """A key-groups file's bytes and each blob's (offset, length, crc) (``frame_chunks``)."""
    index: dict[int, tuple[int, int, int]] = {}
    data = b"".join(frame_chunks(magic, kinds, sorted(blobs.items()), index))
    return data, index


def frame_chunks(
    magic: bytes,
    kinds: dict[str, str],
    blobs: Iterable[tuple[int, bytes]],
    index: dict[int, tuple[int, int, int]],
) -> Iterator[bytes]:
    """A key-groups file, chunk by chunk as it is written, so that it is never whole in
    memory: magic, version, a JSON header naming the states' kinds, then one blob per key
    group of ``blobs`` (in key-group order); fills ``index`` with each blob's (offset,
    length, crc)."""
    header = json.dumps({"version": FORMAT_VERSION, "kinds": kinds}).encode()
    yield _PREFIX.pack(magic, FORMAT_VERSION, len(header)) + header
    offset = _PREFIX.size + len(header)
    for key_group, blob in blobs:
        index[key_group] = (offset, len(blob), zlib.crc32(blob))
        offset += len(blob)
        yield blob


PREFIX_SIZE = _PREFIX.size


def read_kinds(data: bytes, path: str, magic: bytes = MAGIC) -> dict[str, str]:
    """The states' kinds in the header of a key-groups file, from its first bytes."""
    header_len = check_prefix(data, path, magic)
    try:
        header = json.loads(data[_PREFIX.size : _PREFIX.size + header_len])
        return dict(header["kinds"])
    except (ValueError, KeyError, TypeError) as exc:
        raise SnapshotFormatError(f"state file {path} has a damaged header: {exc}") from None


def check_prefix(data: bytes, path: str, magic: bytes = MAGIC) -> int:
    """Check the magic and version at the start of a key-groups file (``data``: its first
    ``PREFIX_SIZE`` bytes or more); returns the length of the header that follows."""
    if len(data) < _PREFIX.size:
        raise SnapshotFormatError(f"state file {path} is truncated ({len(data)} bytes)")
    found, version, header_len = _PREFIX.unpack_from(data)
    if found != magic:
        raise SnapshotFormatError(f"state file {path} is not a lockgate keyed-state snapshot")
    if version != FORMAT_VERSION:
        raise SnapshotFormatError(
            f"state file {path} has format version {version}; this lockgate reads "
            f"version {FORMAT_VERSION}"
        )
    return int(header_len)


def group_blob(data: bytes, handle: GroupHandle, key_group: int, path: str, base: int = 0) -> bytes:
    """The blob of one key group, checked against its checksum; ``data`` holds the file's
    bytes from offset ``base`` on."""
    start = handle.offset - base
    blob = data[start : start + handle.length]
    if len(blob) != handle.length or zlib.crc32(blob) != handle.crc:
        raise SnapshotFormatError(
            f"state file {path}: key group {key_group} fails its checksum "
            f"(offset {handle.offset}, length {handle.length})"
        )
    return blob


def decode_group(blob: bytes) -> dict[str, Any]:
    """A heap snapshot's key group: state name -> key -> value."""
    contents: dict[str, Any] = pickle.loads(blob)
    return contents
