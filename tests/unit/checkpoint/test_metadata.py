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
    OperatorState,
    OperatorSubtaskState,
    decode,
    encode,
)
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
    assert decode(encode(BODY), PATH) == BODY


def test_encoding_is_deterministic_json_with_format_version_and_checksum():
    data = encode(BODY)
    assert data == encode(CheckpointMetadata.from_json(json.loads(data)["body"], PATH))
    envelope = json.loads(data)
    assert envelope["format"] == metadata.FORMAT == "lockgate-checkpoint"
    assert envelope["version"] == metadata.VERSION == 4
    assert len(envelope["sha256"]) == 64
    assert envelope["body"] == BODY.to_json()
    assert not data.startswith(b"\x80")  # not a pickle


def test_the_checksum_depends_on_the_body():
    other = replace(BODY, epoch=13)
    assert json.loads(encode(BODY))["sha256"] != json.loads(encode(other))["sha256"]


def test_checkpoint_format_error_is_a_value_error():
    assert issubclass(CheckpointFormatError, ValueError)


@pytest.mark.parametrize("keep", [0, 1, 10, 0.5, 0.99])
def test_a_truncated_file_is_reported_with_its_path(keep):
    data = encode(BODY)
    cut = data[: int(len(data) * keep)] if isinstance(keep, float) else data[:keep]
    with pytest.raises(CheckpointFormatError) as info:
        decode(cut, PATH)
    assert PATH in str(info.value)
    assert "truncated" in str(info.value)


def test_a_flipped_byte_in_the_body_fails_the_checksum():
    data = encode(BODY)
    position = data.index(b'"epoch":12') + len(b'"epoch":')
    damaged = data[:position] + b"9" + data[position + 1 :]  # 12 -> 92: still valid JSON
    assert json.loads(damaged)["body"]["epoch"] == 92
    with pytest.raises(CheckpointFormatError) as info:
        decode(damaged, PATH)
    assert PATH in str(info.value)
    assert "checksum" in str(info.value)


def test_a_flipped_byte_in_a_state_path_fails_the_checksum():
    data = encode(BODY)
    damaged = data.replace(b"shared/a/0/f1", b"shared/b/0/f1")
    assert damaged != data
    with pytest.raises(CheckpointFormatError, match="checksum"):
        decode(damaged, PATH)


def test_an_altered_checksum_is_detected():
    envelope = json.loads(encode(BODY))
    envelope["sha256"] = "0" * 64
    with pytest.raises(CheckpointFormatError, match="checksum") as info:
        decode(json.dumps(envelope).encode(), PATH)
    assert PATH in str(info.value)


def test_a_missing_checksum_or_body_is_detected():
    envelope = json.loads(encode(BODY))
    without_sum = {k: v for k, v in envelope.items() if k != "sha256"}
    with pytest.raises(CheckpointFormatError, match="checksum"):
        decode(json.dumps(without_sum).encode(), PATH)
    not_a_dict = {**envelope, "body": [1, 2]}
    with pytest.raises(CheckpointFormatError, match="checksum"):
        decode(json.dumps(not_a_dict).encode(), PATH)


def test_binary_garbage_is_reported_with_its_path():
    with pytest.raises(CheckpointFormatError) as info:
        decode(b"\xff\xfe\x80\x00garbage", PATH)
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
        decode(json.dumps(document).encode(), PATH)
    assert str(info.value) == f"{PATH} is not a lockgate checkpoint metadata file"


@pytest.mark.parametrize("version", [5, 0, None, "1"])
def test_an_unknown_version_names_the_path_and_both_versions(version):
    envelope = json.loads(encode(BODY))
    envelope["version"] = version
    with pytest.raises(CheckpointFormatError) as info:
        decode(json.dumps(envelope).encode(), PATH)
    message = str(info.value)
    assert PATH in message
    assert f"version {version!r}" in message
    assert f"reads version {metadata.VERSION}" in message


def test_version_is_checked_before_the_checksum():
    envelope = json.loads(encode(BODY))
    envelope["version"] = 99
    envelope["body"]["epoch"] = 1000  # also damaged: the version is what matters
    with pytest.raises(CheckpointFormatError, match="version 99"):
        decode(json.dumps(envelope).encode(), PATH)


def test_whitespace_changes_outside_the_body_values_are_harmless():
    compact = json.dumps(json.loads(encode(BODY)), separators=(",", ":")).encode()
    assert decode(compact, PATH) == BODY


def keyed_operator(body: dict) -> dict:
    return body["operators"]["keyedprocess-1"]


@pytest.mark.parametrize(("version", "absent"), [(2, ("watermark", "managed")), (3, ("managed",))])
def test_an_older_checkpoint_restores_without_the_newer_fields(version, absent):
    envelope = json.loads(encode(BODY))
    envelope["version"] = version
    for operator in envelope["body"]["operators"].values():
        for subtask in operator["subtasks"]:
            for name in absent:
                del subtask[name]
    envelope["sha256"] = hashlib.sha256(metadata._canonical(envelope["body"])).hexdigest()
    read = decode(json.dumps(envelope).encode(), PATH)
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
    envelope = json.loads(encode(BODY))
    envelope["version"] = 1
    with pytest.raises(CheckpointFormatError) as info:
        decode(json.dumps(envelope).encode(), PATH)
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
        decode(with_body(body), PATH)
    message = str(info.value)
    assert PATH in message and field in message, message
