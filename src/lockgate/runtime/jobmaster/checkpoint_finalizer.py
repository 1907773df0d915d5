"""Checkpoint finalization and commit: a fully acknowledged epoch becomes a checkpoint.

In Flink's order: ``_metadata`` is written (last, atomically: from then on the checkpoint
exists and its epochs never run again), the state files it names are registered,
checkpoints beyond the retained count are subsumed (releasing the files only they named:
the new checkpoint holds what a restore needs, its commits included), held collect results
go out, sinks commit the checkpoint's committables, and sources hear of it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from lockgate.checkpoint.coordinator import CompletedCheckpoint
from lockgate.core.two_phase_commit import Committer, TaskCommitter
from lockgate.runtime.errors import InjectedStorageFailure, JobExecutionError
from lockgate.runtime.jobmaster.job_context import JobContext

log = logging.getLogger(__name__)


#: runs a task committer's groups of committables in Spark tasks, one task per group
TaskCommits = Callable[[TaskCommitter, list[list[Any]]], None]


class CheckpointFinalizer:
    def __init__(self, ctx: JobContext, commit_in_tasks: TaskCommits):
        self.ctx = ctx
        self.commit_in_tasks = commit_in_tasks
        self.written_since_checkpoint = 0  # state bytes, for the checkpoint's statistics

    def epoch_wrote(self, state_bytes: int) -> None:
        self.written_since_checkpoint += state_bytes

    def finalize(self, epoch: int, started: float, final: bool) -> int | None:
        """Complete a checkpoint at the end of ``epoch``; its id, or None if it failed.

        A failed checkpoint is tolerated as configured, except the ``final`` one taken after
        the end of input: the job may finish only once it has committed all output, so its
        failure is a failover (as in Flink), whatever the tolerance; and except in a job
        whose sinks' staged output holds locks, which the next epochs would wait on.
        """
        try:
            checkpoint = self.ctx.coordinator.complete(
                epoch,
                self.ctx.state.checkpoint_operators(),
                started,
                self.written_since_checkpoint,
                self._before_metadata_write,
            )
        except OSError as exc:
            reason = f"checkpoint of epoch {epoch} failed: {exc}"
            intolerable = self.ctx.coordinator.failed(epoch, reason, started)
            if final:
                raise JobExecutionError(
                    f"{reason}; the final checkpoint, which commits the output of the last "
                    "epochs, is never skipped"
                ) from exc
            if intolerable:
                raise JobExecutionError(reason) from exc
            locking = [c for c in self.ctx.staged.committers if c.locks_until_committed]
            if locking:
                raise JobExecutionError(
                    f"{reason}; the job has sinks whose prepared transactions hold their rows' "
                    "locks until a checkpoint commits them, so it fails over rather than "
                    "tolerate the failed checkpoint"
                ) from exc
            log.warning("%s", reason)
            return None
        self.ctx.shared_state.hold(("checkpoint", checkpoint.id), checkpoint.files())
        for dropped in self.ctx.coordinator.subsume():
            self.ctx.shared_state.release(("checkpoint", dropped.id))
        self.written_since_checkpoint = 0
        self.ctx.results.release()
        self.ctx.injector.strike("after-metadata-before-commit", checkpoint.id)
        self.commit(checkpoint)
        self.ctx.state.notify_sources(checkpoint.metadata)
        self.ctx.state.committed_epoch = epoch
        where = checkpoint.path or "the driver's memory"
        log.debug("checkpoint %d of epoch %d completed in %s", checkpoint.id, epoch, where)
        return checkpoint.id

    def commit(self, checkpoint: CompletedCheckpoint, again: bool = False) -> None:
        """Commit every sink's committables of ``checkpoint``. Committers are idempotent: a
        restore commits its checkpoint ``again``, whatever the failure left half done (the
        ``mid-commit`` injection belongs to the first commit, not to that one, and strikes
        after its first commit). A task committer's committables are committed in Spark
        tasks, a job per committer, in groups of one task each; a driver committer's, by
        group (``Committer.groups``)."""
        by_committer: dict[int, tuple[Committer, list[Any]]] = {}
        for committer, committable in self.ctx.state.committables(checkpoint.metadata):
            by_committer.setdefault(id(committer), (committer, []))[1].append(committable)
        units = [  # what commits as one: a committable, a Delta commit, a task's group
            (committer, group)
            for committer, committables in by_committer.values()
            for group in committer.groups(committables)
        ]
        injector = self.ctx.injector
        if not again and len(units) > 1 and injector.planned("mid-commit", checkpoint.id):
            self._commit(units[:1])
            injector.strike("mid-commit", checkpoint.id)
            units = units[1:]
        self._commit(units)

    def _commit(self, units: list[tuple[Committer, list[Any]]]) -> None:
        in_tasks: dict[int, tuple[TaskCommitter, list[list[Any]]]] = {}
        for committer, group in units:
            if isinstance(committer, TaskCommitter):
                in_tasks.setdefault(id(committer), (committer, []))[1].append(group)
            else:
                committer.commit_group(group)
        for committer, groups in in_tasks.values():
            self.commit_in_tasks(committer, groups)

    def _before_metadata_write(self, checkpoint_id: int) -> None:
        self.ctx.injector.strike("metadata-write", checkpoint_id, InjectedStorageFailure)
