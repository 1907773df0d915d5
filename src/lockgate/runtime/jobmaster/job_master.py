"""The JobMaster on the Spark driver: runs epochs, checkpoints them, and recovers.

It never touches records. Per epoch, the ``EpochPlanner`` decides what the epoch reads and
hands each task its descriptor; one Spark job runs it (``EpochJob``); the ``AckCollector``
picks, per subtask, the attempt whose output the epoch used, and the job's state moves
forward on those acknowledgements. When the epoch ends with a checkpoint, the
``CheckpointFinalizer`` completes and commits it. A failure goes to ``Failover``.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections import deque
from collections.abc import Generator
from concurrent.futures import Future

from pyspark import Broadcast, cloudpickle
from pyspark.sql import SparkSession

from lockgate.checkpoint.coordinator import CheckpointCoordinator, CheckpointSettings
from lockgate.checkpoint.shared_state_registry import SharedStateRegistry
from lockgate.checkpoint.storage import Storage
from lockgate.common import config_options as options
from lockgate.common.clock import processing_time_ms
from lockgate.graph.job_graph import JobGraph
from lockgate.graph.shipped_graph import ship
from lockgate.runtime.errors import JobExecutionError
from lockgate.runtime.jobmaster import savepoints
from lockgate.runtime.jobmaster.ack_collector import AckCollector
from lockgate.runtime.jobmaster.checkpoint_finalizer import CheckpointFinalizer
from lockgate.runtime.jobmaster.collected_results import CollectedResults
from lockgate.runtime.jobmaster.epoch_cap import EpochCap
from lockgate.runtime.jobmaster.epoch_job import (
    SPARK_JOB_FAILURES,
    EpochJob,
    EpochTimeout,
    RunningEpoch,
    SourceStages,
    pipelines,
)
from lockgate.runtime.jobmaster.epoch_plan import EpochPlan
from lockgate.runtime.jobmaster.epoch_planner import EpochPlanner
from lockgate.runtime.jobmaster.failover import RECOVERABLE, Failover
from lockgate.runtime.jobmaster.failure_injector import FailureInjector
from lockgate.runtime.jobmaster.job_settings import JobSettings
from lockgate.runtime.jobmaster.job_state import JobState
from lockgate.runtime.jobmaster.job_summary import EpochResult, EpochStats, JobSummary
from lockgate.runtime.jobmaster.placement import SubtaskPlacement
from lockgate.runtime.jobmaster.progress import EpochProgress
from lockgate.runtime.jobmaster.run_ahead import RunAhead
from lockgate.runtime.jobmaster.savepoints import (
    PendingSavepoints,
    SavepointError,
    SavepointRequest,
)
from lockgate.runtime.jobmaster.spark_errors import job_failure
from lockgate.runtime.jobmaster.spark_session import check_session
from lockgate.runtime.jobmaster.staged_files import StagedFilesRegistry
from lockgate.runtime.jobmaster.storage_check import check_storage
from lockgate.runtime.messages.acknowledgement import SubtaskAck
from lockgate.runtime.messages.task_deployment import run_id
from lockgate.state import manifests

log = logging.getLogger("lockgate")


class JobMaster:
    def __init__(self, session: SparkSession, job: JobGraph, settings: JobSettings):
        self.sc = session.sparkContext
        check_session(self.sc.getConf())
        self.job = job
        self.settings = settings
        self.summary = JobSummary(
            settings.job_id, settings.job_name, deque(maxlen=settings.epoch_history)
        )
        self.work = Storage(settings.work_dir)
        self.epoch_cap = EpochCap(settings.max_records_per_split, settings.epoch_target_s)
        self.progress = EpochProgress(settings.job_name) if settings.progress else None
        job_root = Storage(settings.checkpoint_dir) if settings.checkpoint_dir else None
        self.job_root = job_root
        self.state_files = job_root.child("shared") if job_root else self.work.child("state")
        self.shared_state = SharedStateRegistry(self.state_files)
        self.staged = StagedFilesRegistry((job_root or self.work).child("staging"))
        self.coordinator = CheckpointCoordinator(
            settings.checkpoint, settings.job_id, job_root, history_size=settings.checkpoint_history
        )
        self.state = JobState(job, settings.keyed_state.backend)
        self.results = CollectedResults()
        self._cancelled = threading.Event()
        self.savepoints = PendingSavepoints()
        self._finished = False  # the sources are read to their end, or a stop's savepoint taken
        self._subtasks_closed = False  # they close themselves at the end of the input
        self.placement = SubtaskPlacement()
        self.spark_job = EpochJob(self.sc, job, self.placement)
        # by the graph's shape, and the sources' enumerators: a file's cannot plan ahead
        self.pipelined = pipelines(job) and all(
            e.ahead() is not None for e in self.state.enumerators.values()
        )
        self._ahead: RunAhead | None = None  # the next epoch's sources, started early
        injector = FailureInjector(settings.injections)
        self.planner = EpochPlanner(
            job,
            settings,
            self.coordinator,
            injector,
            self.work,
            self.state_files,
            self.staged.storage,
        )
        self.finalizer = CheckpointFinalizer(
            self.coordinator, self.state, self.shared_state, self.results, injector
        )
        self.failover = Failover(
            job,
            settings,
            self.state,
            self.coordinator,
            self.shared_state,
            self.staged,
            self.finalizer,
            self.results,
            injector,
            self.summary,
            self._cancelled,
            self.spark_job.release,
        )

    @property
    def finished(self) -> bool:
        """The job read its sources to their end (or stopped with a savepoint)."""
        return self._finished

    @property
    def checkpointing(self) -> CheckpointSettings:
        return self.settings.checkpoint

    def cancel(self) -> None:
        """Stop after the running epoch; safe to call from any thread."""
        self._cancelled.set()

    def trigger_savepoint(
        self, directory: str | None, stop: bool = False, drain: bool = False
    ) -> Future[str]:
        """A savepoint at the next epoch boundary, under ``directory`` or the configured
        savepoint directory; with ``stop`` the job ends with it (``drain``: after the end of
        event time). Safe to call from any thread; the future resolves to its path, or
        fails with a ``SavepointError``."""
        target = directory or self.settings.savepoint_dir
        if target is None:
            failed: Future[str] = Future()
            failed.set_exception(
                SavepointError(
                    f"no savepoint directory: pass one, set '{options.SAVEPOINT_DIR.key}', or "
                    "call env.set_default_savepoint_directory()"
                )
            )
            return failed
        return self.savepoints.add(SavepointRequest(target, stop, drain))

    # The loop ------------------------------------------------------------------------------

    def run(self) -> Generator[EpochResult, None, None]:
        """Run epochs until bounded sources are exhausted or the job is cancelled."""
        spark_job = self.spark_job
        status = "FAILED"
        graph = None
        try:
            if self.settings.recovery_path is not None:
                self.failover.resume(self.settings.recovery_path)  # may adopt max parallelism
            graph = self.sc.broadcast(ship(cloudpickle.dumps(self.job)))  # type: ignore[no-untyped-call]
            resumed = self.failover.resumed_from
            master = str(self.sc.master)
            check_storage(self.sc, self.settings, master, resumed.path if resumed else None)
            if self.job_root is not None:
                self.job_root.write_bytes("taskowned/.keep", b"")
            while not self._cancelled.is_set():
                try:
                    result = self._next_epoch(spark_job, graph)
                except RECOVERABLE as failure:  # anything else is a bug: the job fails at once
                    self.failover.recover(self.failover.restore_latest, failure)
                    if self.results.has_released:  # checkpointed before the failure struck
                        yield EpochResult(None, self.results.take())
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
            self.savepoints.close(f"job {self.settings.job_id} is {status.lower()}")
            try:
                self._drop_ahead()
            except SPARK_JOB_FAILURES as exc:  # the session may be gone; the job's error matters
                log.warning("could not cancel the next epoch's source stages: %s", exc)
            self.spark_job.close()
            if not self._subtasks_closed:
                self._release_subtasks()
            self.summary.finished = time.monotonic()
            self.summary.checkpoints = list(self.coordinator.history)
            if graph is not None:
                graph.destroy()
            standing_on = self.coordinator.latest or self.failover.resumed_from
            self.failover.abort_staged(self.staged, standing_on)
            if self.coordinator.shutdown(status):  # only the retained checkpoints' files stay
                self.shared_state.release_live(self.state.subtask_files())
                self.shared_state.sweep()
            self.work.remove("")
            self._remove_local_dirs()

    # One epoch -----------------------------------------------------------------------------

    def _next_epoch(self, spark_job: EpochJob, graph: Broadcast[bytes]) -> EpochResult | None:
        request = self.savepoints.take()
        if request is None:
            return self._run_epoch(spark_job, graph, None)
        try:
            self._drop_ahead()  # the savepoint goes with the next epoch planned
            savepoints.begin(request, self.settings.job_id)
            result = self._run_epoch(spark_job, graph, request)
            if result is None:
                raise SavepointError("its epoch timed out and runs again without it")
        except SavepointError as exc:
            savepoints.fail(request, exc)
            return None
        except BaseException as exc:
            savepoints.fail(request, SavepointError(f"the savepoint's epoch failed: {exc}"))
            raise
        return result

    def _run_epoch(
        self, spark_job: EpochJob, graph: Broadcast[bytes], savepoint: SavepointRequest | None
    ) -> EpochResult | None:
        plan, sources = (None, None) if savepoint is not None else self._take_ahead(graph)
        stop = savepoint is not None and savepoint.stop
        ahead = sources is not None
        if plan is None:
            plan = self.planner.plan(
                self.state, self.failover.generation, self.epoch_cap.value, graph, savepoint
            )
        if plan is None:  # nothing new to read yet: poll again, or wake for a timer
            wait_s = self.settings.idle_poll_s
            timer = self.state.next_processing_timer()
            if timer is not None:
                wait_s = min(wait_s, max(0.0, timer / 1000 - time.time()))
            self._cancelled.wait(wait_s)
            return None
        started = time.perf_counter()
        timeout = self.checkpointing.timeout_ms / 1000 if self.checkpointing.enabled else None
        description = f"lockgate {self.summary.job_name} epoch {plan.epoch}"
        enumerators = self.state.enumerators
        try:
            if sources is None and self.pipelined:
                sources = spark_job.submit_sources(plan, enumerators, description)
            running = spark_job.start(plan, enumerators, description, timeout, sources)
            ends = plan.end_of_input or stop
            if sources is not None and not ends and not self._cancelled.is_set():
                self._ahead = self._run_ahead(plan, running, sources, graph)
            output = running.result()
        except EpochTimeout:
            self._drop_ahead()
            assert timeout is not None
            self._epoch_timed_out(plan.epoch, timeout, started)
            return None
        except SPARK_JOB_FAILURES as exc:  # a task failed past Spark's retries, or Spark did
            self._drop_ahead()
            raise job_failure(exc, plan.epoch) from exc
        except BaseException:
            self._drop_ahead()
            raise
        acks = self._accepted_acks(plan, output.attempts)
        self.epoch_cap.epoch_took(
            time.perf_counter() - started,
            timeout,
            _records_per_split(plan, acks),
            warm=not any(ack.restored for ack in acks),
        )
        self.state.apply_acks(plan.epoch, acks, processing_time_ms())
        self.placement.record(acks)
        for ack in acks:
            self.staged.accept(plan.epoch, ack.vertex, ack.subtask, ack.attempt)
        self._forget_acks(plan.ack_dir)
        self.finalizer.epoch_wrote(sum(ack.state.bytes_written for ack in acks if ack.state))
        self.shared_state.hold_live(self.state.subtask_files())
        self.results.hold(output.collected)
        commits_on_checkpoint = self.checkpointing.commits_on_checkpoint
        if not commits_on_checkpoint:
            self.results.release()
        checkpoint_id = (
            self.finalizer.finalize(plan.epoch, started, ends) if plan.checkpoint else None
        )
        stopped = False
        if savepoint is not None:
            taken = savepoints.complete(
                savepoint, self.state, acks, self.settings.job_id, checkpoint_id or 0, plan.epoch
            )
            # A stop whose savepoint failed does not stop: the job goes on, as in Flink
            stopped = stop and taken
        settled = self.state.committed_epoch if commits_on_checkpoint else plan.epoch
        self.staged.sweep(settled, plan.epoch)
        stats = EpochStats(
            plan.epoch,
            sum(a.records_in for a in acks if a.vertex in self.state.enumerators),
            (time.perf_counter() - started) * 1000,
            self.state.state_bytes(),
            sum(a.state.entries for a in acks if a.state),
            sum(a.restored for a in acks),
            checkpoint_id,
            ahead,
        )
        self.summary.epochs.append(stats)
        if self.progress is not None:
            self.progress.report(stats)
        self._finished = plan.end_of_input or stopped
        self._subtasks_closed = plan.end_of_input
        return EpochResult(stats, self.results.take())

    def _run_ahead(
        self, plan: EpochPlan, running: RunningEpoch, sources: SourceStages, graph: Broadcast[bytes]
    ) -> RunAhead | None:
        """Start the next epoch's source stages once ``plan``'s are done and its last stage
        launched (pipelined epochs, see ``run_ahead``); None when that cannot be: epoch
        sizes still settling, a source whose readers' stops are not known in advance, a
        failed source stage, a subtask that acknowledged twice."""
        if not self.epoch_cap.settled:
            return None
        twins = {vid: e.ahead() for vid, e in self.state.enumerators.items()}
        ready = {vid: twin for vid, twin in twins.items() if twin is not None}
        if len(ready) < len(twins):
            return None
        if self.spark_job.sources_failure(sources, wait=True) is not None:
            return None  # the epoch's job fails with it
        self.spark_job.last_stage_launched(running, sources)
        collector = AckCollector(self.job, self.work, self.state_files, plan.ack_dir, plan.epoch)
        acks = collector.sole(self.job.sources, plan.run)
        if acks is None:
            return None
        # Where epoch n's sources ran is where n+1's should (the locations of epoch n-1,
        # the latest accepted, would send them back and forth once they moved)
        self.placement.record(acks.values())
        ahead = self.planner.plan_ahead(self.state, plan, ready, acks, self.epoch_cap.value, graph)
        if ahead is None:
            return None
        description = f"lockgate {self.summary.job_name} epoch {ahead.epoch}"
        stages = self.spark_job.submit_sources(ahead, ready, description)
        assumed = {key: ack.attempt for key, ack in acks.items()}
        return RunAhead(ahead, ready, assumed, stages)

    def _take_ahead(self, graph: Broadcast[bytes]) -> tuple[EpochPlan | None, SourceStages | None]:
        """The epoch planned ahead, completed, if it rests on what the epoch before it turned
        out to be; else (None, None) and it is dropped."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return None, None
        failure = self.spark_job.sources_failure(ahead.stages, wait=False)
        if failure is not None:  # the epoch failed before it would have started
            self._drop(ahead)
            raise job_failure(failure, ahead.plan.epoch) from failure
        mismatch = ahead.mismatch(self.state)
        if mismatch is not None:
            log.warning("epoch %d is planned again: %s", ahead.plan.epoch, mismatch)
            self._drop(ahead)
            return None, None
        self.state.enumerators.update(ahead.twins)
        return self.planner.complete(ahead.plan, self.state, graph), ahead.stages

    def _drop_ahead(self) -> None:
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            self._drop(ahead)

    def _drop(self, ahead: RunAhead) -> None:
        """Give up an epoch's source stages started ahead (the acks they wrote with them)."""
        self.spark_job.cancel(ahead.stages)
        self._forget_acks(ahead.plan.ack_dir)

    def _forget_acks(self, ack_dir: str) -> None:
        try:
            self.work.remove(ack_dir)
        except OSError as exc:
            # A cancelled task (a dropped run-ahead's, a killed attempt's) may still be
            # writing its ack there. No later epoch reads the directory (every try has its
            # own), and the work directory goes with the job.
            log.info("left %s for the job's end: %s", ack_dir, exc)

    def _epoch_timed_out(self, epoch: int, timeout: float, started: float) -> None:
        """The epoch runs again with fewer records, unless timeouts exceed the tolerance."""
        smaller = self.epoch_cap.shrink()
        reason = f"epoch {epoch} exceeded the checkpoint timeout of {timeout:.0f} s"
        if self.coordinator.failed(epoch, reason, started):
            raise JobExecutionError(
                f"{reason}; more than {self.checkpointing.tolerable_failures} checkpoint "
                "failures in a row"
            ) from None
        log.warning("%s; running it again with at most %d records per split", reason, smaller)

    def _accepted_acks(
        self, plan: EpochPlan, result_attempts: dict[tuple[int, int], set[str]]
    ) -> list[SubtaskAck]:
        collector = AckCollector(self.job, self.work, self.state_files, plan.ack_dir, plan.epoch)
        acks = collector.accepted(plan.run, result_attempts)
        collector.discard_losers(self.shared_state.referenced)
        return acks

    def _release_subtasks(self) -> None:
        """Close the subtasks of the last run (Flink closes a job's operators when it ends,
        however it ends); those that read their input to its end closed themselves."""
        try:
            self.spark_job.release(run_id(self.settings.job_id, self.failover.generation))
        except Exception as exc:  # the session may be gone; the job's own error matters more
            log.warning("could not release the job's subtasks: %s", exc)

    def _remove_local_dirs(self) -> None:
        """In local mode the executors' disk is this machine's: remove the job's RocksDB
        instances."""
        keyed_state = self.settings.keyed_state
        if keyed_state.backend != manifests.ROCKSDB or not self.settings.local_spark:
            return
        for directory in keyed_state.job_local_dirs():
            shutil.rmtree(directory, ignore_errors=True)


def _records_per_split(plan: EpochPlan, acks: list[SubtaskAck]) -> int:
    """The most records a source split read in the epoch: per source subtask, its records
    over the splits it was assigned."""
    most = 0
    for ack in acks:
        assigned = plan.assignments.get(ack.vertex, {}).get(ack.subtask)
        if assigned:
            most = max(most, ack.records_in // len(assigned))
    return most
