"""Signed checkpoints (lockgate.security.checkpoint-signing-key-file): a job with a key signs
every ``_metadata`` and names every state file with its digest; a restore with the key takes
only checkpoints signed with it, and refuses a state file that was altered, even one whose
CRC-32 the attacker put right, before anything of it is unpickled."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest
from exactly_once_job import (
    assert_committed_output_exact,
    build_job,
    checkpointed_env,
    chk_dirs,
    committed_lines,
    recovery_settings,
    run_until_failure,
)
from lockgate_it_support import EACH_BACKEND, forge_crc

from lockgate.checkpoint import metadata
from lockgate.checkpoint.signing_key import CheckpointSigningKey
from lockgate.common import RestartStrategies
from lockgate.runtime.errors import JobExecutionError

KEY_FILE = "lockgate.security.checkpoint-signing-key-file"
PARALLELISM = 2


def new_key(path: Path) -> Path:
    path.write_bytes(secrets.token_bytes(32))
    path.chmod(0o600)
    return path


@pytest.fixture
def key(tmp_path) -> Path:
    return new_key(tmp_path / "signing-key")


def restore_env(make_env, tmp_path: Path, checkpoint: Path, key: Path | None):
    settings = recovery_settings(checkpoint, **({KEY_FILE: str(key)} if key else {}))
    env = checkpointed_env(
        make_env,
        tmp_path / "again",
        PARALLELISM,
        settings=settings,
        restart=RestartStrategies.no_restart(),
    )
    build_job(env, tmp_path / "out", PARALLELISM)
    return env


def state_handles(job_dir: Path, chk: Path) -> list[tuple[Path, list]]:
    """(file, handle as JSON) of every keyed state handle of ``chk``."""
    found = []
    for operator in json.loads((chk / "_metadata").read_text())["body"]["operators"].values():
        for subtask in operator["subtasks"]:
            keyed = subtask.get("keyed") or {}
            for handle in [
                *(keyed.get("groups") or {}).values(),
                *(keyed.get("files") or {}).values(),
            ]:
                found.append((job_dir / handle[0], handle))
    return found


@EACH_BACKEND
def test_a_job_with_a_key_signs_its_checkpoints_and_restores_from_them(make_env, tmp_path, key):
    job_dir = run_until_failure(
        make_env, tmp_path, PARALLELISM, fail_epoch=4, settings={KEY_FILE: str(key)}
    )
    latest = chk_dirs(job_dir)[-1]
    meta = latest / "_metadata"
    signing_key = CheckpointSigningKey.load(str(key))
    assert json.loads(meta.read_text())["signature"]["key"] == signing_key.key_id
    # signed, and every state file named with its digest
    metadata.decode(meta.read_bytes(), str(meta), signing_key)
    assert state_handles(job_dir, latest)
    restore_env(make_env, tmp_path, latest, key).execute("restored with the key")
    assert_committed_output_exact(tmp_path / "out", PARALLELISM)


@EACH_BACKEND
def test_a_state_file_altered_in_a_signed_checkpoint_is_refused(make_env, tmp_path, key, backend):
    job_dir = run_until_failure(
        make_env, tmp_path, PARALLELISM, fail_epoch=4, settings={KEY_FILE: str(key)}
    )
    latest = chk_dirs(job_dir)[-1]
    path, handle = state_handles(job_dir, latest)[0]
    data = bytearray(path.read_bytes())
    if backend == "hashmap":  # one key group's blob, its CRC kept: only the digest tells
        _, offset, length, crc, _ = handle
        blob = bytearray(data[offset : offset + length])
        blob[0] ^= 0xFF
        data[offset : offset + length] = forge_crc(bytes(blob), 1, crc)
    else:  # a RocksDB file of the same size (its handle has no CRC)
        data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    before = committed_lines(tmp_path / "out")
    env = restore_env(make_env, tmp_path, latest, key)
    with pytest.raises(JobExecutionError, match=r"does not match the SHA-256 digest"):
        env.execute("restored from an altered state file")
    assert committed_lines(tmp_path / "out") == before


def test_a_job_with_a_key_refuses_unsigned_and_foreign_signed_checkpoints(make_env, tmp_path, key):
    for run in ("unsigned", "signed"):
        (tmp_path / run).mkdir()
    unsigned = run_until_failure(make_env, tmp_path / "unsigned", PARALLELISM, fail_epoch=3)
    env = restore_env(make_env, tmp_path, chk_dirs(unsigned)[-1], key)
    with pytest.raises(JobExecutionError, match=r"_metadata is not signed"):
        env.execute("from an unsigned checkpoint")
    other = new_key(tmp_path / "other-key")
    signed = run_until_failure(
        make_env, tmp_path / "signed", PARALLELISM, fail_epoch=3, settings={KEY_FILE: str(other)}
    )
    env = restore_env(make_env, tmp_path, chk_dirs(signed)[-1], key)
    with pytest.raises(JobExecutionError, match=r"_metadata is signed with another key"):
        env.execute("from a checkpoint signed with another key")


def test_a_key_file_others_can_read_fails_before_the_job_starts(make_env, tmp_path, key):
    key.chmod(0o644)
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 1, settings={KEY_FILE: str(key)})
    build_job(env, tmp_path / "out", 1)
    with pytest.raises(
        Exception, match=rf"{KEY_FILE}': checkpoint signing key file {key} has mode 644"
    ):
        env.execute("with a readable key")
    assert not (tmp_path / "checkpoints").exists()
