"""``open_dir``: a directory every local user can enter and write to, for the tests that let
another user (``local_attacker``) in; the tests' own ``tmp_path`` is this user's alone."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def open_dir():
    """Sticky, as /tmp is."""
    path = Path(tempfile.mkdtemp(prefix="lockgate-open-"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path)
