"""SHA-256 digests of state blobs and files, the part of a signed checkpoint that files hold.

When a job signs its checkpoints and savepoints (``lockgate.security.checkpoint-signing-key-file``),
every handle to state (``GroupHandle``, ``FileHandle``, ``OperatorStateHandle``) carries the
digest of the bytes it names, and the signature of ``_metadata`` covers the handles. A reader
checks a digest before it unpickles a byte of what the handle names. The CRC-32 a handle
always carries guards against damage only: anyone who can write a file can make its CRC match.
"""

from __future__ import annotations

import hashlib


class StateDigestError(ValueError):
    """State bytes that differ from the digest their signed handle gives."""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_digest(path: str) -> str:
    """The digest of a local file, read in chunks."""
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def check(data: bytes, expected: str | None, what: str) -> None:
    """Refuse ``data`` (described by ``what``) unless it has the digest ``expected`` (None:
    the handle has none, as when the job does not sign its checkpoints)."""
    if expected is not None and digest(data) != expected:
        raise _altered(what)


def check_file(path: str, expected: str | None, what: str) -> None:
    """``check`` of a local file."""
    if expected is not None and file_digest(path) != expected:
        raise _altered(what)


def _altered(what: str) -> StateDigestError:
    return StateDigestError(
        f"{what} does not match the SHA-256 digest its signed checkpoint gives: it was "
        "altered after it was written"
    )
