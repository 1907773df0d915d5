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
from dataclasses import dataclass, replace
from typing import Annotated, ClassVar, Self

from lockgate.common.records import ADDED, Record, RecordFormatError
from lockgate.state.key_groups import KeyGroupRange
from lockgate.state.snapshot import GroupHandle

HASHMAP = "hashmap"
ROCKSDB = "rocksdb"
CANONICAL = "canonical"  # a savepoint's, whichever backend wrote it
ROCKSDB_RESCALE = "rocksdb-rescale"  # a RocksDB restore at another parallelism
BACKENDS = (HASHMAP, ROCKSDB)


@dataclass(frozen=True)
class KeyGroupsManifest(Record, tag="backend"):
    """State as one checksummed blob per key group, in some files: any key group can be
    read on its own, so a restore at another parallelism takes just its own."""

    backend: ClassVar[str]
    kinds: Mapping[str, str]  # state name -> kind (value, list, map, ...)
    groups: Mapping[int, GroupHandle]

    def handles(self) -> Iterator[tuple[str, int]]:
        for handle in self.groups.values():
            yield handle.file, handle.length

    def undigested(self) -> Iterator[str]:
        """Files of blobs named without a digest (``state_digest``)."""
        return (h.file for h in self.groups.values() if h.sha256 is None)

    def is_empty(self) -> bool:
        return not self.groups

    def map_urls(self, mapping: Callable[[str], str]) -> Self:
        return type(self)(
            self.kinds,
            {kg: replace(h, file=mapping(h.file)) for kg, h in self.groups.items()},
        )

    def within(self, key_groups: KeyGroupRange) -> Self:
        """The part of this state in ``key_groups``."""
        return type(self)(self.kinds, {kg: h for kg, h in self.groups.items() if kg in key_groups})


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
class FileHandle(Record, array=True):
    """A RocksDB file in checkpoint storage (JSON: ``[url, size]``, and the file's SHA-256
    digest after them when the job signs its checkpoints)."""

    url: str
    size: int
    sha256: Annotated[str | None, ADDED] = None


@dataclass(frozen=True)
class RocksDBManifest(Record, tag="backend"):
    """The RocksDB backend's state: the files of one local snapshot of the instance."""

    backend: ClassVar[str] = ROCKSDB
    kinds: Mapping[str, str]
    files: Mapping[str, FileHandle]  # file name in the instance -> where storage holds it
    snapshot: str | None  # the version that wrote the snapshot (names it in errors)

    def handles(self) -> Iterator[tuple[str, int]]:
        for handle in self.files.values():
            yield handle.url, handle.size

    def undigested(self) -> Iterator[str]:
        return (h.url for h in self.files.values() if h.sha256 is None)

    def is_empty(self) -> bool:
        return not self.files

    def advanced(self, changes: KeyedStateManifest) -> RocksDBManifest:
        if not isinstance(changes, RocksDBManifest):
            raise RecordFormatError(
                f"a {changes.backend} snapshot cannot advance a {self.backend} manifest"
            )
        return RocksDBManifest({**self.kinds, **changes.kinds}, changes.files, changes.snapshot)

    def map_urls(self, mapping: Callable[[str], str]) -> RocksDBManifest:
        files = {name: replace(h, url=mapping(h.url)) for name, h in self.files.items()}
        return RocksDBManifest(self.kinds, files, self.snapshot)


@dataclass(frozen=True)
class RescalePart(Record):
    """An old RocksDB subtask's instance, and the key groups it held."""

    key_groups: KeyGroupRange
    manifest: RocksDBManifest


@dataclass(frozen=True)
class RocksDBRescaleManifest(Record, tag="backend"):
    """What a RocksDB subtask restores from at a new parallelism: the instances of the old
    subtasks whose key groups overlap its own, each with its old range. Like a savepoint's,
    this state is replaced by the subtask's first snapshot."""

    backend: ClassVar[str] = ROCKSDB_RESCALE
    parts: tuple[RescalePart, ...]

    @property
    def kinds(self) -> dict[str, str]:
        return {name: kind for p in self.parts for name, kind in p.manifest.kinds.items()}

    def handles(self) -> Iterator[tuple[str, int]]:
        for part in self.parts:
            yield from part.manifest.handles()

    def undigested(self) -> Iterator[str]:
        for part in self.parts:
            yield from part.manifest.undigested()

    def is_empty(self) -> bool:
        return all(part.manifest.is_empty() for part in self.parts)

    def advanced(self, changes: KeyedStateManifest) -> KeyedStateManifest:
        if not isinstance(changes, RocksDBManifest):
            raise RecordFormatError(
                f"a {changes.backend} snapshot cannot follow a restore of RocksDB state"
            )
        return changes

    def map_urls(self, mapping: Callable[[str], str]) -> RocksDBRescaleManifest:
        return RocksDBRescaleManifest(
            tuple(RescalePart(p.key_groups, p.manifest.map_urls(mapping)) for p in self.parts)
        )


KeyedStateManifest = HeapManifest | RocksDBManifest | CanonicalManifest | RocksDBRescaleManifest


def empty(backend: str) -> KeyedStateManifest:
    if backend == ROCKSDB:
        return RocksDBManifest({}, {}, None)
    return HeapManifest({}, {})


def urls(manifest: KeyedStateManifest) -> set[str]:
    return {url for url, _ in manifest.handles()}


def size(manifest: KeyedStateManifest) -> int:
    return sum(length for _, length in manifest.handles())


@dataclass(frozen=True)
class KeyedStateSnapshot(Record):
    """What a keyed subtask reports of its state after an epoch (its ack carries it)."""

    changes: KeyedStateManifest  # heap: the key groups rewritten; RocksDB: every file
    bytes_written: int
    entries: int
