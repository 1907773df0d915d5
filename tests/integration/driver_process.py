"""A job's driver as a process of its own, for tests that SIGKILL it (not a test module).

The driver runs in its own process group: its Python process, the Spark JVM it launched
and Spark's Python workers, so that killing the group leaves nothing of the job running.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path


def start_driver(tmp_path: Path, name: str, script: Path, args: list[str]):
    """Run ``script`` with ``args`` in ``tmp_path``; its output goes to ``<name>.log``."""
    log = open(tmp_path / f"{name}.log", "wb")  # noqa: SIM115 - closed by the caller
    process = subprocess.Popen(
        [sys.executable, str(script), *args],
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return process, log


def completed_checkpoints(job_dir: Path) -> list[Path]:
    """chk-<n> directories whose _metadata exists, oldest first."""
    found = [
        p
        for p in job_dir.glob("chk-*")
        if re.fullmatch(r"chk-\d+", p.name) and (p / "_metadata").exists()
    ]
    return sorted(found, key=lambda p: int(p.name[4:]))


def log_tail(tmp_path: Path, name: str, lines: int = 40) -> str:
    text = (tmp_path / f"{name}.log").read_text(errors="replace").splitlines()
    return "\n".join(line for line in text[-lines:])


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL the driver, then everything else in its process group (the JVM, workers)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError("processes of the killed job are still alive")
