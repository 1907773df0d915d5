"""The key that signs a job's checkpoints and savepoints (beyond Flink).

Whoever can write a checkpoint's files can run code in the job that restores it: state values
are pickles, as in PyFlink. With a signing key (``lockgate.security.checkpoint-signing-key-file``)
``_metadata`` carries an HMAC-SHA256 of its body, and the body names every state file with
the SHA-256 digest of its bytes (``state.state_digest``). A restore, or the state processor,
checks the HMAC before it uses anything the body says, and each digest as it reads a file,
before it unpickles a byte; an unsigned, altered or foreign-signed checkpoint is refused.

The key is the content of a file that only the job's user can read (``openssl rand -hex 32``),
at least 32 bytes. It stays on the driver: tasks only compute and check digests.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from dataclasses import dataclass, field

MIN_BYTES = 32
_MAX_BYTES = 4096


class SigningKeyError(ValueError):
    """A signing key file that cannot be used."""


@dataclass(frozen=True)
class CheckpointSigningKey:
    path: str  # the key file, named in messages
    secret: bytes = field(repr=False)

    @property
    def key_id(self) -> str:
        """Names the key in a signature without giving it away, so that a checkpoint signed
        with another key is told apart from an altered one."""
        return hashlib.sha256(b"lockgate checkpoint signing key\0" + self.secret).hexdigest()[:16]

    @staticmethod
    def load(path: str) -> CheckpointSigningKey:
        """The key in file ``path``: a regular file of this user that no other user can read
        or write, of 32 to 4096 bytes."""
        try:
            # O_NONBLOCK: a FIFO put in the key's place must not hang the job's start
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise SigningKeyError(
                f"checkpoint signing key file {path}: {exc.strerror or exc}"
            ) from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise SigningKeyError(f"checkpoint signing key file {path} is not a regular file")
            if info.st_uid != os.geteuid():
                raise SigningKeyError(
                    f"checkpoint signing key file {path} belongs to uid {info.st_uid}, not to "
                    f"this user ({os.geteuid()})"
                )
            if info.st_mode & 0o077:
                raise SigningKeyError(
                    f"checkpoint signing key file {path} has mode "
                    f"{stat.S_IMODE(info.st_mode):o}: other users may read or change it "
                    "(chmod 600 it)"
                )
            secret = os.read(fd, _MAX_BYTES + 1)
        finally:
            os.close(fd)
        if not MIN_BYTES <= len(secret) <= _MAX_BYTES:
            raise SigningKeyError(
                f"checkpoint signing key file {path} holds {len(secret)} bytes; a key has "
                f"{MIN_BYTES} to {_MAX_BYTES}"
            )
        return CheckpointSigningKey(path, secret)

    def sign(self, message: bytes) -> str:
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()

    def verifies(self, message: bytes, signature: str) -> bool:
        return hmac.compare_digest(self.sign(message), signature)
