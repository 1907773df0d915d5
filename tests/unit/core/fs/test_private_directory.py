"""Local directories only the job's user can enter: created 0700 whatever the umask, refused
when another user made them first, when others can enter them, when they are links, or when
their parent lets another user rename them away. Another user's moves run as nobody."""

from __future__ import annotations

import os
import stat
import tempfile
import zipfile
from pathlib import Path

import pytest
from local_attacker import NOBODY, as_nobody, needs_another_user

from lockgate.core.fs.private_directory import (
    UnsafeDirectoryError,
    private_directory,
    user_directory,
)
from lockgate.core.fs.storage import Storage
from lockgate.runtime.jobmaster import spark_session


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_new_directory_and_its_missing_parents_are_0700_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        made = private_directory(tmp_path / "a" / "b", "some.key")
    finally:
        os.umask(old)
    assert mode(made) == 0o700
    assert mode(tmp_path / "a") == 0o700


@pytest.mark.parametrize("bits", [0o750, 0o705, 0o770, 0o777])
def test_an_existing_directory_others_can_enter_is_refused(tmp_path, bits):
    path = tmp_path / "work"
    path.mkdir()
    path.chmod(bits)
    with pytest.raises(
        UnsafeDirectoryError, match=rf"{path} has mode 0{bits:o}.*'lockgate.work-dir'"
    ):
        private_directory(path, "lockgate.work-dir")


def test_a_link_is_refused_even_to_a_private_directory(tmp_path):
    target = private_directory(tmp_path / "mine", None)
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(UnsafeDirectoryError, match="is a symbolic link"):
        private_directory(tmp_path / "link", None)


def test_a_parent_others_can_write_and_is_not_sticky_is_refused(tmp_path):
    parent = tmp_path / "open"
    parent.mkdir()
    parent.chmod(0o777)
    with pytest.raises(
        UnsafeDirectoryError, match=f"{parent} has mode 0777: other users can write"
    ):
        private_directory(parent / "work", "lockgate.work-dir")


def test_a_sticky_parent_such_as_tmp_is_fine(open_dir):
    assert mode(private_directory(open_dir / "mine", None)) == 0o700


@needs_another_user
def test_a_directory_another_user_made_first_is_refused(open_dir):
    planted = open_dir / "lockgate-0"
    made = as_nobody(
        "import os, sys; os.mkdir(sys.argv[1]); os.chmod(sys.argv[1], 0o700)", str(planted)
    )
    assert made.returncode == 0, made.stderr
    with pytest.raises(UnsafeDirectoryError, match=f"belongs to uid {NOBODY}.*'lockgate.work-dir'"):
        private_directory(planted, "lockgate.work-dir")


@needs_another_user
def test_the_default_work_directory_refuses_one_another_user_made(open_dir, monkeypatch):
    """The attack of issue 28: another user creates the default directory first, to swap the
    job's directories and plant staging records. The job fails before it starts."""
    from lockgate.common import ConfigurationError
    from lockgate.runtime.jobmaster.job_settings import JobSettings

    made = as_nobody(
        "import os, sys; os.mkdir(sys.argv[1], 0o777); os.chmod(sys.argv[1], 0o777)",
        str(open_dir / f"lockgate-{os.getuid()}"),
    )
    assert made.returncode == 0, made.stderr
    monkeypatch.setattr(tempfile, "tempdir", str(open_dir))
    with pytest.raises(ConfigurationError, match=f"belongs to uid {NOBODY}.*'lockgate.work-dir'"):
        JobSettings.resolve({}, "job", "local[1]")


READ = """
import sys
for path in sys.argv[1:]:
    try:
        open(path, "rb").read()
        print("read")
    except OSError as exc:
        print(exc.errno)
"""


@needs_another_user
def test_nothing_under_a_private_storage_is_readable_by_another_user(open_dir):
    checkpoints = open_dir / "checkpoints"
    checkpoints.mkdir(mode=0o755)
    (checkpoints / "public").write_bytes(b"readable")  # the umask's 0644, as fsspec writes
    root = Storage(f"file://{checkpoints}/job").make_private("execution.checkpointing.dir")
    root.write_bytes("chk-1/_metadata", b"state")

    read = as_nobody(READ, str(checkpoints / "public"), str(checkpoints / "job/chk-1/_metadata"))

    assert read.stdout.split() == ["read", "13"], read.stderr  # EACCES for the job's files


def test_a_python_files_archive_is_reused_only_when_its_contents_match(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    package = tmp_path / "mymodules"
    package.mkdir()
    (package / "helpers.py").write_text("VALUE = 1\n")
    archive = Path(spark_session._zipped_directory(str(package)))
    assert archive.parent == user_directory() / "python-files"
    with zipfile.ZipFile(archive, "w") as planted:  # same name, other contents
        planted.writestr("helpers.py", "import os; os.system('id')\n")

    again = Path(spark_session._zipped_directory(str(package)))

    assert again == archive
    with zipfile.ZipFile(again) as zipped:
        assert zipped.read("helpers.py") == b"VALUE = 1\n"
    assert list(archive.parent.glob("*.partial")) == []


@needs_another_user
def test_rocksdb_refuses_a_local_directory_another_user_prepared(open_dir):
    from lockgate.state.backend_settings import KeyedStateSettings, instances_directory
    from lockgate.state.key_groups import KeyGroupRange
    from lockgate.state.keyed_subtask import KeyedSubtask
    from lockgate.state.rocksdb import RocksDBSettings, StateBackendError
    from lockgate.state.rocksdb_restore import RocksDBRestoreOperation

    planted = open_dir / instances_directory()
    made = as_nobody("import os, sys; os.mkdir(sys.argv[1], 0o777)", str(planted))
    assert made.returncode == 0, made.stderr
    settings = KeyedStateSettings("rocksdb", "job", True, (str(open_dir),), RocksDBSettings())
    subtask = KeyedSubtask("counter", "Counter", 0, "op1-0", KeyGroupRange(0, 127), 128)

    with pytest.raises(StateBackendError, match=rf"{planted} belongs to uid {NOBODY}.*localdir"):
        RocksDBRestoreOperation(settings).restore(subtask, None, True)
    assert os.listdir(planted) == []
