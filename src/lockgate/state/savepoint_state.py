"""Keyed state into and out of a savepoint: a subtask writes its key groups in canonical
form (``canonical_snapshot``), and a backend of either kind is filled from canonical key
groups, whichever backend and parallelism wrote them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import chain

from lockgate.core.fs.storage import Storage, read_url
from lockgate.state import canonical_snapshot, snapshot
from lockgate.state.canonical_snapshot import CanonicalKeyError, GroupWriter
from lockgate.state.keyed_backend import KeyedStateBackend
from lockgate.state.keyed_subtask import KeyedSubtask
from lockgate.state.manifests import CanonicalManifest, KeyGroupsManifest


def group_blobs(manifest: KeyGroupsManifest, magic: bytes) -> Iterator[tuple[int, bytes]]:
    """(key group, checked blob) of every key group of ``manifest``. Of each file only the
    byte range holding them is read (a rescaled subtask needs part of an old subtask's
    file): files are written in key-group order and a subtask's key groups are a range."""
    by_file: dict[str, list[int]] = {}
    for key_group, handle in manifest.groups.items():
        by_file.setdefault(handle.file, []).append(key_group)
    for url, key_groups in by_file.items():
        snapshot.check_prefix(read_url(url, 0, snapshot.PREFIX_SIZE), url, magic)
        handles = [manifest.groups[key_group] for key_group in key_groups]
        start = min(handle.offset for handle in handles)
        data = read_url(url, start, max(handle.offset + handle.length for handle in handles))
        for key_group, handle in zip(key_groups, handles, strict=True):
            yield key_group, snapshot.group_blob(data, handle, key_group, url, start)


def restore_canonical(backend: KeyedStateBackend, manifest: CanonicalManifest) -> None:
    for key_group, blob in group_blobs(manifest, canonical_snapshot.MAGIC):
        backend.import_group(key_group, blob)


def write_savepoint_state(
    backend: KeyedStateBackend,
    subtask: KeyedSubtask,
    storage: Storage,
    relative: str,
    digests: bool,
) -> CanonicalManifest:
    """Write every key group of ``backend`` to ``relative`` under ``storage`` (a savepoint's
    directory) and return the manifest, with ``relative`` as the file's name."""
    blobs = export_groups(backend, backend.key_groups, subtask)
    return write_canonical_file(storage, relative, backend.kinds, blobs, digests)


def export_groups(
    backend: KeyedStateBackend, key_groups: Iterable[int], subtask: KeyedSubtask
) -> Iterator[tuple[int, bytes]]:
    """(key group, canonical blob) of each of ``key_groups`` that has entries, in order; a
    key without a portable encoding fails naming ``subtask``."""
    for key_group in sorted(key_groups):
        writer = GroupWriter()
        try:
            backend.export_group(key_group, writer)
        except CanonicalKeyError as exc:
            raise CanonicalKeyError(f"{subtask.describe()}: {exc}") from None
        blob = writer.finish()
        if blob:
            yield key_group, blob


def write_canonical_file(
    storage: Storage,
    relative: str,
    kinds: Mapping[str, str],
    blobs: Iterable[tuple[int, bytes]],
    digests: bool,
) -> CanonicalManifest:
    """Write canonical key-group ``blobs`` (in key-group order, made as the file is
    written) as a new file ``relative`` under ``storage`` (a name only this task attempt
    writes: an existing file is an error, never replaced); its manifest, naming the file
    by ``relative``, with the blobs' digests when ``digests``. No blobs: no file."""
    blobs = iter(blobs)
    first = next(blobs, None)
    if first is None:
        return CanonicalManifest(dict(kinds), {})
    index: dict[int, snapshot.Position] = {}
    storage.create(
        relative,
        snapshot.frame_chunks(
            canonical_snapshot.MAGIC, dict(kinds), chain([first], blobs), index, digests
        ),
    )
    return CanonicalManifest(
        dict(kinds),
        {kg: snapshot.GroupHandle(relative, *position) for kg, position in index.items()},
    )
