"""``_metadata``: the one file that makes a checkpoint a checkpoint.

It is JSON (never pickle), carries a format name and version, and a SHA-256 checksum of
its body, so a truncated or altered file is recognised and reported with its path. It is
written last and atomically: a ``chk-<n>`` directory without a valid ``_metadata`` is not
a checkpoint.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

FORMAT = "lockgate-checkpoint"
VERSION = 1


class CheckpointFormatError(ValueError):
    """A ``_metadata`` file that cannot be used: missing, damaged, foreign or too new."""


def _canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def encode(body: dict[str, Any]) -> bytes:
    canonical = _canonical(body)
    envelope = {
        "format": FORMAT,
        "version": VERSION,
        "sha256": hashlib.sha256(canonical).hexdigest(),
        "body": body,
    }
    return json.dumps(envelope, sort_keys=True, separators=(",", ":")).encode()


def decode(data: bytes, path: str) -> dict[str, Any]:
    try:
        envelope = json.loads(data)
    except (UnicodeDecodeError, ValueError):
        raise CheckpointFormatError(
            f"checkpoint metadata {path} is truncated or not a lockgate checkpoint "
            f"({len(data)} bytes that are not complete JSON)"
        ) from None
    if not isinstance(envelope, dict) or envelope.get("format") != FORMAT:
        raise CheckpointFormatError(f"{path} is not a lockgate checkpoint metadata file")
    version = envelope.get("version")
    if version != VERSION:
        raise CheckpointFormatError(
            f"checkpoint metadata {path} has format version {version!r}; this lockgate reads "
            f"version {VERSION}"
        )
    body = envelope.get("body")
    if not isinstance(body, dict) or hashlib.sha256(_canonical(body)).hexdigest() != envelope.get(
        "sha256"
    ):
        raise CheckpointFormatError(
            f"checkpoint metadata {path} fails its checksum: the file was altered or damaged"
        )
    return body
