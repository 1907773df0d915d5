"""Failover: the restart strategy decides; a restore starts a new generation from the
latest checkpoint, and a failing restore is one more failure."""

from __future__ import annotations

import pytest
from driver_parts import Checkpointing, file_sink_job

from lockgate.connectors.file.committable import PartCommittable
from lockgate.runtime.errors import InjectedFailure, JobExecutionError
from lockgate.runtime.jobmaster.failover import Failover

RESTARTS = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "2",
    "restart-strategy.fixed-delay.delay": "0 ms",
}


class Releases(list):
    """Stands for the driver's release of a run's subtasks: records the runs released."""

    def __call__(self, run: str) -> None:
        self.append(run)


def failover_for(tmp_path, injections=(), job=None, **config):
    parts = Checkpointing.build(tmp_path, injections, job, **{**RESTARTS, **config})
    return Failover(parts.ctx, parts.finalizer, Releases())


def test_each_failure_costs_a_restart_until_the_strategy_gives_up(tmp_path):
    failover = failover_for(tmp_path)
    restored = []
    failover.recover(lambda: restored.append(1), OSError("lost"))
    failover.recover(lambda: restored.append(2), OSError("lost again"))
    assert restored == [1, 2] and failover.ctx.summary.restarts == 2
    with pytest.raises(JobExecutionError, match=r"lost for good.*no restarts left"):
        failover.recover(lambda: restored.append(3), OSError("lost for good"))
    assert restored == [1, 2]


def test_a_failing_restore_is_one_more_failure(tmp_path):
    failover = failover_for(tmp_path, [("during-restore", 1)])
    failover.recover(failover.restore_latest, OSError("epoch failed"))
    assert failover.generation == 2  # restore 1 was struck, restore 2 went through
    assert failover.ctx.summary.restarts == 2


def test_a_restore_without_checkpoint_starts_over_in_a_new_generation(tmp_path):
    failover = failover_for(tmp_path)
    failover.ctx.state.epoch = 4
    failover.ctx.results.hold(["from epoch 4"])
    failover.restore_latest()
    assert failover.generation == 1
    assert failover.ctx.state.epoch == 0
    failover.ctx.results.release()
    assert failover.ctx.results.take() == [], "epochs that will run again collect again"


def test_a_restore_goes_back_to_the_latest_checkpoint(tmp_path):
    failover = failover_for(tmp_path)
    failover.ctx.state.epoch = 3
    failover.finalizer.finalize(3, 0.0, final=False)
    failover.ctx.state.epoch = 5
    failover.restore_latest()
    assert (failover.ctx.state.epoch, failover.ctx.state.committed_epoch) == (3, 3)


def test_a_cancel_during_the_delay_skips_the_restore(tmp_path):
    failover = failover_for(tmp_path, **{"restart-strategy.fixed-delay.delay": "1 h"})
    failover.ctx.cancelled.set()
    restored = []
    failover.recover(lambda: restored.append(1), InjectedFailure("boom"))
    assert restored == []


def test_the_restore_commits_again_without_the_mid_commit_injection(tmp_path):
    """``mid-commit@N`` strikes the first commit of checkpoint N, never the restore's: a
    checkpoint whose commit never started is committed whole by the restore."""
    out = tmp_path / "out"
    out.mkdir()
    failover = failover_for(
        tmp_path,
        [("after-metadata-before-commit", 1), ("mid-commit", 1)],
        job=file_sink_job(out),
    )
    [sink] = [v for v in failover.ctx.job.vertices if any(n.uid == "files" for n in v.nodes)]
    for index in range(2):
        pending = out / f".part-{index}.inprogress.0"
        pending.write_text("x")
        part = PartCommittable(1, f"file://{pending}", f"file://{out}/part-{index}", 1)
        failover.ctx.state.operator_states[sink.id][index] = {
            "files": {"committables": [part.to_json()], "next_part": 1}
        }
    failover.ctx.state.epoch = 1
    with pytest.raises(InjectedFailure, match="after-metadata-before-commit"):
        failover.finalizer.finalize(1, 0.0, final=False)
    failover.restore_latest()
    assert sorted(p.name for p in out.iterdir()) == ["part-0", "part-1"]
    assert failover.ctx.injector.take("mid-commit", 1), "still planned for checkpoint 1's commit"


def test_a_restore_first_releases_the_subtasks_of_the_failed_run(tmp_path):
    failover = failover_for(tmp_path)
    job_id = failover.ctx.settings.job_id
    failover.recover(failover.restore_latest, RuntimeError("task lost"))
    failover.recover(failover.restore_latest, RuntimeError("task lost again"))
    assert failover.release_run == [f"{job_id}#0", f"{job_id}#1"]
    assert failover.generation == 2
