"""The checkpoint signing key: a private file of this user, refused otherwise before a job
starts."""

from __future__ import annotations

import os

import pytest
from local_attacker import NOBODY, needs_another_user

from lockgate.checkpoint.signing_key import CheckpointSigningKey, SigningKeyError

SECRET = b"k" * 32


def key_file(path, data: bytes = SECRET, mode: int = 0o600):
    path.write_bytes(data)
    path.chmod(mode)
    return path


def test_a_private_key_file_loads_and_signs(tmp_path):
    key = CheckpointSigningKey.load(str(key_file(tmp_path / "key")))
    assert key.secret == SECRET
    assert key.verifies(b"body", key.sign(b"body"))
    assert not key.verifies(b"body!", key.sign(b"body"))
    assert "kkkk" not in repr(key)  # the secret stays out of logs and tracebacks


def test_the_key_id_names_the_key_without_giving_it_away(tmp_path):
    one = CheckpointSigningKey.load(str(key_file(tmp_path / "one")))
    same = CheckpointSigningKey.load(str(key_file(tmp_path / "same")))
    other = CheckpointSigningKey.load(str(key_file(tmp_path / "other", b"o" * 32)))
    assert one.key_id == same.key_id != other.key_id
    assert SECRET.hex() not in one.key_id


@pytest.mark.parametrize(
    ("data", "mode", "message"),
    [
        (SECRET, 0o640, r"has mode 640: other users may read or change it"),
        (SECRET, 0o604, r"has mode 604"),
        (b"short", 0o600, r"holds 5 bytes; a key has 32 to 4096"),
        (b"x" * 4097, 0o600, r"holds 4097 bytes"),
    ],
)
def test_a_key_file_others_can_read_or_of_a_bad_size_is_refused(tmp_path, data, mode, message):
    path = key_file(tmp_path / "key", data, mode)
    with pytest.raises(SigningKeyError, match=rf"{path}.*{message}"):
        CheckpointSigningKey.load(str(path))


def test_a_missing_file_a_directory_a_fifo_and_a_link_are_refused(tmp_path):
    with pytest.raises(SigningKeyError, match=r"missing: No such file"):
        CheckpointSigningKey.load(str(tmp_path / "missing"))
    (tmp_path / "dir").mkdir(mode=0o700)
    with pytest.raises(SigningKeyError, match=r"dir is not a regular file"):
        CheckpointSigningKey.load(str(tmp_path / "dir"))
    os.mkfifo(tmp_path / "fifo", 0o600)  # opening it must not wait for a writer
    with pytest.raises(SigningKeyError, match=r"fifo is not a regular file"):
        CheckpointSigningKey.load(str(tmp_path / "fifo"))
    (tmp_path / "link").symlink_to(key_file(tmp_path / "key"))
    with pytest.raises(SigningKeyError, match=r"link: Too many levels of symbolic links"):
        CheckpointSigningKey.load(str(tmp_path / "link"))


@needs_another_user
def test_a_key_file_of_another_user_is_refused(tmp_path):
    path = key_file(tmp_path / "key")
    os.chown(path, NOBODY, -1)
    with pytest.raises(SigningKeyError, match=rf"belongs to uid {NOBODY}, not to this user"):
        CheckpointSigningKey.load(str(path))
