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
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
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
from lockgate.checkpoint.staged_files import StagedFilesRegistry
from lockgate.checkpoint.storage import Storage, is_writable
from lockgate.common import config_options as options
from lockgate.common.records import RecordFormatError
from lockgate.runtime.acknowledgement import SubtaskAck
from lockgate.runtime.errors import InjectedFailure, InjectedStorageFailure, JobExecutionError
from lockgate.runtime.jobmaster.ack_collector import AckCollector
from lockgate.runtime.jobmaster.epoch_cap import EpochCap
from lockgate.runtime.jobmaster.epoch_job import EpochJob, EpochTimeout, reports_attempt
from lockgate.runtime.jobmaster.job_state import JobState
from lockgate.runtime.jobmaster.progress import EpochProgress
from lockgate.runtime.jobmaster.restart import now_ms, restart_strategy
from lockgate.runtime.jobmaster.spark_errors import job_failure
from lockgate.runtime.jobmaster.spark_session import check_session
from lockgate.runtime.keyed_state import KeyedStateSettings
from lockgate.runtime.taskexecutor.channels import BatchBounds
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

INJECTION_POINTS = (
    "after-snapshot-before-ack",
    "metadata-write",
    "after-metadata-before-commit",
    "mid-commit",
    "during-restore",
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


def _work_dir(config: dict[str, str], master: str) -> str:
    work_dir = options.WORK_DIR.read(config)
    if work_dir:
        return work_dir
    if not master.startswith("local"):
        raise options.ConfigurationError(
            f"configuration key '{options.WORK_DIR.key}' must be set when Spark runs on a "
            f"cluster (master {master}): allowed values are {options.WORK_DIR.allowed}"
        )
    return f"{tempfile.gettempdir()}/lockgate"


def _checkpoint_settings(config: dict[str, str]) -> CheckpointSettings:
    return CheckpointSettings(
        interval_ms=options.CHECKPOINT_INTERVAL.read(config),
        min_pause_ms=options.MIN_PAUSE.read(config),
        timeout_ms=options.CHECKPOINT_TIMEOUT.read(config),
        tolerable_failures=options.TOLERABLE_FAILURES.read(config),
        num_retained=options.NUM_RETAINED.read(config),
        retention=options.EXTERNALIZED_RETENTION.read(config),
        exactly_once=options.CHECKPOINTING_MODE.read(config) == "EXACTLY_ONCE",
    )


def _injections(config: dict[str, str]) -> set[tuple[str, int]]:
    spec = options.INJECT_FAILURE.read(config)
    injections = set()
    for item in filter(None, (part.strip() for part in spec.split(","))):
        point, _, number = item.partition("@")
        if point not in INJECTION_POINTS or not number.isdigit():
            raise options.ConfigurationError(
                f"invalid value {spec!r} for configuration key '{options.INJECT_FAILURE.key}': "
                f"allowed values are {options.INJECT_FAILURE.allowed}"
            )
        injections.add((point, int(number)))
    return injections


class JobMaster:
    def __init__(self, session: SparkSession, job: Any, config: dict[str, str], job_name: str):
        self.sc = session.sparkContext
        check_session(self.sc.getConf())
        self.job = job
        self.summary = JobSummary(
            uuid.uuid4().hex, job_name, deque(maxlen=options.EPOCH_HISTORY.read(config))
        )
        self.work = Storage(_work_dir(config, self.sc.master)).child(self.job_id)
        self.epoch_cap = EpochCap(options.EPOCH_MAX_RECORDS_PER_SPLIT.read(config))
        self.idle_poll_s = options.CONTINUOUS_IDLE_POLL.read(config) / 1000
        self.progress = EpochProgress(job_name) if options.PROGRESS.read(config) else None
        settings = _checkpoint_settings(config)
        directory = options.CHECKPOINT_DIR.read(config)
        kind = options.CHECKPOINT_STORAGE.read(config) or ("FILESYSTEM" if directory else "")
        if settings.enabled and kind == "FILESYSTEM" and not directory:
            raise options.ConfigurationError(
                f"checkpoint storage 'filesystem' needs '{options.CHECKPOINT_DIR.key}': "
                f"allowed values are {options.CHECKPOINT_DIR.allowed}"
            )
        job_root = (
            Storage(directory).child(self.job_id)
            if settings.enabled and kind == "FILESYSTEM"
            else None
        )
        self.state_files = job_root.child("shared") if job_root else self.work.child("state")
        self.staged = StagedFilesRegistry((job_root or self.work).child("staging"))
        # (epoch, vertex, subtask) -> accepted attempt, until its epoch is settled
        self.accepted: dict[tuple[int, int, int], str] = {}
        self.coordinator = CheckpointCoordinator(
            settings, self.job_id, job_root, history_size=options.CHECKPOINT_HISTORY.read(config)
        )
        self.restart = restart_strategy(config, settings.enabled)
        self.recovery_path = options.STATE_RECOVERY_PATH.read(config)
        self.ignore_unclaimed = options.IGNORE_UNCLAIMED_STATE.read(config)
        self.injections = _injections(config)
        self.keyed_state = KeyedStateSettings.from_config(config, self.job_id)
        self.batch_bounds = BatchBounds.from_config(config)
        self._check_local_dirs()
        self.state = JobState(job, self.keyed_state.backend)
        self.generation = 0  # bumped by every restore: worker-held subtasks become stale
        self.tries = 0
        self.recovered_from: CompletedCheckpoint | None = None
        self.rewrite_all = False  # the next epoch copies all restored state into this job
        self.written_files: set[str] = set()
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

    def run(self) -> Iterator[EpochResult]:
        """Run epochs until bounded sources are exhausted or the job is cancelled."""
        graph = self.sc.broadcast(cloudpickle.dumps(self.job))
        spark_job = EpochJob(self.sc, self.job)
        status = "FAILED"
        try:
            if self.recovery_path:
                self.recovered_from = self._load_recovery_checkpoint()
                self._recover(lambda: self._restore(self.recovered_from, foreign=True))
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
            if self.coordinator.shutdown(status):
                self.state.manifests = {}  # only the retained checkpoints' files stay
                self._sweep_state_files()
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

    def _recover(self, restore, failure: BaseException | None = None) -> None:
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
            self._cancelled.wait(self.idle_poll_s)  # continuous sources with nothing new yet
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
        tasks = {
            vertex.id: EpochTask(
                run_id=f"{self.job_id}#{self.generation}",
                epoch=epoch,
                end_of_input=end_of_input,
                vertex_id=vertex.id,
                graph=graph,
                work=self.work,
                state=self.state_files,
                staging=self.staged.storage,
                keyed_state=self.keyed_state,
                batch_bounds=self.batch_bounds,
                tag=f"e{epoch}-{tag}",
                checkpoint=checkpoint_due,
                ack_dir=ack_dir,
                committed_epoch=state.committed_epoch,
                commit_on_checkpoint=self.commits_on_checkpoint,
                restore=state.restore_for(vertex, self.rewrite_all),
                reports_attempt=reports_attempt(vertex),
                inject_failure=inject_ack,
            )
            for vertex in self.job.vertices
        }
        self.injections.discard(("after-snapshot-before-ack", epoch))
        timeout = self.checkpointing.timeout_ms / 1000 if self.checkpointing.enabled else None
        try:
            output = spark_job.run(
                tasks, plans, f"lockgate {self.summary.job_name} epoch {epoch}", timeout
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
        written = sum(ack.state["bytes_written"] for ack in acks if ack.state)
        self.written_since_checkpoint += written
        owned = self.state_files.relative_of  # only the job's own files are its to delete
        for ack in acks:
            if ack.state:
                self.written_files.update(u for u in manifests.files(ack.state) if owned(u))
        self.held_results.extend(output.collected)
        if not self.commits_on_checkpoint:
            self._release_results()
        checkpoint_id = self._checkpoint(epoch, started, end_of_input) if checkpoint_due else None
        self._drop_unreferenced()
        settled = state.committed_epoch if self.commits_on_checkpoint else epoch
        self.staged.sweep(self.accepted, settled, epoch)
        stats = EpochStats(
            epoch,
            sum(a.records_in for a in acks if a.vertex in state.enumerators),
            (time.perf_counter() - started) * 1000,
            state.state_bytes(),
            sum(a.state["entries"] for a in acks if a.state),
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
        collector.discard_losers(self._needed_files)
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
        self.written_since_checkpoint = 0
        self._release_results()  # the checkpoint exists: its epochs will never run again
        self._inject("after-metadata-before-commit", checkpoint.id)
        self._commit(checkpoint)
        self.state.committed_epoch = epoch
        self.coordinator.subsume()
        return checkpoint.id

    def _commit(self, checkpoint: CompletedCheckpoint) -> None:
        for number, (committer, committable) in enumerate(
            self.state.committables(checkpoint.metadata)
        ):
            if number == 1:
                self._inject("mid-commit", checkpoint.id)
            committer.commit(committable)

    def _needed_files(self) -> set[str]:
        return self.state.referenced_files() | self.coordinator.referenced_files()

    def _drop_unreferenced(self) -> None:
        """Delete state files of completed epochs that nothing needs any more."""
        needed = self._needed_files()
        for url in self.written_files - needed:
            self.state_files.discard(url)
        self.written_files &= needed

    def _sweep_state_files(self) -> None:
        """Delete every file in this job's state directory that nothing needs.

        Besides what ``_drop_unreferenced`` knows of, these are the files of subtasks whose
        epoch then failed: their acknowledgements never arrived.
        """
        needed = self._needed_files()
        files = self.state_files
        for path in files.fs.find(files.root) if files.fs.exists(files.root) else ():
            url = files.fs.unstrip_protocol(path)
            if url not in needed:
                files.fs.rm(path)
        self.written_files &= needed

    # RocksDB local directories -------------------------------------------------------------

    def _check_local_dirs(self) -> None:
        """Fail before the job starts if RocksDB cannot write where it was told to (with local
        Spark; on a cluster the executors' disks are not the driver's, and a task that cannot
        open its instance fails naming the path)."""
        if self.keyed_state.backend != manifests.ROCKSDB or not self.sc.master.startswith("local"):
            return
        for directory in self.keyed_state.local_dirs:
            if not is_writable(directory):
                raise options.ConfigurationError(
                    f"RocksDB local directory {directory} (configuration key "
                    f"'{options.ROCKSDB_LOCAL_DIR.key}') is not writable"
                )

    def _remove_local_dirs(self) -> None:
        """In local mode the executors' disk is this machine's: remove the job's instances."""
        if self.keyed_state.backend != manifests.ROCKSDB or not self.sc.master.startswith("local"):
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
            self.state.restore(checkpoint.metadata, path, self.ignore_unclaimed)
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
        self._sweep_state_files()

    def _load_recovery_checkpoint(self) -> CompletedCheckpoint:
        """The checkpoint named by ``execution.state-recovery.path``; a bad one fails the job."""
        try:
            checkpoint, skipped = load_checkpoint(self.recovery_path)
            JobState(self.job, self.keyed_state.backend).restore(
                checkpoint.metadata, checkpoint.path or self.recovery_path, self.ignore_unclaimed
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
