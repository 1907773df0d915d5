"""The JobMaster on the Spark driver: runs epochs, checkpoints them, and recovers.

It never touches records. Per epoch, the ``EpochPlanner`` decides what the epoch reads and
hands each task its descriptor; one Spark job runs it (``EpochJob``); the ``AckCollector``
picks, per subtask, the attempt whose output the epoch used, and the job's state moves
forward on those acknowledgements. When the epoch ends with a checkpoint, the
``CheckpointFinalizer`` completes and commits it. A failure goes to ``Failover``.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from collections.abc import Generator
from concurrent.futures import Future
from pathlib import Path

from pyspark import Broadcast, cloudpickle
from pyspark.sql import SparkSession

from lockgate.checkpoint.coordinator import CheckpointSettings
from lockgate.common import config_options as options
from lockgate.core.fs.directory_lease import DirectoryLease, lease_job_directory
from lockgate.graph.job_graph import JobGraph
from lockgate.graph.shipped_graph import ship
from lockgate.runtime.errors import JobExecutionError
from lockgate.runtime.jobmaster import savepoints
from lockgate.runtime.jobmaster.ack_collector import AckCollector
from lockgate.runtime.jobmaster.checkpoint_finalizer import CheckpointFinalizer
from lockgate.runtime.jobmaster.epoch_acceptance import EpochAcceptance, forget_acks
from lockgate.runtime.jobmaster.epoch_cap import EpochCap
from lockgate.runtime.jobmaster.epoch_job import (
    SPARK_JOB_FAILURES,
    EpochJob,
    EpochOutput,
    EpochTimeout,
    RunningEpoch,
    SourceStages,
    pipelines,
)
from lockgate.runtime.jobmaster.epoch_plan import EpochPlan
from lockgate.runtime.jobmaster.epoch_planner import EpochPlanner
from lockgate.runtime.jobmaster.failover import RECOVERABLE, Failover
from lockgate.runtime.jobmaster.job_context import JobContext
from lockgate.runtime.jobmaster.job_settings import JobSettings
from lockgate.runtime.jobmaster.job_summary import EpochResult, JobSummary
from lockgate.runtime.jobmaster.placement import SubtaskPlacement
from lockgate.runtime.jobmaster.progress import EpochProgress
from lockgate.runtime.jobmaster.run_ahead import RunAhead
from lockgate.runtime.jobmaster.savepoints import (
    PendingSavepoints,
    SavepointError,
    SavepointRequest,
)
from lockgate.runtime.jobmaster.spark_errors import job_failure
from lockgate.runtime.jobmaster.spark_session import check_session, session_conf
from lockgate.runtime.jobmaster.storage_check import check_storage
from lockgate.runtime.messages.acknowledgement import SubtaskAck
from lockgate.runtime.messages.task_deployment import run_id
from lockgate.state import manifests

log = logging.getLogger(__name__)


class JobMaster:
    def __init__(self, session: SparkSession, job: JobGraph, settings: JobSettings):
        self.sc = session.sparkContext
        check_session(session_conf(self.sc))
        self.ctx = ctx = JobContext.create(job, settings)
        self.leases = _lease_local_directories(ctx)
        self.epoch_cap = EpochCap(settings.max_records_per_split, settings.epoch_target_s)
        self.progress = EpochProgress(settings.job_name) if settings.progress else None
        self.savepoints = PendingSavepoints()
        self._finished = False  # the sources are read to their end, or a stop's savepoint taken
        self._subtasks_closed = False  # they close themselves at the end of the input
        self.placement = SubtaskPlacement()
        self.spark_job = EpochJob(
            self.sc, job, self.placement, ctx.keys, settings.job_id, settings.job_name
        )
        # by the graph's shape, and the sources' enumerators: a file's cannot plan ahead
        self.pipelined = pipelines(job) and all(
            e.ahead() is not None for e in ctx.state.enumerators.values()
        )
        self._ahead: RunAhead | None = None  # the next epoch's sources, started early
        self.planner = EpochPlanner(ctx)
        self.finalizer = CheckpointFinalizer(ctx, self.spark_job.commit_in_tasks)
        self.acceptance = EpochAcceptance(ctx, self.placement, self.epoch_cap, self.finalizer)
        self.failover = Failover(ctx, self.finalizer, self.spark_job.release)

    @property
    def summary(self) -> JobSummary:
        """What the job reports: statistics per epoch and checkpoint, restarts."""
        return self.ctx.summary

    @property
    def finished(self) -> bool:
        """The job read its sources to their end (or stopped with a savepoint)."""
        return self._finished

    @property
    def checkpointing(self) -> CheckpointSettings:
        return self.ctx.settings.checkpoint

    def cancel(self) -> None:
        """Stop after the running epoch; safe to call from any thread."""
        self.ctx.cancelled.set()

    def trigger_savepoint(
        self, directory: str | None, stop: bool = False, drain: bool = False
    ) -> Future[str]:
        """A savepoint at the next epoch boundary, under ``directory`` or the configured
        savepoint directory; with ``stop`` the job ends with it (``drain``: after the end of
        event time). Safe to call from any thread; the future resolves to its path, or
        fails with a ``SavepointError``."""
        target = directory or self.ctx.settings.savepoint_dir
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
            if self.ctx.settings.recovery_path is not None:
                self.failover.resume(self.ctx.settings.recovery_path)  # may adopt max parallelism
            self.failover.abort_earlier_runs()
            graph = self.sc.broadcast(ship(cloudpickle.dumps(self.ctx.job)))  # type: ignore[no-untyped-call]
            resumed = self.failover.resumed_from
            master = str(self.sc.master)
            check_storage(self.sc, self.ctx.settings, master, resumed.path if resumed else None)
            if self.ctx.job_root is not None:
                self.ctx.job_root.write_bytes("taskowned/.keep", b"")
            while not self.ctx.cancelled.is_set():
                try:
                    result = self._next_epoch(spark_job, graph)
                except RECOVERABLE as failure:  # anything else is a bug: the job fails at once
                    self.failover.recover(self.failover.restore_latest, failure)
                    if self.ctx.results.has_released:  # checkpointed before the failure struck
                        yield EpochResult(None, self.ctx.results.take())
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
            self.savepoints.close(f"job {self.ctx.settings.job_id} is {status.lower()}")
            try:
                self._drop_ahead()
            except SPARK_JOB_FAILURES as exc:  # the session may be gone; the job's error matters
                log.warning("could not cancel the next epoch's source stages: %s", exc)
            self.spark_job.close()
            self.ctx.state.close_enumerators()
            if not self._subtasks_closed:
                self._release_subtasks()
            self.ctx.summary.finished = time.monotonic()
            self.ctx.summary.checkpoints = list(self.ctx.coordinator.history)
            if graph is not None:
                graph.destroy()
            standing_on = self.ctx.coordinator.latest or self.failover.resumed_from
            try:
                self.failover.abort_staged(self.ctx.staged, standing_on)
            except Exception as exc:  # a sink's system unreachable, a damaged record: the
                # job's own outcome stands, and the cleanup below must run
                log.warning(
                    "job %s: what its sinks staged after its latest checkpoint could not all "
                    "be aborted (a restore from that checkpoint aborts it): %s",
                    self.ctx.settings.job_id,
                    exc,
                    exc_info=not isinstance(exc, OSError),
                )
            if self.ctx.coordinator.shutdown(status):  # only the retained checkpoints' files stay
                self.ctx.shared_state.release_live(self.ctx.state.subtask_files())
                self.ctx.shared_state.sweep()
            self.ctx.work.remove("")
            self._remove_local_dirs()
            for lease in self.leases:
                lease.release()

    # One epoch -----------------------------------------------------------------------------

    def _next_epoch(self, spark_job: EpochJob, graph: Broadcast[bytes]) -> EpochResult | None:
        request = self.savepoints.take()
        if request is None:
            return self._run_epoch(spark_job, graph, None)
        try:
            self._drop_ahead()  # the savepoint goes with the next epoch planned
            savepoints.begin(request, self.ctx.settings.job_id)
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
        """Plan, run and accept one epoch, then complete its checkpoint (and savepoint);
        None when there was nothing to run or it timed out (it runs again smaller)."""
        plan, sources = self._plan(graph, savepoint)
        if plan is None:  # nothing new to read yet: poll again, or wake for a timer
            self._wait_for_input()
            return None
        started = time.perf_counter()
        stop = savepoint is not None and savepoint.stop
        ahead = sources is not None
        output = self._execute(spark_job, plan, sources, graph, stop, started)
        if output is None:
            return None
        acks = self.acceptance.accept(plan, output, started, self._timeout_s)
        checkpoint_id, stopped = self._complete(plan, acks, started, savepoint)
        stats = self.acceptance.statistics(plan, acks, started, checkpoint_id, ahead)
        self.ctx.summary.epochs.append(stats)
        log.debug(
            "job %s: epoch %d read %d records in %.0f ms%s",
            self.ctx.settings.job_id,
            stats.epoch,
            stats.records,
            stats.duration_ms,
            f", checkpoint {checkpoint_id}" if checkpoint_id is not None else "",
        )
        if self.progress is not None:
            self.progress.report(stats)
        self._finished = plan.end_of_input or stopped
        self._subtasks_closed = plan.end_of_input
        return EpochResult(stats, self.ctx.results.take())

    @property
    def _timeout_s(self) -> float | None:
        """How long an epoch may run: the checkpoint timeout, with checkpointing."""
        return self.checkpointing.timeout_ms / 1000 if self.checkpointing.enabled else None

    def _plan(
        self, graph: Broadcast[bytes], savepoint: SavepointRequest | None
    ) -> tuple[EpochPlan | None, SourceStages | None]:
        """The next epoch, and its source stages when they already run ahead."""
        plan, sources = (None, None) if savepoint is not None else self._take_ahead(graph)
        if plan is None:
            generation = self.failover.generation
            plan = self.planner.plan(generation, self.epoch_cap.value, graph, savepoint)
        return plan, sources

    def _wait_for_input(self) -> None:
        wait_s = self.ctx.settings.idle_poll_s
        timer = self.ctx.state.next_processing_timer()
        if timer is not None:
            wait_s = min(wait_s, max(0.0, timer / 1000 - time.time()))
        self.ctx.cancelled.wait(wait_s)

    def _execute(
        self,
        spark_job: EpochJob,
        plan: EpochPlan,
        sources: SourceStages | None,
        graph: Broadcast[bytes],
        stop: bool,
        started: float,
    ) -> EpochOutput | None:
        """Run the epoch's Spark job (starting the next epoch's sources once its own are
        done, when epochs pipeline); None if it timed out."""
        timeout = self._timeout_s
        enumerators = self.ctx.state.enumerators
        try:
            if sources is None and self.pipelined:
                sources = spark_job.submit_sources(plan, enumerators, self._sources(plan.epoch))
            running = spark_job.start(plan, enumerators, self._description(plan), timeout, sources)
            ends = plan.end_of_input or stop
            if sources is not None and not ends and not self.ctx.cancelled.is_set():
                self._ahead = self._run_ahead(plan, running, sources, graph)
            return running.result()
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

    def _description(self, plan: EpochPlan) -> str:
        """What Spark's UI shows of the epoch's Spark job: ``lockgate <job name> epoch 12
        (checkpoint 12, savepoint)``. Its checkpoint, completed or failed, takes the
        coordinator's next id: epochs end one after another."""
        ends_with = []
        if plan.checkpoint:
            ends_with.append(f"checkpoint {self.ctx.coordinator.next_id}")
        if plan.savepoint_url is not None:
            ends_with.append("savepoint")
        described = f"lockgate {self.ctx.settings.job_name} epoch {plan.epoch}"
        return f"{described} ({', '.join(ends_with)})" if ends_with else described

    def _sources(self, epoch: int) -> str:
        """What Spark's UI shows of an epoch's source stages submitted as jobs of their own
        (pipelined epochs), before its checkpoint is decided."""
        return f"lockgate {self.ctx.settings.job_name} epoch {epoch} sources"

    def _complete(
        self,
        plan: EpochPlan,
        acks: list[SubtaskAck],
        started: float,
        savepoint: SavepointRequest | None,
    ) -> tuple[int | None, bool]:
        """Release or hold the epoch's output, complete its checkpoint and savepoint, and
        abort what losing attempts staged: the checkpoint's id (None: none, or it failed)
        and whether the job stops with the savepoint."""
        ctx = self.ctx
        commits_on_checkpoint = self.checkpointing.commits_on_checkpoint
        if not commits_on_checkpoint:
            ctx.results.release()
        ends = plan.end_of_input or (savepoint is not None and savepoint.stop)
        checkpoint_id = (
            self.finalizer.finalize(plan.epoch, started, ends) if plan.checkpoint else None
        )
        stopped = False
        if savepoint is not None and commits_on_checkpoint and checkpoint_id is None:
            # Its committables would name output no checkpoint commits, which a failover
            # or the job's end aborts
            savepoints.fail(savepoint, SavepointError("the checkpoint of its epoch failed"))
        elif savepoint is not None:
            taken = savepoints.complete(
                savepoint,
                ctx.state,
                acks,
                self.ctx.settings.job_id,
                checkpoint_id or 0,
                plan.epoch,
                self.ctx.settings.signing_key,
            )
            # A stop whose savepoint failed does not stop: the job goes on, as in Flink
            stopped = savepoint.stop and taken
        settled = ctx.state.committed_epoch if commits_on_checkpoint else plan.epoch
        ctx.staged.sweep(settled, plan.epoch)
        return checkpoint_id, stopped

    def _run_ahead(
        self, plan: EpochPlan, running: RunningEpoch, sources: SourceStages, graph: Broadcast[bytes]
    ) -> RunAhead | None:
        """Start the next epoch's source stages once ``plan``'s are done and its last stage
        launched (pipelined epochs, see ``run_ahead``); None when that cannot be: epoch
        sizes still settling, a source whose readers' stops are not known in advance, a
        failed source stage, a subtask that acknowledged twice."""
        if not self.epoch_cap.settled:
            return None
        twins = {vid: e.ahead() for vid, e in self.ctx.state.enumerators.items()}
        ready = {vid: twin for vid, twin in twins.items() if twin is not None}
        if len(ready) < len(twins):
            return None
        if self.spark_job.sources_failure(sources, wait=True) is not None:
            return None  # the epoch's job fails with it
        self.spark_job.last_stage_launched(running, sources)
        collector = AckCollector(
            self.ctx.job, self.ctx.work, self.ctx.state_files, plan.ack_dir, plan.epoch
        )
        acks = collector.sole(self.ctx.job.sources, plan.run)
        if acks is None:
            return None
        # Where epoch n's sources ran is where n+1's should (the locations of epoch n-1,
        # the latest accepted, would send them back and forth once they moved)
        self.placement.record(acks.values())
        ahead = self.planner.plan_ahead(plan, ready, acks, self.epoch_cap.value, graph)
        if ahead is None:
            return None
        stages = self.spark_job.submit_sources(ahead, ready, self._sources(ahead.epoch))
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
        mismatch = ahead.mismatch(self.ctx.state)
        if mismatch is not None:
            log.debug("epoch %d is planned again: %s", ahead.plan.epoch, mismatch)
            self._drop(ahead)
            return None, None
        self.ctx.state.enumerators.update(ahead.twins)
        return self.planner.complete(ahead.plan, graph), ahead.stages

    def _drop_ahead(self) -> None:
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            self._drop(ahead)

    def _drop(self, ahead: RunAhead) -> None:
        """Give up an epoch's source stages started ahead (the acks they wrote with them)."""
        self.spark_job.cancel(ahead.stages)
        forget_acks(self.ctx, ahead.plan.ack_dir)

    def _epoch_timed_out(self, epoch: int, timeout: float, started: float) -> None:
        """The epoch runs again with fewer records, unless timeouts exceed the tolerance."""
        smaller = self.epoch_cap.shrink()
        reason = f"epoch {epoch} exceeded the checkpoint timeout of {timeout:.0f} s"
        if self.ctx.coordinator.failed(epoch, reason, started):
            raise JobExecutionError(
                f"{reason}; more than {self.checkpointing.tolerable_failures} checkpoint "
                "failures in a row"
            ) from None
        log.warning("%s; running it again with at most %d records per split", reason, smaller)

    def _release_subtasks(self) -> None:
        """Close the subtasks of the last run (Flink closes a job's operators when it ends,
        however it ends); those that read their input to its end closed themselves."""
        try:
            self.spark_job.release(run_id(self.ctx.settings.job_id, self.failover.generation))
        except Exception as exc:  # the session may be gone; the job's own error matters more
            log.warning("could not release the job's subtasks: %s", exc)

    def _remove_local_dirs(self) -> None:
        """In local mode the executors' disk is this machine's: remove the job's RocksDB
        instances."""
        keyed_state = self.ctx.settings.keyed_state
        if keyed_state.backend != manifests.ROCKSDB or not self.ctx.settings.local_spark:
            return
        for directory in keyed_state.job_local_dirs():
            shutil.rmtree(directory, ignore_errors=True)


def _lease_local_directories(ctx: JobContext) -> list[DirectoryLease]:
    """Leases on the job's directories on this machine, for as long as it runs: its work
    directory, and in local mode its RocksDB directories too (the executors' disk is this
    machine's), which a subtask host between two runs of the job would not hold."""
    leases = [ctx.work_lease] if ctx.work_lease is not None else []
    keyed_state = ctx.settings.keyed_state
    if keyed_state.backend == manifests.ROCKSDB and ctx.settings.local_spark:
        for directory in keyed_state.job_local_dirs():
            with contextlib.suppress(OSError):  # a host fails naming the directory
                leases.append(lease_job_directory(Path(directory)))
    return leases
