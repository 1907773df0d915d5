"""The Dispatcher's home on a shared machine: one that another user prepared, or whose
token or job store is a symbolic link, is refused before anything is read or written."""

from __future__ import annotations

import os
import secrets

import pytest
from local_attacker import NOBODY, needs_another_user

from lockgate.core.fs.private_directory import UnsafeDirectoryError
from lockgate.dispatcher.home import DispatcherHome
from lockgate.dispatcher.job_store import JobStore


@needs_another_user
def test_a_home_prepared_by_another_user_is_refused(tmp_path):
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    os.chown(home, NOBODY, -1)
    with pytest.raises(UnsafeDirectoryError, match="belongs to uid"):
        DispatcherHome(home)


def test_links_in_the_home_are_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "linked-home").symlink_to(elsewhere)
    with pytest.raises(UnsafeDirectoryError, match="symbolic link"):
        DispatcherHome(tmp_path / "linked-home")

    home = DispatcherHome(tmp_path / "home")
    planted = elsewhere / "token"
    planted.write_text("f" * 64)
    planted.chmod(0o600)
    home.token_path.symlink_to(planted)  # a token the Dispatcher would take as its own
    with pytest.raises(UnsafeDirectoryError, match="not a file of this user"):
        home.token()
    (home.path / "jobs").symlink_to(elsewhere)
    with pytest.raises(UnsafeDirectoryError, match="symbolic link"):
        JobStore(home.path)


class Killed(BaseException):
    """The starting Dispatcher dies here."""


def test_a_start_killed_while_making_the_token_leaves_no_empty_token(tmp_path, monkeypatch):
    home = DispatcherHome(tmp_path / "home")

    def killed(n: int) -> str:
        raise Killed

    monkeypatch.setattr(secrets, "token_hex", killed)
    with pytest.raises(Killed):
        home.token()
    monkeypatch.undo()
    token = home.token()  # the next start
    assert len(token) == 64 and home.read_token() == token
    assert home.token_path.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in home.path.iterdir()) == ["token"]
