"""Local directories that only the job's user can enter.

Spark machines are shared, and the system temp directory is everybody's: a directory lockgate
keeps there (its sockets, its default work directory) must be created by this user with mode
0700, and when it already exists, be this user's own real directory that nobody else can
enter, or another user could have prepared it (swapped subdirectories, planted files). Its
parent must be one that no other user can rename it out of: this user's or root's, and not
writable by others unless sticky (as /tmp is).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


class UnsafeDirectoryError(PermissionError):
    """A local directory lockgate would use is not private to this user."""


def user_directory(setting: str | None = None) -> Path:
    """``<temp dir>/lockgate-<uid>``, this user's private directory on this machine (for a
    default of ``setting``, which the message names if the directory is not safe)."""
    return private_directory(Path(tempfile.gettempdir(), f"lockgate-{os.getuid()}"), setting)


def private_directory(path: Path, setting: str | None) -> Path:
    """``path`` created with mode 0700 if missing (missing parents too), or checked if
    present: a real directory (not a symbolic link) of this user that no other user can
    enter, in a safe parent. ``setting`` names the configuration key that chose the path,
    for the message."""
    path = Path(os.path.abspath(path))
    if path.parent != path:
        _safe_parent(path.parent, setting)
    try:
        os.mkdir(path, 0o700)
        return path  # made just now by this process, 0700 whatever the umask
    except FileExistsError:
        pass
    info = os.lstat(path)
    problem = _problem(info)
    if problem is None and stat.S_IMODE(info.st_mode) & 0o077:
        problem = f"has mode {stat.S_IMODE(info.st_mode):04o}: other users can enter it"
    if problem is not None:
        _refuse(path, problem, setting)
    return path


def _safe_parent(path: Path, setting: str | None) -> None:
    try:
        info = os.stat(path)  # a link to it is as safe as the directory the link is in
    except FileNotFoundError:
        private_directory(path, setting)
        return
    problem = _problem(info, root_allowed=True)
    writable = info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX
    if problem is None and writable:
        problem = f"has mode {stat.S_IMODE(info.st_mode):04o}: other users can write to it"
    if problem is not None:
        _refuse(path, problem, setting)


def _problem(info: os.stat_result, root_allowed: bool = False) -> str | None:
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if info.st_uid != os.getuid() and not (root_allowed and info.st_uid == 0):
        return f"belongs to uid {info.st_uid}, not to this user (uid {os.getuid()})"
    return None


def _refuse(path: Path, problem: str, setting: str | None) -> None:
    change = f"set '{setting}' to a directory of your own" if setting else "remove it"
    raise UnsafeDirectoryError(f"the local directory {path} {problem}: {change}")
