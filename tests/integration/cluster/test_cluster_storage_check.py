"""A work dir and checkpoint dir that one executor cannot reach fail the job before any
epoch, naming the URL and that executor, and saying why a local path cannot work on a
cluster.

The unreachable executor is real: a third worker runs in a mount namespace of its own, in
which a fresh tmpfs covers the directory that holds the job's work and checkpoint dirs, so
its executor sees an empty directory at the path the driver wrote to, as an executor on
another machine sees its own disk. Needs ``unshare`` and the right to mount (root, or user
namespaces); skipped otherwise.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from cluster_support import WORKERS, job_spec, run_job

pytestmark = pytest.mark.cluster  # make cluster; not in make test


def private_mount(directory: Path) -> list[str]:
    """A command prefix: run the rest with an empty tmpfs over ``directory``."""
    script = 'mount -t tmpfs lockgate-test "$0" && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(directory)]


def can_mount_privately(tmp_path: Path) -> bool:
    probe = tmp_path / "mount-probe"
    probe.mkdir()
    done = subprocess.run([*private_mount(probe), "true"], capture_output=True)
    return done.returncode == 0


def test_an_executor_that_cannot_reach_the_storage_fails_the_job_before_any_epoch(
    cluster, tmp_path
):
    if not can_mount_privately(tmp_path):
        pytest.skip("needs unshare and the right to mount a tmpfs in a mount namespace")
    shared = tmp_path / "shared"
    shared.mkdir()
    isolated = cluster.start_worker("isolated", "127.0.0.1", wrap=private_mount(shared))
    try:
        cluster.wait_ready()
        spec = job_spec(tmp_path, "hashmap", cluster.url)
        spec["work"] = str(shared / "work")
        spec["checkpoints"] = str(shared / "checkpoints")
        started = time.monotonic()
        driver = run_job(cluster, tmp_path, spec, SPARK_CONF_DIR=str(tmp_path))
        assert driver.wait() == 3, driver.tail()
        elapsed = time.monotonic() - started
        message = driver.line("CONFIG_ERROR")
        # the isolated worker's executor: its directory under the worker's work dir
        (app_dir,) = (cluster.base / "isolated-work").iterdir()
        (executor_dir,) = app_dir.iterdir()
        executor = executor_dir.name
        for key, directory in (
            ("lockgate.work-dir", shared / "work"),
            ("execution.checkpointing.dir", shared / "checkpoints"),
        ):
            named = f"executor {executor} (host 127.0.0.1) cannot read file://{directory}/"
            assert named in message, message
            assert f"(configuration key '{key}')" in message, message
            assert "FileNotFoundError" in message, message
            assert f"{directory} is on the local file system" in message, message
        assert f"master {cluster.url}" in message
        assert "each executor sees its own machine's disk" in message
        assert "hdfs://, s3://, gs://" in message
        failing = {line.split(" (host")[0].strip() for line in message.splitlines()[1:5]}
        assert failing == {f"executor {executor}"}, message  # the reachable two pass
        checked = message.splitlines()[-1]
        assert checked.startswith("(checked: ") and checked.count("(host 127.0.0.") == 3, checked
        assert not list(tmp_path.glob("markers/ran-*")), "no epoch may have run"
        assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*"))
        print(f"storage check failed the job {elapsed:.1f} s after its driver started")
    finally:
        cluster.ensure_workers(WORKERS)
        assert not isolated.alive()
