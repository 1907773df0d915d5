"""The RocksDB backend's restore: a new instance from a local snapshot of this executor when
it has one with the files (``RocksDBKeyedStateBackend.snapshot`` leaves them, ``snap-<tag>``),
else with what it lacks downloaded from storage; at another parallelism, from the instances of
the old subtasks whose key groups it takes; or filled from canonical files (savepoints).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lockgate.common.config_options import ROCKSDB_LOCAL_DIR
from lockgate.core.fs.directory_lease import DirectoryLease, lease_job_directory
from lockgate.core.fs.private_directory import private_directory
from lockgate.core.fs.storage import download_url
from lockgate.state import state_digest
from lockgate.state.backend_settings import KeyedStateSettings
from lockgate.state.keyed_subtask import KeyedSubtask
from lockgate.state.manifests import (
    CanonicalManifest,
    FileHandle,
    KeyedStateManifest,
    RocksDBManifest,
    RocksDBRescaleManifest,
)
from lockgate.state.rocksdb import UPLOADED_INDEX, RocksDBKeyedStateBackend, StateBackendError
from lockgate.state.savepoint_state import restore_canonical

# The job directories this process keeps instances in, leased for as long as it lives (a
# subtask host lives for its run): a sweep by another job's start leaves them alone.
_LEASES: dict[str, DirectoryLease] = {}


class RocksDBRestoreOperation:
    def __init__(self, settings: KeyedStateSettings):
        self.settings = settings

    def _subtask_dir(self, subtask: KeyedSubtask) -> str:
        roots = self.settings.job_local_dirs()
        job_dir = roots[subtask.index % len(roots)]
        try:
            private_directory(Path(job_dir).parent, ROCKSDB_LOCAL_DIR.key)
            if job_dir not in _LEASES:
                _LEASES[job_dir] = lease_job_directory(Path(job_dir))
        except PermissionError as exc:  # UnsafeDirectoryError, or no right to create it
            where = subtask.describe()
            raise StateBackendError(f"cannot keep the RocksDB state of {where}: {exc}") from None
        return f"{job_dir}/{subtask.local_name}"

    def restore(
        self, subtask: KeyedSubtask, manifest: KeyedStateManifest | None, claimed: bool
    ) -> RocksDBKeyedStateBackend:
        subtask_dir = self._subtask_dir(subtask)
        path = f"{subtask_dir}/db-{uuid.uuid4().hex[:12]}"
        uploaded: dict[str, FileHandle] = {}
        try:
            if isinstance(manifest, RocksDBRescaleManifest):
                backend = self._rescale(subtask, manifest, subtask_dir, path)
            else:
                if isinstance(manifest, RocksDBManifest) and not manifest.is_empty():
                    uploaded = _fetch_files(manifest, subtask_dir, path)
                backend = self._open(subtask, path)
                if isinstance(manifest, CanonicalManifest):
                    with _disposed_on_failure(backend):
                        restore_canonical(backend, manifest)
        except (OSError, StateBackendError) as exc:
            shutil.rmtree(path, ignore_errors=True)
            where = subtask.describe()
            if isinstance(manifest, RocksDBManifest) and manifest.snapshot:
                where += f", state version {manifest.snapshot}"
            raise StateBackendError(f"cannot restore the RocksDB state of {where}: {exc}") from None
        # Files of another job's checkpoint are not ours: upload everything anew (NO_CLAIM)
        backend.uploaded = uploaded if claimed else {}
        return backend

    def _open(self, subtask: KeyedSubtask, path: str) -> RocksDBKeyedStateBackend:
        return RocksDBKeyedStateBackend(
            subtask.key_groups,
            subtask.max_parallelism,
            path,
            self.settings.rocksdb,
            incremental=self.settings.incremental,
        )

    def _rescale(
        self,
        subtask: KeyedSubtask,
        manifest: RocksDBRescaleManifest,
        subtask_dir: str,
        path: str,
    ) -> RocksDBKeyedStateBackend:
        """An instance with this subtask's key groups from the old subtasks' instances: the
        one sharing the most key groups is the base (Flink's choice too), the others' key
        groups are copied in."""
        mine = subtask.key_groups

        parts = sorted(
            manifest.parts, key=lambda part: len(part.key_groups.intersection(mine)), reverse=True
        )
        _fetch_files(parts[0].manifest, subtask_dir, path)
        backend = self._open(subtask, path)
        with _disposed_on_failure(backend):
            backend.keep_only(mine)
            for part in parts[1:]:
                old = part.key_groups
                part_path = f"{subtask_dir}/part-{uuid.uuid4().hex[:12]}"
                try:
                    _fetch_files(part.manifest, subtask_dir, part_path)
                    source = RocksDBKeyedStateBackend(
                        old, subtask.max_parallelism, part_path, self.settings.rocksdb
                    )
                except BaseException:
                    shutil.rmtree(part_path, ignore_errors=True)
                    raise
                try:
                    backend.copy_groups(source, old.intersection(mine))
                finally:
                    source.dispose()
        return backend


@contextmanager
def _disposed_on_failure(backend: RocksDBKeyedStateBackend) -> Iterator[None]:
    try:
        yield
    except BaseException:
        backend.dispose()
        raise


def _fetch_files(manifest: RocksDBManifest, subtask_dir: str, path: str) -> dict[str, FileHandle]:
    """Put the manifest's files into the new instance directory ``path``: from a local
    snapshot of this executor when it has them (private to the user, as is the instance),
    else from checkpoint storage. SST files are hard-linked where they can be (RocksDB never
    changes them); the others are copied, as RocksDB rewrites some of them on open. A file
    with a digest (a signed checkpoint's) is copied, so that the bytes checked are the
    instance's own, then checked. Returns SST name -> handle."""
    try:
        os.makedirs(path)
    except OSError as exc:
        raise StateBackendError(
            f"RocksDB local directory {subtask_dir} is not writable: {exc.strerror or exc}"
        ) from None
    local = _local_files(subtask_dir)
    uploaded = {}
    for name, handle in manifest.files.items():
        target = f"{path}/{name}"
        immutable = name.endswith(".sst")
        source = local.get(handle.url)
        if source is None:
            try:
                download_url(handle.url, target, link=immutable and handle.sha256 is None)
            except FileNotFoundError:
                raise StateBackendError(f"state file {handle.url} is missing") from None
            try:
                state_digest.check_file(target, handle.sha256, f"state file {handle.url}")
            except state_digest.StateDigestError as exc:
                raise StateBackendError(str(exc)) from None
        elif immutable:
            os.link(source, target)
        else:
            shutil.copyfile(source, target)
        if os.path.getsize(target) != handle.size:
            raise StateBackendError(
                f"state file {handle.url} has {os.path.getsize(target)} bytes; its manifest "
                f"says {handle.size}"
            )
        if immutable:
            uploaded[name] = handle
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
            with open(f"{entry.path}/{UPLOADED_INDEX}") as index_file:
                index = json.load(index_file)
        except (OSError, ValueError):
            continue  # a snapshot cut short
        for name, url in index.items():
            found[url] = f"{entry.path}/{name}"
    return found
