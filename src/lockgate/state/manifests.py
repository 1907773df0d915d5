"""Keyed-state manifests: which files hold a keyed subtask's state.

A manifest is what acknowledgements, restores and ``_metadata`` say about keyed state, one
shape per backend (JSON forms)::

    {"backend": "hashmap", "kinds": {...}, "groups": {key group: [url, offset, length, crc]}}
    {"backend": "rocksdb", "kinds": {...}, "files": {name: [url, size]}, "snapshot": tag}

A heap subtask reports only the key groups it changed, so the driver merges that into the
manifest it holds; a RocksDB subtask reports its whole file set (most entries pointing at
files uploaded before), which replaces the manifest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from lockgate.common.records import RecordFormatError, field
from lockgate.state.snapshot import GroupHandle

HASHMAP = "hashmap"
ROCKSDB = "rocksdb"
BACKENDS = (HASHMAP, ROCKSDB)


def _kinds(raw: dict[str, Any], where: str) -> dict[str, str]:
    kinds = field(raw, "kinds", dict, where)
    if not all(isinstance(kind, str) for kind in kinds.values()):
        raise RecordFormatError(f"{where}: field 'kinds' must map state names to kinds")
    return kinds


@dataclass(frozen=True)
class HeapManifest:
    """The heap backend's state: one checksummed blob per key group, in some file."""

    backend: ClassVar[str] = HASHMAP
    kinds: Mapping[str, str]  # state name -> kind (value, list, map, ...)
    groups: Mapping[int, GroupHandle]

    def handles(self) -> Iterator[tuple[str, int]]:
        for handle in self.groups.values():
            yield handle.file, handle.length

    def is_empty(self) -> bool:
        return not self.groups

    def advanced(self, changes: KeyedStateManifest) -> HeapManifest:
        """This manifest after an epoch that rewrote the key groups of ``changes``."""
        if not isinstance(changes, HeapManifest):
            raise RecordFormatError(
                f"a {changes.backend} snapshot cannot advance a {self.backend} manifest"
            )
        return HeapManifest({**self.kinds, **changes.kinds}, {**self.groups, **changes.groups})

    def map_urls(self, mapping: Callable[[str], str]) -> HeapManifest:
        return HeapManifest(
            self.kinds,
            {
                kg: GroupHandle(mapping(h.file), h.offset, h.length, h.crc)
                for kg, h in self.groups.items()
            },
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": HASHMAP,
            "kinds": dict(self.kinds),
            "groups": {str(kg): handle.to_json() for kg, handle in self.groups.items()},
        }

    @staticmethod
    def from_json(raw: dict[str, Any], where: str) -> HeapManifest:
        groups: dict[int, GroupHandle] = {}
        for key, handle in field(raw, "groups", dict, where).items():
            if not key.isdigit():
                raise RecordFormatError(f"{where}: key group {key!r} is not a number")
            groups[int(key)] = GroupHandle.from_json(handle, f"{where}, key group {key}")
        return HeapManifest(_kinds(raw, where), groups)


@dataclass(frozen=True)
class FileHandle:
    """A RocksDB file in checkpoint storage."""

    url: str
    size: int


@dataclass(frozen=True)
class RocksDBManifest:
    """The RocksDB backend's state: the files of one local snapshot of the instance."""

    backend: ClassVar[str] = ROCKSDB
    kinds: Mapping[str, str]
    files: Mapping[str, FileHandle]  # file name in the instance -> where storage holds it
    snapshot: str | None  # the version that wrote the snapshot (names it in errors)

    def handles(self) -> Iterator[tuple[str, int]]:
        for handle in self.files.values():
            yield handle.url, handle.size

    def is_empty(self) -> bool:
        return not self.files

    def advanced(self, changes: KeyedStateManifest) -> RocksDBManifest:
        if not isinstance(changes, RocksDBManifest):
            raise RecordFormatError(
                f"a {changes.backend} snapshot cannot advance a {self.backend} manifest"
            )
        return RocksDBManifest({**self.kinds, **changes.kinds}, changes.files, changes.snapshot)

    def map_urls(self, mapping: Callable[[str], str]) -> RocksDBManifest:
        files = {name: FileHandle(mapping(h.url), h.size) for name, h in self.files.items()}
        return RocksDBManifest(self.kinds, files, self.snapshot)

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": ROCKSDB,
            "kinds": dict(self.kinds),
            "files": {name: [h.url, h.size] for name, h in self.files.items()},
            "snapshot": self.snapshot,
        }

    @staticmethod
    def from_json(raw: dict[str, Any], where: str) -> RocksDBManifest:
        files: dict[str, FileHandle] = {}
        for name, handle in field(raw, "files", dict, where).items():
            if not (
                isinstance(handle, list)
                and len(handle) == 2
                and isinstance(handle[0], str)
                and isinstance(handle[1], int)
                and not isinstance(handle[1], bool)
            ):
                raise RecordFormatError(f"{where}: file {name!r} is not [url, size]")
            files[name] = FileHandle(handle[0], handle[1])
        return RocksDBManifest(
            _kinds(raw, where), files, field(raw, "snapshot", (str, type(None)), where)
        )


KeyedStateManifest = HeapManifest | RocksDBManifest


def empty(backend: str) -> KeyedStateManifest:
    if backend == ROCKSDB:
        return RocksDBManifest({}, {}, None)
    return HeapManifest({}, {})


def manifest_from_json(raw: Any, where: str) -> KeyedStateManifest:
    """A manifest read from an ack, a restore or ``_metadata``; damage names ``where``."""
    if not isinstance(raw, dict):
        raise RecordFormatError(f"{where}: the keyed-state manifest is not an object")
    backend = field(raw, "backend", str, where)
    if backend == HASHMAP:
        return HeapManifest.from_json(raw, where)
    if backend == ROCKSDB:
        return RocksDBManifest.from_json(raw, where)
    raise RecordFormatError(
        f"{where}: unknown state backend {backend!r} (expected one of {', '.join(BACKENDS)})"
    )


def urls(manifest: KeyedStateManifest) -> set[str]:
    return {url for url, _ in manifest.handles()}


def size(manifest: KeyedStateManifest) -> int:
    return sum(length for _, length in manifest.handles())


@dataclass(frozen=True)
class KeyedStateSnapshot:
    """What a keyed subtask reports of its state after an epoch (its ack carries it)."""

    changes: KeyedStateManifest  # heap: the key groups rewritten; RocksDB: every file
    bytes_written: int
    entries: int

    def to_json(self) -> dict[str, Any]:
        return {
            "changes": self.changes.to_json(),
            "bytes_written": self.bytes_written,
            "entries": self.entries,
        }

    @staticmethod
    def from_json(raw: Any, where: str) -> KeyedStateSnapshot:
        if not isinstance(raw, dict):
            raise RecordFormatError(f"{where}: the keyed-state snapshot is not an object")
        return KeyedStateSnapshot(
            manifest_from_json(field(raw, "changes", dict, where), where),
            field(raw, "bytes_written", int, where),
            field(raw, "entries", int, where),
        )
