"""Keyed state of a subtask across epochs: which backend, how it is snapshotted and restored.

Heap: after every epoch the key groups that changed go into one file; a restore reads the
key groups of the manifest. RocksDB: after every epoch the instance is checkpointed on
local disk (SSTs hard-linked) and the SST files that storage does not hold yet are
uploaded; a restore builds a new instance from the local snapshot when this executor has
it, and downloads only the files it lacks otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass
from typing import Any

from lockgate.checkpoint.storage import Storage, download_url, read_url
from lockgate.common import config_options as options
from lockgate.state import manifests, snapshot
from lockgate.state.heap import HeapKeyedStateBackend
from lockgate.state.key_groups import KeyGroupRange
from lockgate.state.rocksdb import RocksDBKeyedStateBackend, RocksDBSettings, StateBackendError

_UPLOADED = "lockgate-uploaded.json"  # in a local snapshot: file name -> URL in storage
_LOCAL_SNAPSHOTS_KEPT = 3


@dataclass(frozen=True)
class KeyedStateSettings:
    backend: str  # manifests.HASHMAP or manifests.ROCKSDB
    job_id: str
    incremental: bool
    local_dirs: tuple[str, ...]  # empty: Spark's local directory of the application
    rocksdb: RocksDBSettings

    @staticmethod
    def from_config(config: dict[str, str], job_id: str) -> KeyedStateSettings:
        local = options.ROCKSDB_LOCAL_DIR.read(config)
        return KeyedStateSettings(
            backend=options.STATE_BACKEND.read(config).lower(),
            job_id=job_id,
            incremental=options.INCREMENTAL.read(config),
            local_dirs=tuple(
                p.strip().removeprefix("file://") for p in local.split(",") if p.strip()
            ),
            rocksdb=RocksDBSettings(
                write_buffer_bytes=options.ROCKSDB_WRITE_BUFFER.read(config),
                block_cache_bytes=options.ROCKSDB_BLOCK_CACHE.read(config),
                cache_entries=options.STATE_CACHE_ENTRIES.read(config),
                compaction_style=options.ROCKSDB_COMPACTION_STYLE.read(config),
            ),
        )

    def job_local_dirs(self) -> list[str]:
        """This job's RocksDB directories on the local disk of the calling process."""
        roots = self.local_dirs
        if not roots:
            from pyspark import SparkFiles

            roots = (SparkFiles.getRootDirectory(),)
        return [f"{root}/lockgate-rocksdb/{self.job_id}" for root in roots]


def restore_backend(
    settings: KeyedStateSettings,
    vertex: Any,
    index: int,
    key_groups: KeyGroupRange,
    saved: dict[str, Any],
) -> Any:
    """A keyed backend holding the state of ``saved``'s manifest (empty without one)."""
    manifest = saved.get("keyed")  # JobState checked that this backend wrote it
    if settings.backend == manifests.ROCKSDB:
        return _restore_rocksdb(settings, vertex, index, key_groups, manifest, saved)
    backend = HeapKeyedStateBackend(key_groups, vertex.max_parallelism)
    if not manifests.is_empty(manifest):
        _install_heap_groups(backend, manifest)
        if saved.get("rewrite_all"):
            # Restored from another job's checkpoint: its files are not ours to reference, so
            # the first snapshot of this job copies every key group (Flink's NO_CLAIM mode).
            backend.dirty.update(int(kg) for kg in manifest["groups"])
    return backend


def _install_heap_groups(backend: HeapKeyedStateBackend, manifest: dict[str, Any]) -> None:
    by_file: dict[str, list[tuple[int, snapshot.GroupHandle]]] = {}
    for key_group, raw in manifest["groups"].items():
        handle = snapshot.GroupHandle.from_json(raw)
        by_file.setdefault(handle.file, []).append((int(key_group), handle))
    kinds = manifest["kinds"]
    for url, handles in by_file.items():
        data = read_url(url)
        for key_group, handle in handles:
            contents = snapshot.decode_group(data, handle, key_group, url)
            backend.install_group(key_group, contents, kinds)
    backend.dirty.clear()


def snapshot_backend(
    settings: KeyedStateSettings,
    backend: Any,
    storage: Storage,
    uid: str,
    index: int,
    tag: str,
    checkpoint: bool,
) -> dict[str, Any]:
    """Persist what changed in this epoch; returns the report the ack carries."""
    if isinstance(backend, RocksDBKeyedStateBackend):
        return _snapshot_rocksdb(settings, backend, storage, uid, index, tag, checkpoint)
    changed = backend.take_dirty_groups()
    report: dict[str, Any] = {
        "backend": manifests.HASHMAP,
        "uid": uid,
        "kinds": backend.kinds,
        "groups": {},
        "bytes_written": 0,
        "entries": backend.num_entries(),
    }
    if changed:
        data, positions = snapshot.encode(
            backend.kinds, {kg: backend.group_contents(kg) for kg in changed}
        )
        relative = f"{uid}/{index}/{tag}.lgks"
        storage.write_bytes(relative, data)
        url = storage.url_of(relative)
        report["groups"] = {
            str(kg): snapshot.GroupHandle(url, *positions[kg]).to_json() for kg in changed
        }
        report["bytes_written"] = len(data)
    return report


# RocksDB -----------------------------------------------------------------------------------


def _subtask_dir(settings: KeyedStateSettings, vertex_id: int, index: int) -> str:
    roots = settings.job_local_dirs()
    return f"{roots[index % len(roots)]}/op{vertex_id}-{index}"


def _restore_rocksdb(
    settings: KeyedStateSettings,
    vertex: Any,
    index: int,
    key_groups: KeyGroupRange,
    manifest: dict[str, Any] | None,
    saved: dict[str, Any],
) -> RocksDBKeyedStateBackend:
    subtask_dir = _subtask_dir(settings, vertex.id, index)
    path = f"{subtask_dir}/db-{uuid.uuid4().hex[:12]}"
    uploaded: dict[str, str] = {}
    try:
        if not manifests.is_empty(manifest):
            uploaded = _fetch_files(manifest, subtask_dir, path)
        backend = RocksDBKeyedStateBackend(
            key_groups, vertex.max_parallelism, path, settings.rocksdb
        )
    except (OSError, StateBackendError) as exc:
        shutil.rmtree(path, ignore_errors=True)
        where = f"'{vertex.name}' (uid '{vertex.head.uid}') subtask {index}"
        snapshot_tag = (manifest or {}).get("snapshot")
        if snapshot_tag:
            where += f", state version {snapshot_tag}"
        raise StateBackendError(f"cannot restore the RocksDB state of {where}: {exc}") from None
    # NO_CLAIM: after a restore from another job's checkpoint, upload everything anew
    backend.uploaded = {} if saved.get("rewrite_all") else uploaded
    return backend


def _fetch_files(manifest: dict[str, Any], subtask_dir: str, path: str) -> dict[str, str]:
    """Put the manifest's files into the new instance directory ``path``: from a local
    snapshot of this executor when it has them, else from checkpoint storage. SST files are
    hard-linked where they can be (RocksDB never changes them); the others are copied, as
    RocksDB rewrites some of them on open. Returns SST name -> URL."""
    try:
        os.makedirs(path)
    except OSError as exc:
        raise StateBackendError(
            f"RocksDB local directory {subtask_dir} is not writable: {exc.strerror or exc}"
        ) from None
    local = _local_files(subtask_dir)
    uploaded = {}
    for name, (url, size) in manifest["files"].items():
        target = f"{path}/{name}"
        immutable = name.endswith(".sst")
        source = local.get(url)
        if source is None:
            try:
                download_url(url, target, link=immutable)
            except FileNotFoundError:
                raise StateBackendError(f"state file {url} is missing") from None
        elif immutable:
            os.link(source, target)
        else:
            shutil.copyfile(source, target)
        if os.path.getsize(target) != size:
            raise StateBackendError(
                f"state file {url} has {os.path.getsize(target)} bytes; its manifest says {size}"
            )
        if immutable:
            uploaded[name] = url
    return uploaded


def _local_files(subtask_dir: str) -> dict[str, str]:
    """URL -> local path of every file that a local snapshot of this subtask holds."""
    found: dict[str, str] = {}
    if not os.path.isdir(subtask_dir):
        return found
    for entry in os.scandir(subtask_dir):
        if not entry.name.startswith("snap-"):
            continue
        try:
            with open(f"{entry.path}/{_UPLOADED}") as index_file:
                index = json.load(index_file)
        except (OSError, ValueError):
            continue  # a snapshot cut short
        for name, url in index.items():
            found[url] = f"{entry.path}/{name}"
    return found


def _snapshot_rocksdb(
    settings: KeyedStateSettings,
    backend: RocksDBKeyedStateBackend,
    storage: Storage,
    uid: str,
    index: int,
    tag: str,
    checkpoint: bool,
) -> dict[str, Any]:
    subtask_dir = os.path.dirname(backend.path)
    snap_dir = f"{subtask_dir}/snap-{tag}"
    names = backend.checkpoint_to(snap_dir)
    # A full (non-incremental) checkpoint holds its own copy of every file.
    fresh = checkpoint and not settings.incremental
    files: dict[str, list[Any]] = {}
    written = 0
    for name in names:
        if name.endswith(".log"):
            continue  # the WAL is off and the memtable was flushed: the log is empty
        local_path = f"{snap_dir}/{name}"
        size = os.path.getsize(local_path)
        url = None if fresh else backend.uploaded.get(name)
        if url is None:
            if name.endswith(".sst"):
                suffix = f"-{tag}" if fresh else ""
                relative = f"{uid}/{index}/{backend.instance_id}-{name}{suffix}"
            else:
                relative = f"{uid}/{index}/{tag}/{name}"
            storage.put_file(local_path, relative)
            url = storage.url_of(relative)
            written += size
            if name.endswith(".sst"):
                backend.uploaded[name] = url
        files[name] = [url, size]
    with open(f"{snap_dir}/{_UPLOADED}", "w") as index_file:
        json.dump({name: handle[0] for name, handle in files.items()}, index_file)
    _drop_old_snapshots(subtask_dir, keep=snap_dir)
    return {
        "backend": manifests.ROCKSDB,
        "uid": uid,
        "kinds": backend.kinds,
        "files": files,
        "snapshot": tag,
        "bytes_written": written,
        "entries": backend.num_entries(),
    }


def _drop_old_snapshots(subtask_dir: str, keep: str) -> None:
    snaps = sorted(
        (e for e in os.scandir(subtask_dir) if e.name.startswith("snap-")),
        key=lambda e: e.stat().st_mtime_ns,
    )
    for entry in snaps[:-_LOCAL_SNAPSHOTS_KEPT]:
        if entry.path != keep:
            shutil.rmtree(entry.path, ignore_errors=True)
