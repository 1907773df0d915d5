"""Jobs on a Spark standalone cluster (a master and two one-core workers on this machine):
results equal the plain-Python reference on both state backends, and SIGKILL of an
executor's JVM or of a whole worker in the middle of an epoch loses and repeats nothing in
the exactly-once output, the moved subtasks restoring their state from checkpoint storage
(counted in the epoch statistics)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from cluster_job import MAX_RECORDS, reference
from cluster_support import job_spec, run_job
from exactly_once_job import committed_lines
from lockgate_it_support import BACKENDS
from standalone import executor_pid

pytestmark = pytest.mark.cluster  # make cluster; not in make test

STALL = (0, 2 * MAX_RECORDS + 7)  # a record of epoch 3, in source subtask 0
STALL_EPOCH = STALL[1] // MAX_RECORDS + 1
STALL_TIMEOUT_S = 180


def assert_exactly_once(out: Path) -> None:
    lines, expected = committed_lines(out), reference()
    missing, extra = sorted(expected - lines), sorted(lines - expected)
    assert not missing and not extra, (
        f"{len(missing)} lines missing (first {missing[:5]}), {len(extra)} unexpected or "
        f"repeated (first {extra[:5]})"
    )
    staged = [p.name for p in out.rglob(".*") if "inprogress" in p.name]
    assert not staged, f"staged part files left behind: {staged[:5]}"


def assert_all_epochs_checkpointed(result: dict) -> None:
    epochs = [epoch for epoch, _ in result["epochs"]]
    last = max(epochs)
    assert last == 10, result
    completed = [c for c in result["checkpoints"] if c[2] == "COMPLETED"]
    assert completed and completed[-1][1] == last, result


@BACKENDS
def test_results_equal_the_reference_with_the_master_from_spark_defaults(
    cluster, tmp_path, backend
):
    """The master comes from spark-defaults.conf, as a cluster user would set it: lockgate
    keeps it, and applies none of its local-only defaults (no SPARK_LOCAL_IP, no workers'
    PYTHONPATH of its own). The work and checkpoint dirs are plain local paths, which every
    executor of this one-machine cluster reaches: the storage check passes.

    Subtasks stay put: once the acks show them on both Spark hosts (after epoch 1, or 2 if
    Spark ran every task of epoch 1 on one), every task runs where its subtask lives, and
    no subtask is restored again."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(f"spark.master {cluster.url}\n")
    driver = run_job(cluster, tmp_path, job_spec(tmp_path, backend, None), SPARK_CONF_DIR=str(conf))
    assert driver.wait() == 0, driver.tail()
    result = driver.line("RESULT")
    assert result["master"] == cluster.url
    assert result["jvm_local_ip"] is None
    assert result["executor_pythonpath"] == job_spec(tmp_path, backend, None)["executor_pythonpath"]
    assert result["restarts"] == 0
    assert_all_epochs_checkpointed(result)
    assert_exactly_once(tmp_path / "out")
    assert [restored for epoch, restored in result["epochs"] if epoch >= 3] == [0] * 8, result
    builds = markers_of(tmp_path / "markers", "open")
    executors = {executor for *_, executor, _ in builds}
    assert len(executors) == 2, builds  # the subtasks did spread over both executors


def markers_of(markers: Path, kind: str) -> list[tuple]:
    """``open`` markers: (operator, subtask, executor, time), one per build of a subtask;
    ``ran`` markers: (operator, subtask, epoch, executor, time), one per run of an epoch."""
    found = []
    for marker in markers.glob(f"{kind}-*"):
        fields = marker.name.split("-")[1:]
        *head, executor, ns = fields
        found.append((head[0], *(int(f) for f in head[1:]), executor, int(ns) / 1e9))
    return sorted(found, key=lambda m: m[-1])


def wait_for_stall(driver, markers: Path) -> dict:
    deadline = time.monotonic() + STALL_TIMEOUT_S
    stalled = markers / "stalled.json"
    while not stalled.exists():
        if driver.process.poll() is not None:
            pytest.fail(f"the job ended before the stall:\n{driver.tail()}")
        if time.monotonic() > deadline:
            pytest.fail(f"no stall within {STALL_TIMEOUT_S} s:\n{driver.tail()}")
        time.sleep(0.05)
    time.sleep(0.1)  # the marker is written before its content
    return json.loads(stalled.read_text())


def keyed_state_holders(markers: Path) -> dict[int, str]:
    """Keyed subtask -> the executor whose Python worker holds its state when source subtask
    0 stalls in epoch 3: where it ran epoch 2. The keyed stage of epoch 3 cannot have started
    (it waits for every source subtask), and no failure struck before, so each keyed subtask
    ran epoch 2 once, and that run's state is the only live copy of it."""
    runs = [m for m in markers_of(markers, "ran") if m[0] == "count" and m[2] == STALL_EPOCH - 1]
    holders = {index: executor for _, index, _, executor, _ in runs}
    assert sorted(holders) == [0, 1] and len(runs) == 2, runs
    assert not [m for m in markers_of(markers, "ran") if m[0] == "count" and m[2] >= STALL_EPOCH]
    return holders


def assert_lost_subtasks_restored(
    result: dict, markers: Path, lost: set[tuple[str, int]], victim: str, killed_at: float
):
    """Every keyed subtask whose live state died with the victim was built again on another
    executor after the kill (restored from checkpoint storage), and the epoch statistics
    count at least those restores."""
    builds = markers_of(markers, "open")
    for operator, index in lost:
        again = [e for o, i, e, at in builds if (o, i) == (operator, index) and at > killed_at]
        assert again and victim not in again, (operator, index, again, builds)
    restored = sum(count for epoch, count in result["epochs"] if epoch >= STALL_EPOCH)
    assert restored >= len(lost), (result["epochs"], lost)


def run_and_kill(cluster, tmp_path, backend, kill):
    """Run the job, and while source subtask 0 stalls in epoch 3 kill (``kill(pid)``) an
    executor that holds keyed subtasks' state: they must be restored."""
    spec = job_spec(tmp_path, backend, cluster.url, stall=list(STALL))
    driver = run_job(cluster, tmp_path, spec)
    markers = Path(spec["markers"])
    try:
        stalled = wait_for_stall(driver, markers)
        args = Path(f"/proc/{stalled['jvm_pid']}/cmdline").read_bytes().split(b"\0")
        app_id = args[args.index(b"--app-id") + 1].decode()
        holders = keyed_state_holders(markers)
        # the stalled task's executor if it holds keyed state (a task dies with it), else the
        # other one: either way the state of at least one keyed subtask is lost
        victim = stalled["executor"]
        if victim not in holders.values():
            victim = next(iter(holders.values()))
        lost = {("count", index) for index, executor in holders.items() if executor == victim}
        pid = executor_pid(app_id, victim)
        killed_at = time.time()
        kill(pid)
        code = driver.wait()
    finally:
        if driver.process.poll() is None:
            os.killpg(driver.process.pid, signal.SIGKILL)
    assert code == 0, driver.tail()
    result = driver.line("RESULT")
    assert_all_epochs_checkpointed(result)
    assert_exactly_once(tmp_path / "out")
    assert_lost_subtasks_restored(result, markers, lost, victim, killed_at)
    return result, victim, stalled["executor"]


@BACKENDS
def test_sigkill_of_an_executor_mid_epoch_loses_and_repeats_nothing(cluster, tmp_path, backend):
    """The worker starts a new executor (with a new id); the subtasks whose state lived on
    the killed one restore it from checkpoint storage."""

    def kill(pid: int) -> None:
        os.kill(pid, signal.SIGKILL)

    result, victim, stalled = run_and_kill(cluster, tmp_path, backend, kill)
    print(f"executor {victim} killed (stalled task on {stalled}), {backend}: {result['epochs']}")


@BACKENDS
def test_sigkill_of_a_worker_mid_epoch_loses_and_repeats_nothing(cluster, tmp_path, backend):
    """The whole worker (its JVM, the executor and the executor's Python processes) dies
    as with its machine; the job finishes on the other worker's executor."""

    def kill(pid: int) -> None:
        worker = cluster.worker_of(pid)
        worker.kill()
        assert not worker.alive()
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}").exists():  # the executor died with its worker's group
            assert time.monotonic() < deadline, f"executor {pid} outlived its worker"
            time.sleep(0.05)

    result, victim, stalled = run_and_kill(cluster, tmp_path, backend, kill)
    print(f"worker of executor {victim} killed (stall on {stalled}), {backend}: {result['epochs']}")
