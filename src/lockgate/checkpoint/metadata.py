"""``_metadata``: the one file that makes a checkpoint a checkpoint.

It is JSON (never pickle), carries a format name and version, and a SHA-256 checksum of
its body, so a truncated or altered file is recognised and reported with its path. It is
written last and atomically: a ``chk-<n>`` directory without a valid ``_metadata`` is not
a checkpoint.

The body is a ``CheckpointMetadata`` (Flink's name): one ``OperatorState`` per operator
uid, never per chain (chaining is a physical decision that may change between a checkpoint
and its restore), with one ``OperatorSubtaskState`` per parallel subtask. Every field is
checked when the file is read, so a body that lacks one fails naming the file and field.

A job with a signing key (``signing_key``) also signs the file: the envelope's ``signature``
holds the key's id and an HMAC-SHA256 of the format, version and body, and the body gives
every state file's digest. A reader with the key refuses a file that is unsigned, signed with
another key or altered, before it reads the body.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Annotated, Any

from lockgate.checkpoint.signing_key import CheckpointSigningKey
from lockgate.common.records import MAP_KEY, Record, RecordFormatError
from lockgate.state import manifests
from lockgate.state.manifests import KeyedStateManifest
from lockgate.state.operator_state_handle import OperatorStateHandle

FORMAT = "lockgate-checkpoint"
VERSION = 4
_OLDER_VERSIONS = {
    1: "kept state per chain of operators, not per operator uid",
}
# Read as this version: 2 with no watermark yet in any operator, 2 and 3 with no operator
# state (user functions had none before version 4)
_WITHOUT_WATERMARKS = 2
_WITHOUT_MANAGED_STATE = 3


_HEX_MAC = re.compile(r"[0-9a-f]{64}")


class CheckpointFormatError(ValueError):
    """A ``_metadata`` file that cannot be used: missing, damaged, foreign or too new."""


class CheckpointSignatureError(CheckpointFormatError):
    """A ``_metadata`` file that fails the signing key's check: unsigned, signed with another
    key, or altered. Never a reason to fall back to an older checkpoint: someone wrote it."""


@dataclass(frozen=True)
class OperatorSubtaskState(Record):
    index: int
    operator_state: Any  # what the operator's snapshot_state returned (JSON), or None
    keyed: KeyedStateManifest | None  # of a keyed operator
    key_groups: tuple[int, int] | None  # inclusive key-group range of a keyed operator
    watermark: int | None = None  # the operator's event time (None: none yet)
    # the operator state of its user function (list, union and broadcast state)
    managed: OperatorStateHandle | None = None


@dataclass(frozen=True)
class OperatorState(Record):
    """All state of one operator (by uid) in a checkpoint."""

    uid: Annotated[str, MAP_KEY]  # its key in CheckpointMetadata.operators
    name: str
    parallelism: int
    max_parallelism: int
    subtasks: tuple[OperatorSubtaskState, ...]
    coordinator_state: dict[str, Any] | None = None  # a source's split enumerator

    def state_size(self) -> int:
        return sum(manifests.size(s.keyed) for s in self.subtasks if s.keyed)


@dataclass(frozen=True)
class CheckpointMetadata(Record):
    """The body of ``_metadata``; its envelope (format, version, checksum) is the file's."""

    job_id: str
    checkpoint_id: int
    epoch: int
    operators: dict[str, OperatorState]  # by operator uid

    def files(self) -> Iterator[str]:
        """Every state file the checkpoint refers to."""
        for operator in self.operators.values():
            for subtask in operator.subtasks:
                if subtask.keyed:
                    yield from manifests.urls(subtask.keyed)
                if subtask.managed:
                    yield subtask.managed.file

    def undigested_files(self) -> Iterator[str]:
        """The state files named without a digest (none, in a signed checkpoint)."""
        for operator in self.operators.values():
            for subtask in operator.subtasks:
                if subtask.keyed:
                    yield from subtask.keyed.undigested()
                if subtask.managed and subtask.managed.sha256 is None:
                    yield subtask.managed.file

    def map_files(self, mapping: Callable[[str], str]) -> CheckpointMetadata:
        """A copy with every state file path passed through ``mapping``."""
        operators = {
            uid: replace(
                operator,
                subtasks=tuple(
                    replace(
                        s,
                        keyed=s.keyed.map_urls(mapping) if s.keyed else None,
                        managed=s.managed.map_url(mapping) if s.managed else None,
                    )
                    for s in operator.subtasks
                ),
            )
            for uid, operator in self.operators.items()
        }
        return replace(self, operators=operators)


def _canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _signed_part(version: int, body: dict[str, Any]) -> bytes:
    return _canonical({"format": FORMAT, "version": version, "body": body})


def encode(checkpoint: CheckpointMetadata, signing_key: CheckpointSigningKey | None) -> bytes:
    """The ``_metadata`` file of ``checkpoint``, signed with ``signing_key`` (when the job
    has one, every state file it names carries a digest)."""
    body = checkpoint.to_json()
    envelope: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "sha256": hashlib.sha256(_canonical(body)).hexdigest(),
        "body": body,
    }
    if signing_key is not None:
        envelope["signature"] = {
            "key": signing_key.key_id,
            "hmac_sha256": signing_key.sign(_signed_part(VERSION, body)),
        }
    return json.dumps(envelope, sort_keys=True, separators=(",", ":")).encode()


def decode(data: bytes, path: str, signing_key: CheckpointSigningKey | None) -> CheckpointMetadata:
    """The checkpoint in ``_metadata`` file ``path``; with ``signing_key``, only when that
    key signed it and every state file it names has a digest."""
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
    if version not in (VERSION, _WITHOUT_WATERMARKS, _WITHOUT_MANAGED_STATE):
        why = _OLDER_VERSIONS.get(version) if isinstance(version, int) else None
        older = f" (an older lockgate's, which {why})" if why else ""
        raise CheckpointFormatError(
            f"checkpoint metadata {path} has format version {version!r}{older}; this lockgate "
            f"reads version {VERSION}"
        )
    body = envelope.get("body")
    if not isinstance(body, dict) or hashlib.sha256(_canonical(body)).hexdigest() != envelope.get(
        "sha256"
    ):
        raise CheckpointFormatError(
            f"checkpoint metadata {path} fails its checksum: the file was altered or damaged"
        )
    if signing_key is not None:
        _check_signature(envelope, version, body, path, signing_key)
    if version == _WITHOUT_WATERMARKS:
        body = _with_subtask_default(body, "watermark", None)
    if version in (_WITHOUT_WATERMARKS, _WITHOUT_MANAGED_STATE):
        body = _with_subtask_default(body, "managed", None)
    try:
        checkpoint = CheckpointMetadata.from_json(body, f"checkpoint metadata {path}")
    except RecordFormatError as exc:
        raise CheckpointFormatError(str(exc)) from None
    if signing_key is not None:
        undigested = next(checkpoint.undigested_files(), None)
        if undigested is not None:
            raise CheckpointSignatureError(
                f"checkpoint metadata {path} is signed but names the state file {undigested} "
                "without its digest, so its bytes cannot be checked"
            )
    return checkpoint


def _check_signature(
    envelope: dict[str, Any],
    version: int,
    body: dict[str, Any],
    path: str,
    signing_key: CheckpointSigningKey,
) -> None:
    signature = envelope.get("signature")
    checked = (
        f"the signing key in {signing_key.path} (lockgate.security.checkpoint-signing-key-file)"
    )
    if signature is None:
        raise CheckpointSignatureError(
            f"checkpoint metadata {path} is not signed, and {checked} is required: restore "
            "only checkpoints and savepoints written by a job with that key"
        )
    key_id = signature.get("key") if isinstance(signature, dict) else None
    mac = signature.get("hmac_sha256") if isinstance(signature, dict) else None
    if not isinstance(key_id, str) or not isinstance(mac, str) or not _HEX_MAC.fullmatch(mac):
        raise CheckpointSignatureError(f"checkpoint metadata {path} has a damaged signature")
    if key_id != signing_key.key_id:
        raise CheckpointSignatureError(
            f"checkpoint metadata {path} is signed with another key (id {key_id}) than "
            f"{checked} (id {signing_key.key_id})"
        )
    if not signing_key.verifies(_signed_part(version, body), mac):
        raise CheckpointSignatureError(
            f"checkpoint metadata {path} fails its signature: it was altered after it was signed"
        )


def _with_subtask_default(body: dict[str, Any], name: str, value: Any) -> dict[str, Any]:
    """``body`` with field ``name`` of every subtask entry that lacks it set to ``value``."""
    operators = body.get("operators")
    if not isinstance(operators, dict):
        return body  # from_json names what is wrong
    upgraded = {}
    for uid, operator in operators.items():
        if isinstance(operator, dict) and isinstance(operator.get("subtasks"), list):
            subtasks = [
                {name: value, **s} if isinstance(s, dict) else s for s in operator["subtasks"]
            ]
            operator = {**operator, "subtasks": subtasks}
        upgraded[uid] = operator
    return {**body, "operators": upgraded}
