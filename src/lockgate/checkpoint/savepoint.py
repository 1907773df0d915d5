"""Savepoints: a self-contained, relocatable image of a job's whole state.

A savepoint is ``<target>/savepoint-<first 6 characters of the job id>-<12 hex>/``: its
``_metadata`` (the checkpoint metadata format, so versioned and checksummed) and the
keyed-state files it names, in the canonical form and by paths relative to the directory,
so that a copied or moved savepoint restores, into either backend and at any parallelism.
lockgate never deletes a completed savepoint: the directory is the user's. Until its
``_metadata`` is written it belongs to the savepoint being taken: files of task attempts
that lost are removed before, and a savepoint that fails is removed whole.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from lockgate.checkpoint import metadata
from lockgate.checkpoint.coordinator import (
    CompletedCheckpoint,
    checkpoint_number,
    load_checkpoint,
    with_absolute_files,
)
from lockgate.checkpoint.metadata import CheckpointFormatError, CheckpointMetadata
from lockgate.checkpoint.signing_key import CheckpointSigningKey
from lockgate.common.config_options import SAVEPOINT_DIR
from lockgate.core.fs.storage import Storage, read_url

METADATA = "_metadata"


def new_savepoint_directory(target: str, job_id: str) -> Storage:
    """A new, empty directory for a savepoint of ``job_id`` under ``target``."""
    root = Storage(target)
    for _ in range(10):
        name = f"savepoint-{job_id[:6]}-{secrets.token_hex(6)}"
        if not root.exists(name):
            return root.child(name).make_private(SAVEPOINT_DIR.key)
    raise OSError(f"no unused savepoint directory name under {target} after 10 tries")


def complete_savepoint(
    directory: Storage, body: CheckpointMetadata, signing_key: CheckpointSigningKey | None
) -> str:
    """Write ``_metadata`` (last, atomically, signed with ``signing_key`` when there is one)
    after removing the files of attempts that lost; returns the savepoint's URL."""
    keep = set(body.files())
    for relative in _files(directory):
        if relative not in keep:
            directory.remove(relative)
            directory.prune(relative.rpartition("/")[0])
    directory.write_bytes(METADATA, metadata.encode(body, signing_key))
    return directory.url


def _files(directory: Storage) -> Iterable[str]:
    if not directory.fs.exists(directory.root):
        return []
    found = (
        directory.relative_of(directory.fs.unstrip_protocol(p))
        for p in directory.fs.find(directory.root)
    )
    return [relative for relative in found if relative is not None]


def is_checkpoint_path(path: str) -> bool:
    name = path.rstrip("/").removesuffix("/_metadata").rpartition("/")[2]
    return checkpoint_number(name) is not None


def load_snapshot(
    path: str, signing_key: CheckpointSigningKey | None
) -> tuple[CompletedCheckpoint, list[str]]:
    """A retained checkpoint (``chk-<n>``) or a savepoint, by its directory or ``_metadata``,
    signed with ``signing_key`` when there is one; the second value lists checkpoints
    skipped as damaged (a savepoint has no fallback)."""
    if is_checkpoint_path(path):
        return load_checkpoint(path, signing_key)
    return load_savepoint(path, signing_key), []


def load_savepoint(path: str, signing_key: CheckpointSigningKey | None) -> CompletedCheckpoint:
    directory_url = path.rstrip("/").removesuffix("/_metadata")
    directory = Storage(directory_url)
    meta_url = directory.url_of(METADATA)
    if not directory.fs.exists(directory.root):
        raise CheckpointFormatError(f"state recovery path {path} does not exist")
    try:
        data = read_url(meta_url)
    except FileNotFoundError:
        raise CheckpointFormatError(
            f"state recovery path {path} is not a savepoint or a chk-<n> checkpoint: "
            f"{meta_url} is missing"
        ) from None
    body = metadata.decode(data, meta_url, signing_key)
    absolute = with_absolute_files(body, directory.url_of(""), meta_url)
    for url in absolute.files():
        if not Storage(url.rpartition("/")[0]).exists(url.rpartition("/")[2]):
            raise CheckpointFormatError(
                f"savepoint {directory.url}: its state file {url} is missing"
            )
    return CompletedCheckpoint(body.checkpoint_id, body.epoch, absolute, directory.url)
