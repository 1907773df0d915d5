"""Keyed-state manifests: which files hold a keyed subtask's state.

A manifest is what acknowledgements, restores and ``_metadata`` say about keyed state, one
shape per backend, and one for savepoints (JSON forms)::

    {"backend": "hashmap", "kinds": {...}, "groups": {key group: [url, offset, length, crc]}}
    {"backend": "rocksdb", "kinds": {...}, "files": {name: [url, size]}, "snapshot": tag}
    {"backend": "canonical", "kinds": {...}, "groups": {key group: [url, offset, length, crc]}}

A heap subtask reports only the key groups it changed, so the driver merges that into the
manifest it holds; a RocksDB subtask reports its whole file set (most entries pointing at
files uploaded before), which replaces the manifest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from lockgate.common.records import RecordFormatError, field
from lockgate.state.key_groups import KeyGroupRange
from lockgate.state.snapshot import GroupHandle

HASHMAP = "hashmap"
ROCKSDB = "rocksdb"
CANONICAL = "canonical"  # a savepoint's, whichever backend wrote it
ROCKSDB_RESCALE = "rocksdb-rescale"  # a RocksDB restore at another parallelism
BACKENDS = (HASHMAP, ROCKSDB)


def _kinds(raw: dict[str, Any], where: str) -> dict[str, str]:
    kinds = field(raw, "kinds", dict, where)
    if not all(isinstance(kind, str) for kind in kinds.values()):
        raise RecordFormatError(f"{where}: field 'kinds' must map state names to kinds")
    return kinds


@dataclass(frozen=True)
class KeyGroupsManifest:
    """State as one checksummed blob per key group, in some files: any key group can be
    read on its own, so a restore at another parallelism takes just its own."""

    backend: ClassVar[str]
    kinds: Mapping[str, str]  # state name -> kind (value, list, map, ...)
    groups: Mapping[int, GroupHandle]

    def handles(self) -> Iterator[tuple[str, int]]:
        for handle in self.groups.values():
            yield handle.file, handle.length

    def is_empty(self) -> bool:
        return not self.groups

    def map_urls(self, mapping: Callable[[str], str]) -> Self:
        return type(self)(
            self.kinds,
            {
                kg: GroupHandle(mapping(h.file), h.offset, h.length, h.crc)
                for kg, h in self.groups.items()
            },
        )

    def within(self, key_groups: KeyGroupRange) -> Self:
        """The part of this state in ``key_groups``."""
        return type(self)(self.kinds, {kg: h for kg, h in self.groups.items() if kg in key_groups})

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "kinds": dict(self.kinds),
            "groups": {str(kg): handle.to_json() for kg, handle in self.groups.items()},
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any], where: str) -> Self:
        groups: dict[int, GroupHandle] = {}
        for key, handle in field(raw, "groups", dict, where).items():
            if not key.isdigit():
                raise RecordFormatError(f"{where}: key group {key!r} is not a number")
            groups[int(key)] = GroupHandle.from_json(handle, f"{where}, key group {key}")
        return cls(_kinds(raw, where), groups)


@dataclass(frozen=True)
class HeapManifest(KeyGroupsManifest):
    """The heap backend's state: each key group's entries pickled in heap form."""

    backend: ClassVar[str] = HASHMAP

    def advanced(self, changes: KeyedStateManifest) -> HeapManifest:
        """This manifest after an epoch that rewrote the key groups of ``changes``."""
        if not isinstance(changes, HeapManifest):
            raise RecordFormatError(
                f"a {changes.backend} snapshot cannot advance a {self.backend} manifest"
            )
        return HeapManifest({**self.kinds, **changes.kinds}, {**self.groups, **changes.groups})


@dataclass(frozen=True)
class CanonicalManifest(KeyGroupsManifest):
    """State in the canonical form (``canonical_snapshot``) of a savepoint: what a backend
    restores from, never what it snapshots to."""

    backend: ClassVar[str] = CANONICAL

    def advanced(self, changes: KeyedStateManifest) -> KeyedStateManifest:
        """A backend restored from a savepoint rewrites all its state in its first snapshot
        (the savepoint is never the job's own), which takes this manifest's place."""
        if isinstance(changes, HeapManifest) and not set(self.groups) <= set(changes.groups):
            missing = sorted(set(self.groups) - set(changes.groups))
            raise RecordFormatError(
                f"the first snapshot after a restore from a savepoint lacks key groups "
                f"{missing[:5]}"
            )
        if isinstance(changes, CanonicalManifest):
            raise RecordFormatError("a backend snapshot cannot be in the canonical form")
        return changes


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


@dataclass(frozen=True)
class RocksDBRescaleManifest:
    """What a RocksDB subtask restores from at a new parallelism: the instances of the old
    subtasks whose key groups overlap its own, each with its old range. Like a savepoint's,
    this state is replaced by the subtask's first snapshot."""

    backend: ClassVar[str] = ROCKSDB_RESCALE
    parts: tuple[tuple[KeyGroupRange, RocksDBManifest], ...]

    @property
    def kinds(self) -> dict[str, str]:
        return {name: kind for _, part in self.parts for name, kind in part.kinds.items()}

    def handles(self) -> Iterator[tuple[str, int]]:
        for _, part in self.parts:
            yield from part.handles()

    def is_empty(self) -> bool:
        return all(part.is_empty() for _, part in self.parts)

    def advanced(self, changes: KeyedStateManifest) -> KeyedStateManifest:
        if not isinstance(changes, RocksDBManifest):
            raise RecordFormatError(
                f"a {changes.backend} snapshot cannot follow a restore of RocksDB state"
            )
        return changes

    def map_urls(self, mapping: Callable[[str], str]) -> RocksDBRescaleManifest:
        return RocksDBRescaleManifest(
            tuple((old, part.map_urls(mapping)) for old, part in self.parts)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": ROCKSDB_RESCALE,
            "parts": [
                {"key_groups": [old.start, old.end], "manifest": part.to_json()}
                for old, part in self.parts
            ],
        }

    @staticmethod
    def from_json(raw: dict[str, Any], where: str) -> RocksDBRescaleManifest:
        parts = []
        for number, entry in enumerate(field(raw, "parts", list, where)):
            at = f"{where}, part {number}"
            if not isinstance(entry, dict):
                raise RecordFormatError(f"{at} is not an object")
            bounds = field(entry, "key_groups", list, at)
            if len(bounds) != 2 or not all(type(b) is int for b in bounds):
                raise RecordFormatError(f"{at}: field 'key_groups' is not [start, end]")
            parts.append(
                (
                    KeyGroupRange(bounds[0], bounds[1]),
                    RocksDBManifest.from_json(field(entry, "manifest", dict, at), at),
                )
            )
        return RocksDBRescaleManifest(tuple(parts))


KeyedStateManifest = HeapManifest | RocksDBManifest | CanonicalManifest | RocksDBRescaleManifest


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
    if backend == CANONICAL:
        return CanonicalManifest.from_json(raw, where)
    if backend == ROCKSDB_RESCALE:
        return RocksDBRescaleManifest.from_json(raw, where)
    raise RecordFormatError(
        f"{where}: unknown state backend {backend!r} (expected one of "
        f"{', '.join((*BACKENDS, CANONICAL, ROCKSDB_RESCALE))})"
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
