"""The Dispatcher's home directory: its job store, token, log, and where it listens.

```
<home>/token            the bearer token of requests that change anything (0600, made once)
<home>/dispatcher.json  where the running Dispatcher listens (DispatcherAddress)
<home>/dispatcher.lock  held by the running Dispatcher: one per home
<home>/dispatcher.log   its log
<home>/jobs/...         the job store (job_store.py)
```

The home is private to its user (0700), like every directory lockgate keeps on a shared
machine: whoever can read the token can run code as this user through the Dispatcher.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from lockgate.common.records import Record
from lockgate.core.fs.private_directory import UnsafeDirectoryError, private_directory
from lockgate.dispatcher.job_store import write_file, write_record

HOME_VARIABLE = "LOCKGATE_HOME"


def default_home() -> Path:
    """``$LOCKGATE_HOME``, else ``~/.lockgate``."""
    return Path(os.environ.get(HOME_VARIABLE) or Path.home() / ".lockgate")


@dataclass(frozen=True)
class DispatcherAddress(Record, format="lockgate-dispatcher-address", version=1):
    url: str  # http(s)://host:port
    pid: int
    started_ms: int


class DispatcherHome:
    def __init__(self, path: Path):
        self.path = private_directory(path, None)
        self.token_path = self.path / "token"
        self.address_path = self.path / "dispatcher.json"
        self.lock_path = self.path / "dispatcher.lock"
        self.log_path = self.path / "dispatcher.log"

    def token(self) -> str:
        """The token, made at the first start (64 hex digits): written aside and linked into
        place, so that a start killed halfway leaves no empty token."""
        if not os.path.lexists(self.token_path):
            made = self.path / f".token.{os.getpid()}.tmp"
            write_file(made, secrets.token_hex(32).encode())
            try:
                os.link(made, self.token_path)
            except FileExistsError:
                pass  # another start made it first
            finally:
                made.unlink()
        return self.read_token()

    def read_token(self) -> str:
        info = os.lstat(self.token_path)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise UnsafeDirectoryError(f"{self.token_path} is not a file of this user")
        if stat.S_IMODE(info.st_mode) & 0o077:
            raise UnsafeDirectoryError(
                f"{self.token_path} has mode {stat.S_IMODE(info.st_mode):04o}: other users can "
                "read it (it must be 0600)"
            )
        token = self.token_path.read_text().strip()
        if len(token) < 32:
            raise UnsafeDirectoryError(f"{self.token_path} holds no token")
        return token

    def lock(self) -> int | None:
        """Hold the home for this Dispatcher (until its process ends); None when another
        one holds it."""
        descriptor = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            return None
        # a killed Dispatcher's address is not this one's: until this one announces its
        # own, clients must not send the token there (another user may listen on it now)
        self.address_path.unlink(missing_ok=True)
        return descriptor

    def running(self) -> DispatcherAddress | None:
        """Where the Dispatcher of this home listens, if one runs."""
        try:
            descriptor = os.open(self.lock_path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return None  # nobody holds it
        except BlockingIOError:
            pass
        finally:
            os.close(descriptor)
        try:
            return DispatcherAddress.decode(self.address_path.read_bytes(), str(self.address_path))
        except FileNotFoundError:
            return None  # starting: not listening yet

    def announce(self, address: DispatcherAddress) -> None:
        write_record(self.address_path, address)
