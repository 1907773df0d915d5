"""Storage.put_file uploads under names unique to a task attempt: it never replaces a file
that is there already (another attempt's, which a manifest may reference)."""

from __future__ import annotations

import errno
import os

import pytest

from lockgate.core.fs import storage as storage_module
from lockgate.core.fs.storage import Storage


@pytest.fixture
def files(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    first.write_bytes(b"written by the first attempt")
    second.write_bytes(b"written by the second attempt")
    return str(first), str(second)


def test_put_file_uploads_a_new_file(tmp_path, files):
    storage = Storage(f"file://{tmp_path}/state")
    storage.put_file(files[0], "uid/0/e1-g0t1a7/MANIFEST-000005", link=True)
    assert storage.read_bytes("uid/0/e1-g0t1a7/MANIFEST-000005") == b"written by the first attempt"


def test_put_file_does_not_replace_an_existing_file(tmp_path, files):
    storage = Storage(f"file://{tmp_path}/state")
    storage.put_file(files[0], "uid/0/e1-g0t1a0/MANIFEST-000005", link=True)

    with pytest.raises(FileExistsError):
        storage.put_file(files[1], "uid/0/e1-g0t1a0/MANIFEST-000005", link=True)

    assert storage.read_bytes("uid/0/e1-g0t1a0/MANIFEST-000005") == b"written by the first attempt"


def test_put_file_does_not_replace_an_existing_file_when_it_cannot_link(
    tmp_path, files, monkeypatch
):
    def cross_device_link(source, target):
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), source, target)

    storage = Storage(f"file://{tmp_path}/state")
    monkeypatch.setattr(storage_module.os, "link", cross_device_link)
    storage.put_file(files[0], "uid/0/e1-g0t1a0/MANIFEST-000005", link=True)

    with pytest.raises(FileExistsError):
        storage.put_file(files[1], "uid/0/e1-g0t1a0/MANIFEST-000005", link=True)

    assert storage.read_bytes("uid/0/e1-g0t1a0/MANIFEST-000005") == b"written by the first attempt"


def test_put_file_does_not_replace_an_existing_file_on_remote_storage(files):
    storage = Storage("memory://lockgate-test-put-file")
    try:
        storage.put_file(files[0], "uid/0/e1-g0t1a0/MANIFEST-000005", link=True)

        with pytest.raises(FileExistsError):
            storage.put_file(files[1], "uid/0/e1-g0t1a0/MANIFEST-000005", link=True)

        assert (
            storage.read_bytes("uid/0/e1-g0t1a0/MANIFEST-000005") == b"written by the first attempt"
        )
    finally:
        storage.remove("")


@pytest.mark.parametrize("link", [True, False])
def test_put_file_links_on_a_local_file_system_only_when_asked(tmp_path, files, link):
    storage = Storage(f"file://{tmp_path}/state")
    storage.put_file(files[0], "sst/000009.sst", link=link)
    stored = os.stat(tmp_path / "state" / "sst" / "000009.sst")
    assert (stored.st_ino == os.stat(files[0]).st_ino) is link
