"""Keyed-state manifests: which files hold a keyed subtask's state, as plain JSON.

Two shapes, one per backend::

    {"backend": "hashmap", "kinds": {...}, "groups": {key group: [url, offset, length, crc]}}
    {"backend": "rocksdb", "kinds": {...}, "files": {name: [url, size]}, "snapshot": tag}

A heap subtask reports only the key groups it changed, so its manifest is merged; a RocksDB
subtask reports its whole file set (most entries pointing at files uploaded before).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

HASHMAP = "hashmap"
ROCKSDB = "rocksdb"


def backend_of(manifest: dict[str, Any]) -> str:
    return manifest.get("backend", HASHMAP)


def empty(backend: str) -> dict[str, Any]:
    if backend == ROCKSDB:
        return {"backend": ROCKSDB, "kinds": {}, "files": {}, "snapshot": None}
    return {"backend": HASHMAP, "kinds": {}, "groups": {}}


def is_empty(manifest: dict[str, Any] | None) -> bool:
    return not manifest or not (manifest.get("groups") or manifest.get("files"))


def apply_report(manifest: dict[str, Any], report: dict[str, Any]) -> None:
    """Move a manifest forward by a subtask's snapshot report."""
    manifest["kinds"].update(report["kinds"])
    if backend_of(report) == ROCKSDB:
        manifest.pop("groups", None)
        manifest.update(backend=ROCKSDB, files=report["files"], snapshot=report["snapshot"])
    else:
        manifest["groups"].update(report["groups"])


def copy(manifest: dict[str, Any]) -> dict[str, Any]:
    result = dict(manifest, kinds=dict(manifest["kinds"]))
    for part in ("groups", "files"):
        if part in manifest:
            result[part] = dict(manifest[part])
    return result


def handles(manifest: dict[str, Any]) -> Iterator[tuple[str, int]]:
    """(url, bytes) of every piece of state the manifest points at."""
    for handle in manifest.get("groups", {}).values():
        yield handle[0], handle[2]
    for handle in manifest.get("files", {}).values():
        yield handle[0], handle[1]


def files(manifest: dict[str, Any]) -> set[str]:
    return {url for url, _ in handles(manifest)}


def size(manifest: dict[str, Any]) -> int:
    return sum(length for _, length in handles(manifest))


def map_urls(manifest: dict[str, Any], mapping: Callable[[str], str]) -> dict[str, Any]:
    result = copy(manifest)
    if "groups" in result:
        result["groups"] = {kg: [mapping(h[0]), *h[1:]] for kg, h in result["groups"].items()}
    if "files" in result:
        result["files"] = {name: [mapping(h[0]), h[1]] for name, h in result["files"].items()}
    return result
