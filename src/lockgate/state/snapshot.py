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
from typing import Annotated, Any

from lockgate.common.records import ADDED, Record
from lockgate.state import state_digest

MAGIC = b"LGKS"
FORMAT_VERSION = 1
_PREFIX = struct.Struct(">4sHI")  # magic, version, header length


class SnapshotFormatError(ValueError):
    """A state file that is not a lockgate keyed-state snapshot, or is damaged."""


@dataclass(frozen=True)
class GroupHandle(Record, array=True):
    """Where one key group's blob lives: a file (relative to the state root) and a range.
    JSON: ``[file, offset, length, crc]``, and the blob's SHA-256 digest after them when the
    job signs its checkpoints (``state_digest``)."""

    file: str
    offset: int
    length: int
    crc: int
    sha256: Annotated[str | None, ADDED] = None


# Where ``frame_chunks`` put a blob: (offset, length, crc, digest or None)
Position = tuple[int, int, int, str | None]


def encode(
    kinds: dict[str, str], groups: dict[int, dict[str, dict[Any, Any]]], digests: bool
) -> tuple[bytes, dict[int, Position]]:
    """Serialize key groups; returns the file bytes and each key group's ``Position``."""
    blobs = {
        key_group: pickle.dumps(contents, protocol=pickle.HIGHEST_PROTOCOL)
        for key_group, contents in groups.items()
    }
    index: dict[int, Position] = {}
    data = b"".join(frame_chunks(MAGIC, kinds, sorted(blobs.items()), index, digests))
    return data, index


def frame_chunks(
    magic: bytes,
    kinds: dict[str, str],
    blobs: Iterable[tuple[int, bytes]],
    index: dict[int, Position],
    digests: bool,
) -> Iterator[bytes]:
    """A key-groups file, chunk by chunk as it is written, so that it is never whole in
    memory: magic, version, a JSON header naming the states' kinds, then one blob per key
    group of ``blobs`` (in key-group order); fills ``index`` with each blob's ``Position``,
    with its digest when ``digests`` (the job signs its checkpoints)."""
    header = json.dumps({"version": FORMAT_VERSION, "kinds": kinds}).encode()
    yield _PREFIX.pack(magic, FORMAT_VERSION, len(header)) + header
    offset = _PREFIX.size + len(header)
    for key_group, blob in blobs:
        sha256 = state_digest.digest(blob) if digests else None
        index[key_group] = (offset, len(blob), zlib.crc32(blob), sha256)
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
    """The blob of one key group, checked against its checksum and digest; ``data`` holds
    the file's bytes from offset ``base`` on."""
    start = handle.offset - base
    blob = data[start : start + handle.length]
    if len(blob) != handle.length or zlib.crc32(blob) != handle.crc:
        raise SnapshotFormatError(
            f"state file {path}: key group {key_group} fails its checksum "
            f"(offset {handle.offset}, length {handle.length})"
        )
    state_digest.check(blob, handle.sha256, f"state file {path}: key group {key_group}")
    return blob


def decode_group(blob: bytes) -> dict[str, Any]:
    """A heap snapshot's key group: state name -> key -> value."""
    contents: dict[str, Any] = pickle.loads(blob)
    return contents
