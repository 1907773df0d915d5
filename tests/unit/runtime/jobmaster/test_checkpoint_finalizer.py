"""CheckpointFinalizer: metadata, then registered files and released results, then the
commit, then retention; a failed final checkpoint is never tolerated."""

from __future__ import annotations

import pytest
from driver_parts import Checkpointing

from lockgate.connectors.file.committer import FileCommitter
from lockgate.runtime.errors import InjectedFailure, JobExecutionError

CHECKPOINTS = {
    "execution.checkpointing.tolerable-failed-checkpoints": "1",
    "execution.checkpointing.num-retained": "1",
}


def finalizer_for(tmp_path, injections=()):
    parts = Checkpointing.build(tmp_path, injections, **CHECKPOINTS)
    return parts.finalizer, parts.job_root


def test_a_checkpoint_releases_results_and_subsumes_the_one_before(tmp_path):
    finalizer, job_root = finalizer_for(tmp_path)
    finalizer.ctx.results.hold(["a"])
    finalizer.epoch_wrote(100)
    assert finalizer.finalize(1, 0.0, final=False) == 1
    assert finalizer.ctx.results.take() == ["a"]
    assert finalizer.ctx.state.committed_epoch == 1
    assert finalizer.ctx.coordinator.history[-1].written_bytes == 100
    assert finalizer.written_since_checkpoint == 0
    assert finalizer.finalize(2, 0.0, final=False) == 2
    assert not job_root.exists("chk-1") and job_root.exists("chk-2/_metadata")
    assert [c.id for c in finalizer.ctx.coordinator.retained] == [2]


def test_a_failed_metadata_write_is_tolerated_but_not_for_the_final_checkpoint(tmp_path):
    finalizer, job_root = finalizer_for(tmp_path, [("metadata-write", 1), ("metadata-write", 2)])
    finalizer.ctx.results.hold(["a"])
    assert finalizer.finalize(1, 0.0, final=False) is None  # tolerated: 1 failure allowed
    assert finalizer.ctx.results.take() == [], "results wait for a checkpoint that exists"
    assert not job_root.exists("chk-1")
    with pytest.raises(JobExecutionError, match=r"final checkpoint.*never skipped"):
        finalizer.finalize(2, 0.0, final=True)
    assert finalizer.ctx.state.committed_epoch == 0


def test_results_go_out_once_the_metadata_exists_even_if_the_commit_fails(tmp_path):
    """The checkpoint exists: its epochs never run again, so their results are final."""
    finalizer, job_root = finalizer_for(tmp_path, [("after-metadata-before-commit", 1)])
    finalizer.ctx.results.hold(["a"])
    with pytest.raises(InjectedFailure):
        finalizer.finalize(1, 0.0, final=False)
    assert job_root.exists("chk-1/_metadata")
    assert finalizer.ctx.results.take() == ["a"]
    assert finalizer.ctx.state.committed_epoch == 0  # the restore commits it


def test_a_failed_checkpoint_is_not_tolerated_when_a_sink_holds_locks_until_commits(tmp_path):
    """Prepared transactions keep their rows' locks until a checkpoint commits them: epochs
    after a failed checkpoint would wait on them, so the job fails over instead."""
    finalizer, _ = finalizer_for(tmp_path, [("metadata-write", 1)])

    class Locking(FileCommitter):
        locks_until_committed = True

    finalizer.ctx.staged.committers.append(Locking(str(tmp_path / "out")))
    with pytest.raises(JobExecutionError, match="rather than tolerate the failed checkpoint"):
        finalizer.finalize(1, 0.0, final=False)
