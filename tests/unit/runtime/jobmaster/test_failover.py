"""Failover: the restart strategy decides; a restore starts a new generation from the
latest checkpoint, and a failing restore is one more failure."""

from __future__ import annotations

import threading
from collections import deque

import pytest
from driver_parts import Checkpointing

from lockgate.checkpoint.staged_files import StagedFilesRegistry
from lockgate.runtime.errors import InjectedFailure, JobExecutionError
from lockgate.runtime.jobmaster.failover import Failover
from lockgate.runtime.jobmaster.job_summary import JobSummary

RESTARTS = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "2",
    "restart-strategy.fixed-delay.delay": "0 ms",
}


def failover_for(tmp_path, injections=(), **config):
    parts = Checkpointing.build(tmp_path, injections, **{**RESTARTS, **config})
    finalizer = parts.finalizer
    return Failover(
        finalizer.state.job,
        parts.settings,
        finalizer.state,
        finalizer.coordinator,
        finalizer.shared_state,
        StagedFilesRegistry(parts.job_root.child("staging")),
        finalizer,
        finalizer.results,
        parts.injector,
        JobSummary(parts.settings.job_id, "unit", deque()),
        threading.Event(),
    )


def test_each_failure_costs_a_restart_until_the_strategy_gives_up(tmp_path):
    failover = failover_for(tmp_path)
    restored = []
    failover.recover(lambda: restored.append(1), OSError("lost"))
    failover.recover(lambda: restored.append(2), OSError("lost again"))
    assert restored == [1, 2] and failover.summary.restarts == 2
    with pytest.raises(JobExecutionError, match=r"lost for good.*no restarts left"):
        failover.recover(lambda: restored.append(3), OSError("lost for good"))
    assert restored == [1, 2]


def test_a_failing_restore_is_one_more_failure(tmp_path):
    failover = failover_for(tmp_path, [("during-restore", 1)])
    failover.recover(failover.restore_latest, OSError("epoch failed"))
    assert failover.generation == 2  # restore 1 was struck, restore 2 went through
    assert failover.summary.restarts == 2


def test_a_restore_without_checkpoint_starts_over_in_a_new_generation(tmp_path):
    failover = failover_for(tmp_path)
    failover.state.epoch = 4
    failover.results.hold(["from epoch 4"])
    failover.restore_latest()
    assert failover.generation == 1
    assert failover.state.epoch == 0
    failover.results.release()
    assert failover.results.take() == [], "epochs that will run again collect again"


def test_a_restore_goes_back_to_the_latest_checkpoint(tmp_path):
    failover = failover_for(tmp_path)
    failover.state.epoch = 3
    failover.finalizer.finalize(3, 0.0, final=False)
    failover.state.epoch = 5
    failover.restore_latest()
    assert (failover.state.epoch, failover.state.committed_epoch) == (3, 3)


def test_a_cancel_during_the_delay_skips_the_restore(tmp_path):
    failover = failover_for(tmp_path, **{"restart-strategy.fixed-delay.delay": "1 h"})
    failover.cancelled.set()
    restored = []
    failover.recover(lambda: restored.append(1), InjectedFailure("boom"))
    assert restored == []
