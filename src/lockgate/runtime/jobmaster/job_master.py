"""The JobMaster on the Spark driver: runs epochs, checkpoints them, and recovers.

It never touches records. Per epoch it asks the source enumerators for every split's
input, runs one Spark job, reads every subtask's acknowledgement and moves the job's
state forward. When a checkpoint is due, the epoch's end becomes one: metadata, then sink
commits, then retention. A failure goes to the restart strategy, which restores the
latest completed checkpoint (or the start of the job) and carries on.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark import cloudpickle
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from lockgate.checkpoint.coordinator import (
    CheckpointCoordinator,
    CheckpointSettings,
    CheckpointStats,
    CompletedCheckpoint,
    load_checkpoint,
)

__all__ = ["CheckpointStats", "EpochResult", "EpochStats", "JobMaster", "JobSummary"]
from lockgate.checkpoint.metadata import CheckpointFormatError
from lockgate.checkpoint.shared_state_registry import SharedStateRegistry
from lockgate.checkpoint.staged_files import StagedFilesRegistry
from lockgate.checkpoint.storage import Storage
from lockgate.common.records import RecordFormatError
from lockgate.runtime.acknowledgement import SubtaskAck
from lockgate.runtime.errors import InjectedFailure, InjectedStorageFailure, JobExecutionError
from lockgate.runtime.jobmaster.ack_collector import AckCollector
from lockgate.runtime.jobmaster.epoch_cap import EpochCap
from lockgate.runtime.jobmaster.epoch_job import EpochJob, EpochTimeout, reports_attempt
from lockgate.runtime.jobmaster.job_settings import JobSettings
from lockgate.runtime.jobmaster.job_state import JobState
from lockgate.runtime.jobmaster.progress import EpochProgress
from lockgate.runtime.jobmaster.restart import now_ms
from lockgate.runtime.jobmaster.spark_errors import job_failure
from lockgate.runtime.jobmaster.spark_session import check_session
from lockgate.runtime.task_deployment import TaskDeploymentDescriptor
from lockgate.runtime.taskexecutor.epoch_task import EpochTask
from lockgate.state import manifests

log = logging.getLogger("lockgate")

# What the Spark job of an epoch raises when a task failed past Spark's own retries or the
# job was cancelled; a driver-side error of lockgate is none of these.
SPARK_JOB_FAILURES = (Py4JJavaError, PySparkException)
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


@dataclass
class EpochStats:
    epoch: int
    records: int
    duration_ms: float
    state_bytes: int
    state_entries: int
    restored_subtasks: int
    checkpoint_id: int | None = None


@dataclass
class EpochResult:
    stats: EpochStats | None  # None: results released late, after a failure
    collected: list[Any]


@dataclass
class JobSummary:
    job_id: str
    job_name: str
    epochs: deque[EpochStats]  # the most recent ones
    checkpoints: list[CheckpointStats] = field(default_factory=list)
    restarts: int = 0
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None


class JobMaster:
    def __init__(self, session: SparkSession, job: Any, settings: JobSettings):
        self.sc = session.sparkContext
        check_session(self.sc.getConf())
        self.job = job
        self.settings = settings
        self.summary = JobSummary(
            settings.job_id, settings.job_name, deque(maxlen=settings.epoch_history)
        )
        self.work = Storage(settings.work_dir)
        self.epoch_cap = EpochCap(settings.max_records_per_split)
        self.progress = EpochProgress(settings.job_name) if settings.progress else None
        job_root = Storage(settings.checkpoint_dir) if settings.checkpoint_dir else None
        self.state_files = job_root.child("shared") if job_root else self.work.child("state")
        self.shared_state = SharedStateRegistry(self.state_files)
        self.staged = StagedFilesRegistry((job_root or self.work).child("staging"))
        # (epoch, vertex, subtask) -> accepted attempt, until its epoch is settled
        self.accepted: dict[tuple[int, int, int], str] = {}
        self.coordinator = CheckpointCoordinator(
            settings.checkpoint, self.job_id, job_root, history_size=settings.checkpoint_history
        )
        self.restart = settings.restart
        self.injections = set(settings.injections)
        self.keyed_state = settings.keyed_state
        self.state = JobState(job, self.keyed_state.backend)
        self.generation = 0  # bumped by every restore: worker-held subtasks become stale
        self.tries = 0
        self.recovered_from: CompletedCheckpoint | None = None
        self.rewrite_all = False  # the next epoch copies all restored state into this job
        self.written_since_checkpoint = 0
        # Collected records: held until their checkpoint exists (exactly-once), then released
        self.held_results: list[Any] = []
        self.released_results: list[Any] = []
        self._cancelled = threading.Event()
        if job_root is not None:
            job_root.write_bytes("taskowned/.keep", b"")

    @property
    def job_id(self) -> str:
        return self.summary.job_id

    @property
    def checkpointing(self) -> CheckpointSettings:
        return self.coordinator.settings

    @property
    def commits_on_checkpoint(self) -> bool:
        """Sinks publish when a checkpoint completes (exactly-once), not per epoch."""
        return self.checkpointing.enabled and self.checkpointing.exactly_once

    def cancel(self) -> None:
        """Stop after the running epoch; safe to call from any thread."""
        self._cancelled.set()

    # The loop ------------------------------------------------------------------------------

    def run(self) -> Generator[EpochResult, None, None]:
        """Run epochs until bounded sources are exhausted or the job is cancelled."""
        graph = self.sc.broadcast(cloudpickle.dumps(self.job))  # type: ignore[no-untyped-call]
        spark_job = EpochJob(self.sc, self.job)
        status = "FAILED"
        try:
            if self.settings.recovery_path is not None:
                recovered = self._load_recovery_checkpoint(self.settings.recovery_path)
                self.recovered_from = recovered
                self._recover(lambda: self._restore(recovered, foreign=True))
            while not self._cancelled.is_set():
                try:
                    result = self._next_epoch(spark_job, graph)
                except RECOVERABLE as failure:  # anything else is a bug: the job fails at once
                    self._recover(self._restore_latest, failure)
                    if self.released_results:  # checkpointed before the failure struck
                        yield EpochResult(None, self._take_released())
                    continue
                if result is None:
                    continue
                yield result
                if self._finished:
                    status = "FINISHED"
                    return
            status = "CANCELED"
        except GeneratorExit:
            status = "CANCELED"
            raise
        finally:
            self.summary.finished = time.monotonic()
            self.summary.checkpoints = list(self.coordinator.history)
            graph.destroy()
            self._abort_staged(self.staged, self.coordinator.latest or self.recovered_from)
            if self.coordinator.shutdown(status):  # only the retained checkpoints' files stay
                for subtask in self.state.subtask_files():
                    self.shared_state.release(("live", *subtask))
                self.shared_state.sweep()
            self.work.remove("")
            self._remove_local_dirs()

    def _abort_staged(
        self,
        registry: StagedFilesRegistry,
        checkpoint: CompletedCheckpoint | None,
        forget: bool = True,
    ) -> None:
        """Delete what tasks staged that will never be committed: everything but the staged
        files of the committables of ``checkpoint``, the one the job stands on (committed
        already, unless that commit failed and a resume must do it again)."""
        keep = (
            {
                url
                for committer, committable in self.state.committables(checkpoint.metadata)
                for url in committer.staged_files(committable)
            }
            if checkpoint is not None
            else set()
        )
        registry.abort_all(keep, forget)

    def _recover(self, restore: Callable[[], None], failure: BaseException | None = None) -> None:
        """Ask the restart strategy, then restore; a failed restore is a failure too."""
        while True:
            if failure is not None:
                delay = self.restart.next_delay_ms(now_ms())
                if delay is None:
                    message = str(failure)
                    if self.restart.name != "none":
                        message += f" (restart strategy {self.restart.name}: no restarts left)"
                    raise JobExecutionError(message) from failure
                self.summary.restarts += 1
                log.warning(
                    "job %s failed (%s); restarting in %.0f ms", self.job_id, failure, delay
                )
                if self._cancelled.wait(delay / 1000):
                    return
            try:
                restore()
                return
            except RECOVERABLE as exc:
                failure = exc

    def _inject(self, point: str, number: int, failure: type[Exception] = InjectedFailure) -> None:
        if (point, number) in self.injections:
            self.injections.discard((point, number))  # once
            raise failure(f"injected failure at {point} ({number})")

    def _inject_metadata_write(self, checkpoint_id: int) -> None:
        self._inject("metadata-write", checkpoint_id, InjectedStorageFailure)

    # One epoch -----------------------------------------------------------------------------

    _finished = False

    def _next_epoch(self, spark_job: EpochJob, graph: Any) -> EpochResult | None:
        state = self.state
        plans = {vid: e.plan(self.epoch_cap.value) for vid, e in state.enumerators.items()}
        has_input = any(plans.values())
        finished = all(e.is_finished() for e in state.enumerators.values())
        if not has_input and not finished and not self._idle_checkpoint_due():
            self._cancelled.wait(
                self.settings.idle_poll_s
            )  # continuous sources with nothing new yet
            return None
        end_of_input = all(e.is_finished() or e.will_finish() for e in state.enumerators.values())
        epoch = state.epoch + 1
        checkpoint_due = self.coordinator.due(end_of_input)
        if checkpoint_due:
            self.coordinator.triggered()
        started = time.perf_counter()
        self.tries += 1
        tag = f"g{self.generation}t{self.tries}"
        ack_dir = f"epochs/{epoch}-{tag}"
        inject_ack = ("after-snapshot-before-ack", epoch) in self.injections
        run = f"{self.job_id}#{self.generation}"
        tasks = {
            vertex.id: EpochTask(
                TaskDeploymentDescriptor(
                    vertex=vertex.id,
                    source=vertex.is_source,
                    run=run,
                    epoch=epoch,
                    end_of_input=end_of_input,
                    tag=f"e{epoch}-{tag}",
                    checkpoint=checkpoint_due,
                    ack_dir=ack_dir,
                    committed_epoch=state.committed_epoch,
                    commit_on_checkpoint=self.commits_on_checkpoint,
                    reports_attempt=reports_attempt(vertex),
                    inject_failure=inject_ack,
                    work_url=self.work.url,
                    state_url=self.state_files.url,
                    staging_url=self.staged.storage.url,
                    keyed_state=self.keyed_state,
                    batch_bounds=self.settings.batch_bounds,
                ),
                graph,
            )
            for vertex in self.job.vertices
        }
        restores = {
            vertex.id: [
                restore.encode()
                for restore in state.restore_for(vertex, run, claimed=not self.rewrite_all)
            ]
            for vertex in self.job.vertices
        }
        self.injections.discard(("after-snapshot-before-ack", epoch))
        timeout = self.checkpointing.timeout_ms / 1000 if self.checkpointing.enabled else None
        try:
            output = spark_job.run(
                tasks,
                plans,
                state.enumerators,
                restores,
                f"lockgate {self.summary.job_name} epoch {epoch}",
                timeout,
            )
        except EpochTimeout:
            smaller = self.epoch_cap.shrink()
            reason = f"epoch {epoch} exceeded the checkpoint timeout of {timeout:.0f} s"
            if self.coordinator.failed(epoch, reason, started):
                raise JobExecutionError(
                    f"{reason}; more than {self.checkpointing.tolerable_failures} checkpoint "
                    "failures in a row"
                ) from None
            log.warning("%s; running it again with at most %d records per split", reason, smaller)
            return None
        except SPARK_JOB_FAILURES as exc:  # a task failed past Spark's retries, or Spark did
            raise job_failure(exc, epoch) from exc
        self.epoch_cap.epoch_took(time.perf_counter() - started, timeout)
        acks = self._accepted_acks(epoch, ack_dir, output.attempts)
        state.apply_acks(epoch, acks)
        self.accepted.update({(epoch, ack.vertex, ack.subtask): ack.attempt for ack in acks})
        self.rewrite_all = False
        self.work.remove(ack_dir)
        written = sum(ack.state.bytes_written for ack in acks if ack.state)
        self.written_since_checkpoint += written
        self._hold_live_state()
        self.held_results.extend(output.collected)
        if not self.commits_on_checkpoint:
            self._release_results()
        checkpoint_id = self._checkpoint(epoch, started, end_of_input) if checkpoint_due else None
        settled = state.committed_epoch if self.commits_on_checkpoint else epoch
        self.staged.sweep(self.accepted, settled, epoch)
        stats = EpochStats(
            epoch,
            sum(a.records_in for a in acks if a.vertex in state.enumerators),
            (time.perf_counter() - started) * 1000,
            state.state_bytes(),
            sum(a.state.entries for a in acks if a.state),
            sum(a.restored for a in acks),
            checkpoint_id,
        )
        self.summary.epochs.append(stats)
        if self.progress is not None:
            self.progress.report(stats)
        self._finished = end_of_input
        return EpochResult(stats, self._take_released())

    def _idle_checkpoint_due(self) -> bool:
        """A checkpoint is due on the clock, input or not: an empty epoch then commits what
        the epochs since the last checkpoint staged (sink files, collected results)."""
        return (
            self.checkpointing.enabled
            and self.state.epoch > self.state.committed_epoch
            and self.coordinator.due(False)
        )

    def _release_results(self) -> None:
        self.released_results.extend(self.held_results)
        self.held_results = []

    def _take_released(self) -> list[Any]:
        released, self.released_results = self.released_results, []
        return released

    def _accepted_acks(
        self, epoch: int, ack_dir: str, result_attempts: dict[tuple[int, int], set[str]]
    ) -> list[SubtaskAck]:
        collector = AckCollector(self.job, self.work, self.state_files, ack_dir, epoch)
        acks = collector.accepted(f"{self.job_id}#{self.generation}", result_attempts)
        collector.discard_losers(self.shared_state.referenced)
        return acks

    # Checkpoints ---------------------------------------------------------------------------

    def _checkpoint(self, epoch: int, started: float, final: bool) -> int | None:
        """Complete a checkpoint at the end of ``epoch``: metadata, commits, retention.

        A failed checkpoint is tolerated as configured, except the ``final`` one taken after
        the end of input: the job may finish only once it has committed all output, so its
        failure is a failover (as in Flink), whatever the tolerance.
        """
        operators = self.state.checkpoint_operators()
        try:
            checkpoint = self.coordinator.complete(
                epoch,
                operators,
                started,
                self.written_since_checkpoint,
                self._inject_metadata_write,
            )
        except OSError as exc:
            reason = f"checkpoint of epoch {epoch} failed: {exc}"
            intolerable = self.coordinator.failed(epoch, reason, started)
            if final:
                raise JobExecutionError(
                    f"{reason}; the final checkpoint, which commits the output of the last "
                    "epochs, is never skipped"
                ) from exc
            if intolerable:
                raise JobExecutionError(reason) from exc
            log.warning("%s", reason)
            return None
        self.shared_state.hold(("checkpoint", checkpoint.id), checkpoint.files())
        self.written_since_checkpoint = 0
        self._release_results()  # the checkpoint exists: its epochs will never run again
        self._inject("after-metadata-before-commit", checkpoint.id)
        self._commit(checkpoint)
        self.state.committed_epoch = epoch
        for dropped in self.coordinator.subsume():
            self.shared_state.release(("checkpoint", dropped.id))
        return checkpoint.id

    def _commit(self, checkpoint: CompletedCheckpoint) -> None:
        for number, (committer, committable) in enumerate(
            self.state.committables(checkpoint.metadata)
        ):
            if number == 1:
                self._inject("mid-commit", checkpoint.id)
            committer.commit(committable)

    def _hold_live_state(self) -> None:
        """Each keyed subtask's live state holds the files its manifest names."""
        for subtask, urls in self.state.subtask_files().items():
            self.shared_state.hold(("live", *subtask), urls)

    # RocksDB local directories -------------------------------------------------------------

    def _remove_local_dirs(self) -> None:
        """In local mode the executors' disk is this machine's: remove the job's instances."""
        if self.keyed_state.backend != manifests.ROCKSDB or not self.settings.local_spark:
            return
        for directory in self.keyed_state.job_local_dirs():
            shutil.rmtree(directory, ignore_errors=True)

    # Restores ------------------------------------------------------------------------------

    def _restore(self, checkpoint: CompletedCheckpoint | None, foreign: bool) -> None:
        self.generation += 1
        self.held_results = []
        self._inject("during-restore", self.generation)
        if checkpoint is None:
            self.state.reset()
        else:
            path = checkpoint.path or "in memory"
            self.state.restore(checkpoint.metadata, path, self.settings.ignore_unclaimed)
            for committer, committable in self.state.committables(checkpoint.metadata):
                committer.commit(committable)  # idempotent: some were committed before
            self.rewrite_all = foreign
            if foreign and checkpoint.path is not None:
                # What the other run staged after this checkpoint; its records stay (its
                # directory is not ours).
                old_root = Storage(checkpoint.path.rstrip("/").rpartition("/")[0])
                old_staging = StagedFilesRegistry(old_root.child("staging"))
                self._abort_staged(old_staging, checkpoint, forget=False)
        self._abort_staged(self.staged, checkpoint)
        self.accepted.clear()
        self._hold_live_state()
        self.shared_state.sweep()

    def _load_recovery_checkpoint(self, recovery_path: str) -> CompletedCheckpoint:
        """The checkpoint named by ``execution.state-recovery.path``; a bad one fails the job."""
        try:
            checkpoint, skipped = load_checkpoint(recovery_path)
            JobState(self.job, self.keyed_state.backend).restore(
                checkpoint.metadata,
                checkpoint.path or recovery_path,
                self.settings.ignore_unclaimed,
            )
        except (CheckpointFormatError, OSError) as exc:
            raise JobExecutionError(f"cannot restore the job: {exc}") from exc
        for reason in skipped:
            log.warning("skipping checkpoint: %s", reason)
        log.warning("job %s resumes from %s", self.job_id, checkpoint.path)
        return checkpoint

    def _restore_latest(self) -> None:
        latest = self.coordinator.latest
        if latest is not None and latest.path is not None:
            latest, skipped = load_checkpoint(latest.path)
            for reason in skipped:
                log.warning("skipping checkpoint: %s", reason)
        if latest is None and self.recovered_from is not None:
            self._restore(self.recovered_from, foreign=True)
            return
        self._restore(latest, foreign=False)
