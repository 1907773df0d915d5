"""Local directories that only the job's user can enter.

Spark machines are shared, and the system temp directory is everybody's: a directory lockgate
keeps there (its sockets, its default work directory) must be created by this user with mode
0700, and when it already exists, be this user's own real directory that nobody else can
write, or another user could have prepared it (swapped subdirectories, planted files).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


class UnsafeDirectoryError(PermissionError):
    """A local directory lockgate would use is not private to this user."""


def user_directory() -> Path:
    """``<temp dir>/lockgate-<uid>``, this user's private directory on this machine."""
    return private_directory(Path(tempfile.gettempdir(), f"lockgate-{os.getuid()}"), None)


def private_directory(path: Path, setting: str | None, *, strict: bool = True) -> Path:
    """``path`` created with mode 0700 if missing (its parents too, with the same mode), or
    checked if present: a real directory (not a symbolic link) owned by this user, which no
    other user can write to, nor, when ``strict``, enter. ``setting`` names the configuration
    key that chose the path, for the message."""
    try:
        os.mkdir(path, 0o700)
    except FileNotFoundError:
        private_directory(path.parent, setting, strict=False)
        return private_directory(path, setting, strict=strict)
    except FileExistsError:
        pass
    else:
        return path  # made just now by this process, 0700 whatever the umask
    info = os.lstat(path)
    problem = None
    if not stat.S_ISDIR(info.st_mode):
        problem = "is not a directory" if not stat.S_ISLNK(info.st_mode) else "is a symbolic link"
    elif info.st_uid != os.getuid():
        problem = f"belongs to uid {info.st_uid}, not to this user (uid {os.getuid()})"
    elif info.st_mode & (0o077 if strict else 0o022):
        problem = f"has mode {stat.S_IMODE(info.st_mode):04o}: other users can " + (
            "enter it" if strict else "write to it"
        )
    if problem is not None:
        change = f"set '{setting}' to a directory of your own" if setting else "remove it"
        raise UnsafeDirectoryError(f"the local directory {path} {problem}: {change}")
    return path
