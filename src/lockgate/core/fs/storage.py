"""File access for everything lockgate persists: through fsspec, written atomically.

Readers (the driver, a retried task, another executor) must never see half a file, so every
write goes to a temporary name first and is renamed into place.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem

from lockgate.core.fs.private_directory import UnsafeDirectoryError, private_directory


class Storage:
    """A directory tree under one fsspec URL; paths given to methods are relative to it."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")
        self.fs, self.root = url_to_fs(self.url)
        self.root = self.root.rstrip("/")

    def path(self, relative: str) -> str:
        return f"{self.root}/{relative}" if relative else self.root

    def url_of(self, relative: str) -> str:
        """A URL of the file that any process can open, whatever its working directory."""
        url: str = self.fs.unstrip_protocol(self.path(relative))
        return url

    def make_private(self, setting: str) -> Storage:
        """On a local file system, create this directory with mode 0700 (or check that it is
        this user's and closed to others, ``private_directory``), so that nothing written
        under it is readable by another local user; elsewhere the store's own access control
        applies. ``setting`` names the configuration key that chose it."""
        if isinstance(self.fs, LocalFileSystem):
            try:
                private_directory(Path(self.root), setting)
            except UnsafeDirectoryError:
                raise
            except OSError:
                pass  # cannot be made at all: the storage check says so, naming the setting
        return self

    def child(self, relative: str) -> Storage:
        return Storage(f"{self.url}/{relative}")

    def _write_temporary(self, relative: str, data: bytes | Iterable[bytes]) -> tuple[str, str]:
        """Write ``data`` (bytes, or chunks of them) under a hidden temporary name next to
        ``relative``; returns the temporary path and the target path."""
        target = self.path(relative)
        parent = target.rsplit("/", 1)[0]
        self.fs.makedirs(parent, exist_ok=True)
        temporary = f"{parent}/.{target.rsplit('/', 1)[1]}.{uuid.uuid4().hex}.tmp"
        with self.fs.open(temporary, "wb") as out:
            if isinstance(data, bytes):
                out.write(data)
            else:
                for chunk in data:
                    out.write(chunk)
        return temporary, target

    def write_bytes(self, relative: str, data: bytes) -> None:
        temporary, target = self._write_temporary(relative, data)
        self.fs.mv(temporary, target)

    def create(self, relative: str, data: bytes | Iterable[bytes]) -> None:
        """Write a new file atomically (``data``: its bytes, or chunks of them as they are
        made); ``FileExistsError`` if the name exists already.

        On a local file system the name is taken by a hard link, which fails rather than
        replace; elsewhere the check and the rename are two steps (object stores have no
        exclusive rename), so callers still use names that only they write.
        """
        temporary, target = self._write_temporary(relative, data)
        try:
            if isinstance(self.fs, LocalFileSystem):
                os.link(temporary, target)
            elif self.fs.exists(target):
                raise FileExistsError(f"{self.fs.unstrip_protocol(target)} exists already")
            else:
                self.fs.mv(temporary, target)
        finally:
            if self.fs.exists(temporary):
                self.fs.rm(temporary)

    def put_file(self, local_path: str, relative: str, link: bool) -> None:
        """Upload an immutable local file (a RocksDB SST, say) under ``relative``.

        With ``link``, on a local file system the file is hard-linked when it can be: it
        never changes, and the link costs nothing (but whoever can write the stored file
        then writes the local one too). Otherwise it is copied to a temporary name and
        renamed.
        """
        target = self.path(relative)
        parent = target.rsplit("/", 1)[0]
        self.fs.makedirs(parent, exist_ok=True)
        if link and isinstance(self.fs, LocalFileSystem):
            try:
                os.link(local_path, target)
                return
            except FileExistsError:
                raise  # names are unique per attempt: never replace what another wrote
            except OSError:
                pass  # another device, or links not allowed: copy
        if self.fs.exists(target):
            raise FileExistsError(f"{self.fs.unstrip_protocol(target)} exists already")
        temporary = f"{parent}/.{target.rsplit('/', 1)[1]}.{uuid.uuid4().hex}.tmp"
        self.fs.put_file(local_path, temporary)
        self.fs.mv(temporary, target)

    def read_bytes(self, relative: str) -> bytes:
        data: bytes = self.fs.cat_file(self.path(relative))
        return data

    def write_json(self, relative: str, value: Any) -> None:
        self.write_bytes(relative, json.dumps(value, separators=(",", ":")).encode())

    def read_json(self, relative: str) -> Any:
        return json.loads(self.read_bytes(relative))

    def exists(self, relative: str) -> bool:
        return bool(self.fs.exists(self.path(relative)))

    def remove(self, relative: str) -> None:
        path = self.path(relative)
        if self.fs.exists(path):
            self.fs.rm(path, recursive=True)

    def relative_of(self, url: str) -> str | None:
        """The path of ``url`` relative to this tree, or None when it may lie outside it: on
        another host of its file system, or through a ``.`` or ``..`` part (which the file
        system resolves after any link, so ``<tree>/link/..`` may be anywhere)."""
        fs, found = url_to_fs(url)
        # Another file system, or the same kind on another host (not ``fs != self.fs``:
        # fsspec's instances of one file system differ between threads)
        if type(fs) is not type(self.fs) or fs.storage_options != self.fs.storage_options:
            return None
        if {".", ".."} & set(found.split("/")):
            return None
        path: str = posixpath.normpath(found)
        root = posixpath.normpath(self.root)
        if not path.startswith(root + "/"):
            return None
        return path[len(root) + 1 :]

    def discard(self, url: str) -> None:
        """Delete the file at ``url``, which must lie in this tree: the URLs come from
        acknowledgements and manifests, and the driver never deletes outside the job's own
        directories, whatever such a record says."""
        relative = self.relative_of(url)
        if relative is None:
            raise ValueError(f"not deleting {url}: it is not under {self.url}")
        self.remove(relative)
        self.prune(relative.rpartition("/")[0])

    def prune(self, relative: str) -> None:
        """Remove the directory ``relative`` if it is empty, so that directories made per
        epoch or per state version go with their last file instead of piling up for as
        long as the job runs. Only on local file systems, whose ``rmdir`` refuses a
        non-empty directory atomically (an attempt may be writing into it); object stores
        have no empty directories."""
        if not relative or not isinstance(self.fs, LocalFileSystem):
            return
        with contextlib.suppress(OSError):  # not empty, or gone already
            os.rmdir(self.path(relative))

    def list(self, relative: str) -> list[str]:
        """Names (not paths) of the entries of a directory, or [] if it does not exist."""
        path = self.path(relative)
        if not self.fs.exists(path):
            return []
        return sorted(entry.rstrip("/").rsplit("/", 1)[-1] for entry in self.fs.ls(path, False))


def read_url(url: str, start: int | None = None, end: int | None = None) -> bytes:
    """The file's bytes, or those from ``start`` up to ``end`` (exclusive)."""
    fs, path = url_to_fs(url)
    data: bytes = fs.cat_file(path, start=start, end=end)
    return data


def download_url(url: str, local_path: str, link: bool) -> None:
    """Copy a stored file to the local disk; ``link``: hard-link it when it is local already
    (only for files nobody will change, as the stored copy would change with them)."""
    fs, path = url_to_fs(url)
    if link and isinstance(fs, LocalFileSystem):
        try:
            os.link(path, local_path)
            return
        except OSError:
            pass
    fs.get_file(path, local_path)


def is_writable(url: str) -> bool:
    """Whether a file can be written under ``url``; the probe removes only its own file
    (another process may be probing the same directory)."""
    probe = Storage(url)
    name = f".probe-{uuid.uuid4().hex}"
    try:
        probe.write_bytes(name, b"")
    except OSError:
        return False
    probe.remove(name)
    return True


__all__ = ["Storage", "download_url", "is_writable", "read_url"]
