"""_metadata encoding: versioned, checksummed JSON; every damage is reported with its path."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import pytest

from lockgate.checkpoint import metadata
from lockgate.checkpoint.metadata import (
    CheckpointFormatError,
    CheckpointMetadata,
    CheckpointSignatureError,
    OperatorState,
    OperatorSubtaskState,
    decode,
    encode,
)
from lockgate.checkpoint.signing_key import CheckpointSigningKey
from lockgate.state.manifests import HeapManifest
from lockgate.state.operator_state_handle import OperatorStateHandle, StateMeta
from lockgate.state.snapshot import GroupHandle

PATH = "file:///ckpt/job-1/chk-7/_metadata"

BODY = CheckpointMetadata(
    "job-1",
    7,
    12,
    {
        "keyedprocess-1": OperatorState(
            "keyedprocess-1",
            "KeyedProcess ünïcode ✓",
            2,
            128,
            (
                OperatorSubtaskState(
                    0,
                    {"ratio": 0.1, "flag": None},
                    HeapManifest({"count": "value"}, {3: GroupHandle("shared/a/0/f1", 0, 17, 1)}),
                    (0, 63),
                    managed=OperatorStateHandle(
                        "shared/operator/keyedprocess-1/0-a.lgos",
                        40,
                        7,
                        {"buffer": StateMeta("split", 3), "rules": StateMeta("broadcast", 1)},
                    ),
                ),
            ),
        ),
        "collection-source-0": OperatorState(
            "collection-source-0",
            "Collection Source",
            1,
            128,
            (OperatorSubtaskState(0, None, None, None),),
            {"positions": {"0": 5}},
        ),
    },
)


def with_body(body: dict) -> bytes:
    """A well-formed envelope (right version and checksum) around any body."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    envelope = {
        "format": metadata.FORMAT,
        "version": metadata.VERSION,
        "sha256": hashlib.sha256(canonical).hexdigest(),
        "body": body,
    }
    return json.dumps(envelope).encode()


def test_round_trip_returns_the_body():
    assert decode(encode(BODY, None), PATH, None) == BODY


def test_encoding_is_deterministic_json_with_format_version_and_checksum():
    data = encode(BODY, None)
    assert data == encode(CheckpointMetadata.from_json(json.loads(data)["body"], PATH), None)
    envelope = json.loads(data)
    assert envelope["format"] == metadata.FORMAT == "lockgate-checkpoint"
    assert envelope["version"] == metadata.VERSION == 4
    assert len(envelope["sha256"]) == 64
    assert envelope["body"] == BODY.to_json()
    assert not data.startswith(b"\x80")  # not a pickle


def test_the_checksum_depends_on_the_body():
    other = replace(BODY, epoch=13)
    assert json.loads(encode(BODY, None))["sha256"] != json.loads(encode(other, None))["sha256"]


def test_checkpoint_format_error_is_a_value_error():
    assert issubclass(CheckpointFormatError, ValueError)


@pytest.mark.parametrize("keep", [0, 1, 10, 0.5, 0.99])
def test_a_truncated_file_is_reported_with_its_path(keep):
    data = encode(BODY, None)
    cut = data[: int(len(data) * keep)] if isinstance(keep, float) else data[:keep]
    with pytest.raises(CheckpointFormatError) as info:
        decode(cut, PATH, None)
    assert PATH in str(info.value)
    assert "truncated" in str(info.value)


def test_a_flipped_byte_in_the_body_fails_the_checksum():
    data = encode(BODY, None)
    position = data.index(b'"epoch":12') + len(b'"epoch":')
    damaged = data[:position] + b"9" + data[position + 1 :]  # 12 -> 92: still valid JSON
    assert json.loads(damaged)["body"]["epoch"] == 92
    with pytest.raises(CheckpointFormatError) as info:
        decode(damaged, PATH, None)
    assert PATH in str(info.value)
    assert "checksum" in str(info.value)


def test_a_flipped_byte_in_a_state_path_fails_the_checksum():
    data = encode(BODY, None)
    damaged = data.replace(b"shared/a/0/f1", b"shared/b/0/f1")
    assert damaged != data
    with pytest.raises(CheckpointFormatError, match="checksum"):
        decode(damaged, PATH, None)


def test_an_altered_checksum_is_detected():
    envelope = json.loads(encode(BODY, None))
    envelope["sha256"] = "0" * 64
    with pytest.raises(CheckpointFormatError, match="checksum") as info:
        decode(json.dumps(envelope).encode(), PATH, None)
    assert PATH in str(info.value)


def test_a_missing_checksum_or_body_is_detected():
    envelope = json.loads(encode(BODY, None))
    without_sum = {k: v for k, v in envelope.items() if k != "sha256"}
    with pytest.raises(CheckpointFormatError, match="checksum"):
        decode(json.dumps(without_sum).encode(), PATH, None)
    not_a_dict = {**envelope, "body": [1, 2]}
    with pytest.raises(CheckpointFormatError, match="checksum"):
        decode(json.dumps(not_a_dict).encode(), PATH, None)


def test_binary_garbage_is_reported_with_its_path():
    with pytest.raises(CheckpointFormatError) as info:
        decode(b"\xff\xfe\x80\x00garbage", PATH, None)
    assert PATH in str(info.value)


@pytest.mark.parametrize(
    "document",
    [
        {"format": "flink-checkpoint", "version": 1, "sha256": "", "body": {}},
        {"version": 1, "body": {}},
        [1, 2, 3],
        "lockgate-checkpoint",
        42,
    ],
)
def test_a_foreign_json_file_is_not_a_lockgate_checkpoint(document):
    with pytest.raises(CheckpointFormatError) as info:
        decode(json.dumps(document).encode(), PATH, None)
    assert str(info.value) == f"{PATH} is not a lockgate checkpoint metadata file"


@pytest.mark.parametrize("version", [5, 0, None, "1"])
def test_an_unknown_version_names_the_path_and_both_versions(version):
    envelope = json.loads(encode(BODY, None))
    envelope["version"] = version
    with pytest.raises(CheckpointFormatError) as info:
        decode(json.dumps(envelope).encode(), PATH, None)
    message = str(info.value)
    assert PATH in message
    assert f"version {version!r}" in message
    assert f"reads version {metadata.VERSION}" in message


def test_version_is_checked_before_the_checksum():
    envelope = json.loads(encode(BODY, None))
    envelope["version"] = 99
    envelope["body"]["epoch"] = 1000  # also damaged: the version is what matters
    with pytest.raises(CheckpointFormatError, match="version 99"):
        decode(json.dumps(envelope).encode(), PATH, None)


def test_whitespace_changes_outside_the_body_values_are_harmless():
    compact = json.dumps(json.loads(encode(BODY, None)), separators=(",", ":")).encode()
    assert decode(compact, PATH, None) == BODY


def keyed_operator(body: dict) -> dict:
    return body["operators"]["keyedprocess-1"]


@pytest.mark.parametrize(("version", "absent"), [(2, ("watermark", "managed")), (3, ("managed",))])
def test_an_older_checkpoint_restores_without_the_newer_fields(version, absent):
    envelope = json.loads(encode(BODY, None))
    envelope["version"] = version
    for operator in envelope["body"]["operators"].values():
        for subtask in operator["subtasks"]:
            for name in absent:
                del subtask[name]
    envelope["sha256"] = hashlib.sha256(metadata._canonical(envelope["body"])).hexdigest()
    read = decode(json.dumps(envelope).encode(), PATH, None)
    assert read == replace(
        BODY,
        operators={
            uid: replace(
                op,
                subtasks=tuple(replace(s, **dict.fromkeys(absent)) for s in op.subtasks),
            )
            for uid, op in BODY.operators.items()
        },
    )


def test_a_version_1_checkpoint_says_it_kept_state_per_chain():
    envelope = json.loads(encode(BODY, None))
    envelope["version"] = 1
    with pytest.raises(CheckpointFormatError) as info:
        decode(json.dumps(envelope).encode(), PATH, None)
    message = str(info.value)
    assert PATH in message and "per chain of operators" in message, message


@pytest.mark.parametrize(
    "damage, field",
    [
        (lambda body: body.pop("epoch"), "'epoch'"),
        (lambda body: keyed_operator(body).pop("max_parallelism"), "'max_parallelism'"),
        (lambda body: keyed_operator(body)["subtasks"][0].pop("keyed"), "'keyed'"),
        (lambda body: keyed_operator(body).update(parallelism="2"), "'parallelism'"),
    ],
)
def test_a_body_that_lacks_a_field_names_the_file_and_the_field(damage, field):
    body = BODY.to_json()
    damage(body)
    with pytest.raises(CheckpointFormatError) as info:
        decode(with_body(body), PATH, None)
    message = str(info.value)
    assert PATH in message and field in message, message


# Signed metadata ------------------------------------------------------------------------------


def signing_key(tmp_path, name: str = "key", secret: bytes = b"s" * 32) -> CheckpointSigningKey:
    path = tmp_path / name
    path.write_bytes(secret)
    path.chmod(0o600)
    return CheckpointSigningKey.load(str(path))


def digested(body: CheckpointMetadata) -> CheckpointMetadata:
    """``body`` with a digest in every handle, as a job with a signing key writes it."""
    operators = {}
    for uid, operator in body.operators.items():
        subtasks = []
        for s in operator.subtasks:
            keyed = s.keyed
            if keyed is not None:
                groups = {kg: replace(h, sha256="ab" * 32) for kg, h in keyed.groups.items()}
                keyed = HeapManifest(keyed.kinds, groups)
            managed = replace(s.managed, sha256="cd" * 32) if s.managed else None
            subtasks.append(replace(s, keyed=keyed, managed=managed))
        operators[uid] = replace(operator, subtasks=tuple(subtasks))
    return replace(body, operators=operators)


SIGNED_BODY = digested(BODY)


def test_a_signed_file_reads_with_its_key_and_without_one(tmp_path):
    key = signing_key(tmp_path)
    data = encode(SIGNED_BODY, key)
    assert json.loads(data)["signature"]["key"] == key.key_id
    assert decode(data, PATH, key) == SIGNED_BODY
    assert decode(data, PATH, None) == SIGNED_BODY  # a job without a key does not check


def test_an_unsigned_file_is_refused_by_a_reader_with_a_key(tmp_path):
    key = signing_key(tmp_path)
    with pytest.raises(CheckpointSignatureError, match=rf"{PATH} is not signed.*{key.path}"):
        decode(encode(SIGNED_BODY, None), PATH, key)


def test_a_file_signed_with_another_key_is_refused_naming_both_keys(tmp_path):
    key = signing_key(tmp_path)
    other = signing_key(tmp_path, "other", b"o" * 32)
    with pytest.raises(
        CheckpointSignatureError,
        match=rf"signed with another key \(id {other.key_id}\) than .*\(id {key.key_id}\)",
    ):
        decode(encode(SIGNED_BODY, other), PATH, key)


@pytest.mark.parametrize(
    "alter",
    [
        # a state file swapped for one of the attacker's, its checksum put right
        lambda body: body["operators"]["keyedprocess-1"]["subtasks"][0]["keyed"]["groups"][
            "3"
        ].__setitem__(3, 12345),
        lambda body: body["operators"]["keyedprocess-1"]["subtasks"][0]["managed"].update(
            sha256="ee" * 32
        ),
        # a sink committable or a source position: JSON, but the job acts on it
        lambda body: body["operators"]["collection-source-0"].update(
            coordinator_state={"positions": {"0": 0}}
        ),
    ],
)
def test_a_signed_file_altered_with_its_checksum_recomputed_is_refused(tmp_path, alter):
    key = signing_key(tmp_path)
    envelope = json.loads(encode(SIGNED_BODY, key))
    alter(envelope["body"])
    canonical = json.dumps(envelope["body"], sort_keys=True, separators=(",", ":")).encode()
    envelope["sha256"] = hashlib.sha256(canonical).hexdigest()
    with pytest.raises(CheckpointSignatureError, match=rf"{PATH} fails its signature"):
        decode(json.dumps(envelope).encode(), PATH, key)


def test_a_signed_file_naming_a_state_file_without_a_digest_is_refused(tmp_path):
    key = signing_key(tmp_path)
    with pytest.raises(
        CheckpointSignatureError,
        match=r"names the state file shared/a/0/f1 without its digest",
    ):
        decode(encode(BODY, key), PATH, key)


@pytest.mark.parametrize(
    "signature",
    ["forged", {"key": "k", "hmac_sha256": "é" * 64}, {"key": "k", "hmac_sha256": "AB" * 32}],
)
def test_a_damaged_signature_is_refused(tmp_path, signature):
    key = signing_key(tmp_path)
    envelope = json.loads(encode(SIGNED_BODY, key))
    if isinstance(signature, dict):
        signature = {**signature, "key": key.key_id}
    envelope["signature"] = signature
    with pytest.raises(CheckpointSignatureError, match=r"has a damaged signature"):
        decode(json.dumps(envelope).encode(), PATH, key)


def test_handles_without_digests_are_written_as_before():
    """A job without a key writes the handles of earlier versions: ``[file, offset, length,
    crc]``, no ``sha256`` in operator-state handles beyond a null."""
    group = json.loads(encode(BODY, None))["body"]["operators"]["keyedprocess-1"]["subtasks"][0]
    assert group["keyed"]["groups"]["3"] == ["shared/a/0/f1", 0, 17, 1]
    assert json.loads(encode(SIGNED_BODY, None))["body"]["operators"]["keyedprocess-1"]["subtasks"][
        0
    ]["keyed"]["groups"]["3"] == ["shared/a/0/f1", 0, 17, 1, "ab" * 32]
