"""Keyed state larger than the Python workers' memory: RocksDB keeps it on local disk.

``state_memory_job.py`` builds about 300 MB of MapState (1 KB values generated from tiny
records) in one keyed subtask and reads it all back. It runs as its own driver process,
because the limit is a setting of the Spark session: ``spark.executor.pyspark.memory``,
which PySpark applies to every Python worker as RLIMIT_AS (local mode included, on Linux).

The limit, 768 MB of address space, was measured on this job: the RocksDB run completes
from 512 MB up (below, RocksDB cannot even start its threads; its peak RSS is about 180 MB),
while the heap backend needs more than 1 GB (peak RSS about 890 MB: the state, plus its
snapshot) and fails with MemoryError at 1024 MB and below.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from state_memory_job import ENTRIES_PER_KEY, KEYS, STATE_BYTES, checksum

SCRIPT = Path(__file__).with_name("state_memory_job.py")
LIMIT_MB = 768
TIMEOUT_S = 120


def _start(directory: Path, backend: str) -> tuple[subprocess.Popen[bytes], Path]:
    log_path = directory / f"{backend}.log"
    args = [sys.executable, str(SCRIPT), backend, str(directory / f"work-{backend}")]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [*args, f"{LIMIT_MB}m"],
            cwd=directory,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return process, log_path


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[int, str]]:
    """The exit code and output of the job on each backend. Both run at once: each is a
    Spark of its own, and only its Python workers have the limit."""
    directory = tmp_path_factory.mktemp("state-memory")
    started = {backend: _start(directory, backend) for backend in ("rocksdb", "hashmap")}
    done: dict[str, tuple[int, str]] = {}
    try:
        deadline = time.monotonic() + TIMEOUT_S
        for backend, (process, log_path) in started.items():
            code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
            done[backend] = code, log_path.read_text(errors="replace")
    finally:  # the jobs' JVMs and workers too, whatever happened
        for process, _ in started.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return done


def tail(output: str, lines: int = 40) -> str:
    return "\n".join(output.splitlines()[-lines:])


def test_map_state_beyond_the_worker_memory_limit_completes_on_rocksdb(runs):
    code, output = runs["rocksdb"]
    assert code == 0, tail(output)
    rows = json.loads(re.search(r"^RESULT (.*)$", output, re.MULTILINE).group(1))
    assert [row[:3] for row in rows] == [
        [key, ENTRIES_PER_KEY, checksum(key)] for key in range(KEYS)
    ], "every entry of every key's map read back, with the values written"
    limits = {row[3] for row in rows}
    assert limits == {LIMIT_MB << 20}, f"the worker ran under RLIMIT_AS {limits}"
    peak_rss_mb = max(row[4] for row in rows)
    assert peak_rss_mb < STATE_BYTES >> 20, (
        f"peak RSS {peak_rss_mb} MB: the state ({STATE_BYTES >> 20} MB) was not held in memory"
    )


def test_the_same_job_on_the_heap_backend_exceeds_the_limit(runs):
    """The limit binds: on the heap backend the state does not fit."""
    code, output = runs["hashmap"]
    assert code != 0, tail(output)
    assert "MemoryError" in output, tail(output)
