"""AT_LEAST_ONCE: output is published per epoch, and an epoch run again (after a checkpoint
timeout cancelled it) writes new part files instead of rewriting what it published."""

from __future__ import annotations

from exactly_once_job import (
    MAX_RECORDS,
    SleepOnce,
    build_job,
    committed_lines,
    record_in_epoch,
    reference,
)

from lockgate.common import RestartStrategies
from lockgate.datastream import CheckpointingMode


def test_a_cancelled_epoch_does_not_rewrite_published_files(make_env, tmp_path):
    env = make_env(3, MAX_RECORDS)
    env.enable_checkpointing(1, CheckpointingMode.AT_LEAST_ONCE)
    config = env.get_checkpoint_config()
    # 8 s: an epoch that starts subtask hosts takes several seconds on a loaded 2-core
    # machine, and only the slept epoch may time out
    config.set_checkpoint_timeout(8000)
    config.set_tolerable_checkpoint_failure_number(2)
    env.set_restart_strategy(RestartStrategies.no_restart())
    out = tmp_path / "out"
    # The keyed subtask with this record sleeps past the timeout in epoch 3; the others
    # finish the epoch and publish their part files before it is cancelled.
    slow = SleepOnce(record_in_epoch(3, split=2), tmp_path / "slept", 16)
    build_job(env, out, 3, trap=slow)
    result = env.execute("at least once")
    assert (tmp_path / "slept").exists()
    assert any(c.status == "FAILED" for c in result.checkpoints)
    lines = committed_lines(out)
    expected = reference(3)
    assert not expected - lines, "at-least-once lost output"
    assert sum((lines - expected).values()) > 0, (
        "the subtasks that finished epoch 3 before it was cancelled published their files; "
        "the epoch's second run must add files of its own, not replace them"
    )
    assert not [p for p in out.rglob(".*") if "inprogress" in p.name]
