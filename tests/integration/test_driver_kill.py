"""SIGKILL the driver of a running job, start it again from its checkpoint directory.

The job (``driver_kill_job.py``) runs in its own process group: its Python driver, the
Spark JVM it launched and Spark's Python workers. Once it has completed at least two
checkpoints, the whole group is killed with SIGKILL: no cleanup code runs, as when a
machine dies. The same program is then started in a new process with
``execution.state-recovery.path`` set to the newest ``chk-<n>`` of the killed job, and
its committed output must equal that of a run without failure: nothing lost, nothing twice.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from driver_kill_job import MAX_RECORDS, PER_SPLIT, reference
from driver_process import completed_checkpoints, kill_group, log_tail, start_driver
from exactly_once_job import committed_lines

SCRIPT = Path(__file__).with_name("driver_kill_job.py")
START_TIMEOUT_S = 120  # until two checkpoints exist
RUN_TIMEOUT_S = 180


def start(
    tmp_path: Path,
    name: str,
    parallelism: int,
    backend: str,
    source: str,
    recovery: Path | None = None,
):
    args = [
        str(tmp_path / "out"),
        str(tmp_path / "checkpoints"),
        str(tmp_path / "work"),  # both runs: the second sweeps what the killed one left
        str(parallelism),
        backend,
        source,
    ]
    if recovery is not None:
        args.append(str(recovery))
    return start_driver(tmp_path, name, SCRIPT, args)


# Parallelism 3 on one backend: parallelism 1 adds nothing the other recovery tests lack,
# and how the driver dies does not depend on the backend. A kill costs about a minute:
# `make test` kills a DataFrame job (its source has the most to redo: the new run stages
# the DataFrame again, the killed run's staged partitions go with its work directory, and
# it reads on from the checkpoint's row offsets); a collection's job is killed in
# `make integration-full` and, writing to every exactly-once sink, in
# test_exactly_once_sinks_driver_kill.py.
@pytest.mark.parametrize(
    "source", ["dataframe", pytest.param("collection", marks=pytest.mark.full)]
)
def test_driver_killed_mid_run_resumes_with_exactly_once_output(tmp_path, source):
    """On RocksDB (incremental checkpoints), the new driver's subtasks find no local
    snapshot of the killed run: they download the checkpoint's files."""
    kill_and_resume(tmp_path, 3, "rocksdb", source)


def kill_and_resume(tmp_path: Path, parallelism: int, backend: str, source: str) -> None:
    checkpoints = tmp_path / "checkpoints"
    first, first_log = start(tmp_path, "first", parallelism, backend, source)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while len(list(checkpoints.glob("*/chk-*/_metadata"))) < 2:
            if first.poll() is not None:
                pytest.fail(f"the job ended before it was killed:\n{log_tail(tmp_path, 'first')}")
            if time.monotonic() > deadline:
                pytest.fail(f"no two checkpoints in time:\n{log_tail(tmp_path, 'first')}")
            time.sleep(0.05)
        assert first.poll() is None, "the job must still be running when it is killed"
        kill_group(first)
    finally:
        if first.poll() is None:
            kill_group(first)
        first_log.close()

    job_dirs = [p for p in checkpoints.iterdir() if p.is_dir()]
    assert len(job_dirs) == 1, job_dirs
    retained = completed_checkpoints(job_dirs[0])
    assert len(retained) >= 2, retained
    latest = retained[-1]
    restored_epoch = json.loads((latest / "_metadata").read_text())["body"]["epoch"]
    epochs = PER_SPLIT // MAX_RECORDS
    assert restored_epoch < epochs, "the killed job had already finished its input"
    killed_job = job_dirs[0].name
    orphans = [tmp_path / "work" / killed_job]
    if backend == "rocksdb":
        orphans.append(
            tmp_path / "work" / "rocksdb" / f"lockgate-rocksdb-{os.getuid()}" / killed_job
        )
    if source == "dataframe":
        orphans.append(tmp_path / "work" / killed_job / "sources")  # its staged partitions
    assert all(orphan.is_dir() for orphan in orphans), "the killed run left no directories"
    before = committed_lines(tmp_path / "out")
    expected = reference(parallelism)
    assert 0 < sum(before.values()) < sum(expected.values())
    assert not before - expected, "the killed job committed lines no failure-free run has"

    second, second_log = start(tmp_path, "second", parallelism, backend, source, recovery=latest)
    try:
        returncode = second.wait(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        kill_group(second)
        pytest.fail(f"the resumed job did not finish:\n{log_tail(tmp_path, 'second')}")
    finally:
        second_log.close()
    assert returncode == 0, log_tail(tmp_path, "second")
    assert not any(orphan.exists() for orphan in orphans), "the killed run's directories stayed"
    output = (tmp_path / "second.log").read_text(errors="replace")
    summary = json.loads(re.search(r"^RESULT (.*)$", output, re.MULTILINE).group(1))
    assert summary["epochs"][0] == restored_epoch + 1, summary
    assert summary["epochs"][-1] == epochs, summary

    lines = committed_lines(tmp_path / "out")
    missing = sorted(expected - lines)
    extra = sorted(lines - expected)
    assert not missing and not extra, (
        f"{len(missing)} lines missing (first {missing[:5]}), {len(extra)} unexpected or "
        f"repeated (first {extra[:5]})"
    )
    staged = [p.name for p in (tmp_path / "out").rglob(".*") if "inprogress" in p.name]
    assert not staged, f"staged part files of the killed job are left behind: {staged[:5]}"
