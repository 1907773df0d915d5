"""Failover: after a failure, the restart strategy decides; then the job goes back to the
latest completed checkpoint (or to the checkpoint it resumed from, or to its start).

A restore starts a new *generation*: subtasks that Python workers still hold from before
are stale and rebuild from the restored state. What tasks staged after the checkpoint is
aborted by recorded name, and the checkpoint's committables are committed again (commits
are idempotent; the failure may have struck in the middle of them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from lockgate.checkpoint.coordinator import (
    CompletedCheckpoint,
    load_checkpoint,
)
from lockgate.checkpoint.metadata import CheckpointFormatError
from lockgate.checkpoint.savepoint import is_checkpoint_path, load_snapshot
from lockgate.common.records import RecordFormatError
from lockgate.core.fs.storage import Storage
from lockgate.runtime.errors import InjectedFailure, JobExecutionError
from lockgate.runtime.jobmaster.checkpoint_finalizer import CheckpointFinalizer
from lockgate.runtime.jobmaster.job_context import JobContext
from lockgate.runtime.jobmaster.job_state import JobState, adopt_max_parallelism
from lockgate.runtime.jobmaster.job_summary import JobFailure
from lockgate.runtime.jobmaster.restart import now_ms
from lockgate.runtime.jobmaster.staged_files import StagedFilesRegistry
from lockgate.runtime.messages.task_deployment import run_id

log = logging.getLogger(__name__)

# Failures the restart strategy handles: failed epochs, storage errors, damaged checkpoints
# and control records, injected failures. Any other exception on the driver is a bug of
# lockgate's, and fails the job at once with its traceback.
RECOVERABLE = (
    JobExecutionError,
    CheckpointFormatError,
    RecordFormatError,
    OSError,
    InjectedFailure,
)


class Failover:
    def __init__(
        self, ctx: JobContext, finalizer: CheckpointFinalizer, release_run: Callable[[str], None]
    ):
        self.ctx = ctx
        self.finalizer = finalizer
        self.release_run = release_run  # ends a run's subtasks where they live
        self.generation = 0  # bumped by every restore
        self.resumed_from: CompletedCheckpoint | None = None  # execution.state-recovery.path
        self.restarting = False  # between a failure and the end of its restore

    def resume(self, path: str) -> None:
        """Start from the checkpoint or savepoint at ``path`` (another job's). One that
        cannot be read or does not fit the job fails the job at once; a failing restore
        retries."""
        try:
            checkpoint, skipped = load_snapshot(path, self.ctx.settings.signing_key)
            adopt_max_parallelism(self.ctx.job, checkpoint.metadata, checkpoint.path or path)
            JobState(self.ctx.job, self.ctx.state.backend).restore(
                checkpoint.metadata, checkpoint.path or path, self.ctx.settings.ignore_unclaimed
            )
        except (CheckpointFormatError, OSError) as exc:
            raise JobExecutionError(f"cannot restore the job: {exc}") from exc
        for reason in skipped:
            log.warning("skipping checkpoint: %s", reason)
        log.info("job %s resumes from %s", self.ctx.settings.job_id, checkpoint.path)
        self.resumed_from = checkpoint
        self.recover(lambda: self.restore(checkpoint, foreign=True))

    def recover(self, restore: Callable[[], None], failure: BaseException | None = None) -> None:
        """Ask the restart strategy, then restore; a failed restore is a failure too."""
        self.restarting = failure is not None
        try:
            self._recover(restore, failure)
        finally:
            self.restarting = False

    def _recover(self, restore: Callable[[], None], failure: BaseException | None) -> None:
        restart = self.ctx.settings.restart
        while True:
            if failure is not None:
                delay = restart.next_delay_ms(now_ms())
                if delay is None:
                    message = str(failure)
                    if restart.name != "none":
                        message += f" (restart strategy {restart.name}: no restarts left)"
                    raise JobExecutionError(message) from failure
                self.ctx.summary.restarts += 1
                self.ctx.summary.failures.append(JobFailure.of(failure))
                log.warning(
                    "job %s failed (%s); restarting in %.0f ms",
                    self.ctx.settings.job_id,
                    failure,
                    delay,
                )
                if self.ctx.cancelled.wait(delay / 1000):
                    return
            try:
                restore()
                return
            except RECOVERABLE as exc:
                failure = exc

    def restore_latest(self) -> None:
        """Back to the latest completed checkpoint, read again from storage."""
        latest = self.ctx.coordinator.latest
        if latest is not None and latest.path is not None:
            latest, skipped = load_checkpoint(latest.path, self.ctx.settings.signing_key)
            for reason in skipped:
                log.warning("skipping checkpoint: %s", reason)
        if latest is None and self.resumed_from is not None:
            self.restore(self.resumed_from, foreign=True)
            return
        self.restore(latest, foreign=False)

    def restore(self, checkpoint: CompletedCheckpoint | None, foreign: bool) -> None:
        """Back to ``checkpoint`` (None: the start of the job); ``foreign``: another job's.

        The subtasks of the failed run are closed first, as Flink cancels a failed job's
        tasks before it restarts them."""
        self.release_run(run_id(self.ctx.settings.job_id, self.generation))
        self.generation += 1
        self.ctx.results.drop_held()
        self.ctx.injector.strike("during-restore", self.generation)
        if checkpoint is None:
            self.ctx.state.reset()
        else:
            path = checkpoint.path or "in memory"
            self.ctx.state.restore(
                checkpoint.metadata, path, self.ctx.settings.ignore_unclaimed, foreign
            )
            self.finalizer.commit(checkpoint, again=True)
            if foreign and checkpoint.path is not None and is_checkpoint_path(checkpoint.path):
                # What the other run staged after this checkpoint; its records stay (its
                # directory is not ours).
                old_root = Storage(checkpoint.path.rstrip("/").rpartition("/")[0])
                old_staging = StagedFilesRegistry(
                    old_root.child("staging"), self.ctx.staged.committers
                )
                self.abort_staged(old_staging, checkpoint, forget=False)
        self.abort_staged(self.ctx.staged, checkpoint)
        self.ctx.shared_state.hold_live(self.ctx.state.subtask_files())
        self.ctx.shared_state.sweep()

    def abort_earlier_runs(self) -> None:
        """What killed earlier runs of this job (the Dispatcher's restarts of it) staged
        and never committed: the files their staging records name, beside this run's (each
        run's records are under its own id), and what their sinks left in the systems they
        write to (open transactions block readers), except the committables of the
        checkpoint this run resumes from."""
        earlier = self.ctx.settings.earlier_runs
        if not earlier:
            return
        keep = self._committed(self.resumed_from)
        staging = self.ctx.staged.storage.url  # <root>/<job id>/staging
        root = Storage(staging.rsplit("/", 2)[0])
        for run in earlier:
            if root.exists(f"{run}/staging"):
                registry = StagedFilesRegistry(
                    root.child(f"{run}/staging"), self.ctx.staged.committers
                )
                registry.abort_all(keep)  # the records too: no run of the job reads them again
        for committer in self.ctx.staged.committers:
            committer.abort_lingering(set(earlier), keep)

    def _committed(self, checkpoint: CompletedCheckpoint | None) -> set[str]:
        """The staged files of ``checkpoint``'s committables."""
        if checkpoint is None:
            return set()
        return {
            url
            for committer, committable in self.ctx.state.committables(checkpoint.metadata)
            for url in committer.staged_files(committable)
        }

    def abort_staged(
        self,
        registry: StagedFilesRegistry,
        checkpoint: CompletedCheckpoint | None,
        forget: bool = True,
    ) -> None:
        """Delete what tasks staged that will never be committed: everything but the staged
        files of the committables of ``checkpoint``, the one the job stands on (committed
        already, unless that commit failed and a resume must do it again). With the job's
        own records (``forget``), sinks also abort what they find lingering in the systems they
        write to, of this job and of the one the checkpoint was taken by (whose staging
        records are not read when it was resumed from a savepoint)."""
        keep = self._committed(checkpoint)
        registry.abort_all(keep, forget)
        if forget:
            job_ids = {self.ctx.settings.job_id}
            if checkpoint is not None:
                job_ids.add(checkpoint.metadata.job_id)
            for committer in registry.committers:
                committer.abort_lingering(job_ids, keep)
