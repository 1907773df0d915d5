"""Another local user, for the tests that attack a job's processes and files: ``nobody``,
through ``setpriv``, running the system's Python (which needs nothing of this repository).

Only root can become another user; elsewhere the tests that need it are skipped, saying why.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import textwrap

import pytest

PYTHON = "/usr/bin/python3"


def _reason() -> str | None:
    if os.getuid() != 0:
        return "only root can run a process as another user (nobody)"
    if shutil.which("setpriv") is None or not os.path.exists(PYTHON):
        return f"setpriv or {PYTHON} is missing"
    return None


needs_another_user = pytest.mark.skipif(_reason() is not None, reason=_reason() or "")

NOBODY = pwd.getpwnam("nobody").pw_uid


_AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", PYTHON, "-c"]


def as_nobody(code: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (Python, dedented) as nobody with ``args`` in ``sys.argv[1:]``."""
    command = [*_AS_NOBODY, textwrap.dedent(code), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd="/")


def start_as_nobody(code: str, *args: str) -> subprocess.Popen[str]:
    """Start ``code`` as nobody; it runs until it exits or is killed."""
    return subprocess.Popen(
        [*_AS_NOBODY, textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd="/",
    )
