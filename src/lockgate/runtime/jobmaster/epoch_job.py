"""Build the Spark job of one epoch from the job graph.

Each task becomes one RDD whose partition i runs subtask i. Edges between tasks become a
``partitionBy`` on the target subtask (the item key chosen by the sending channel writer).
A task whose output feeds several consumers is persisted for the epoch so that it runs
once; the epoch's Spark job is the union of the tasks that end the graph. Tasks ask to run
where their subtasks live (``SubtaskPlacement``).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pickle import loads
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark import SparkContext, StorageLevel
from pyspark.errors import PySparkException
from pyspark.rdd import RDD

from lockgate.core.source import SplitEnumerator
from lockgate.core.two_phase_commit import CommitFailedError, TaskCommitter
from lockgate.graph.job_graph import JobGraph, JobVertex
from lockgate.runtime.jobmaster.epoch_plan import EpochPlan
from lockgate.runtime.jobmaster.executors import list_executors, located_rdd
from lockgate.runtime.jobmaster.placement import SubtaskPlacement
from lockgate.runtime.jobmaster.run_keys import RunKeys
from lockgate.runtime.jobmaster.spark_errors import failure_text
from lockgate.runtime.jobmaster.spark_job_labels import job_tag, labelled
from lockgate.runtime.messages.spark_items import (
    PLACEMENT,
    AttemptReport,
    CollectedRecords,
    ShuffleItem,
    SourcePartition,
)
from lockgate.runtime.sparktask.epoch_task import source_input
from lockgate.runtime.sparktask.host_client import ReleaseRun
from lockgate.runtime.sparktask.routing import ToConsumer, target_partition, to_driver

log = logging.getLogger(__name__)

# What the Spark job of an epoch raises when a task failed past Spark's own retries or the
# job was cancelled; a driver-side error of lockgate is none of these.
SPARK_JOB_FAILURES = (Py4JJavaError, PySparkException)


# How often the driver looks whether an epoch's last stage has launched its tasks
_LAUNCH_POLL_S = 0.005
# How many unknown job ids the driver looks past when it looks for an epoch's job
_JOB_ID_GAPS = 3

# The job group of every release job (epochs have a group each, to be cancelled by)
RELEASE_GROUP = "lockgate-release"


class EpochTimeout(RuntimeError):
    """An epoch ran longer than the checkpoint timeout and was cancelled."""


def reports_attempt(vertex: JobVertex) -> bool:
    """Whether a task's output reaches the driver, which then learns its attempts."""
    return not vertex.outputs or _collects(vertex)


@dataclass
class EpochOutput:
    """What the Spark job of an epoch returns to the driver."""

    collected: list[Any]  # records of collect sinks, in subtask order
    attempts: dict[tuple[int, int], set[str]]  # (vertex, subtask) of result tasks -> attempts


def _collects(vertex: JobVertex) -> bool:
    return any(getattr(node.operator, "kind", None) == "collect" for node in vertex.nodes)


def pipelines(job: JobGraph) -> bool:
    """Whether the source tasks of an epoch can run before the epoch before it ends
    (pipelined epochs): each feeds exactly one task through a shuffle, and runs no sink (a
    sink's output must not run ahead of the checkpoint before it)."""
    return all(
        len({edge.target.id for edge in vertex.outputs}) == 1
        and not any(node.is_sink for node in vertex.nodes)
        for vertex in job.sources
    )


@dataclass
class SourceStages:
    """The source tasks of one epoch, submitted as shuffle map stages ahead of the epoch's
    Spark job, which then reads their shuffles (Spark runs a map stage once: the job waits
    for it if it still runs, and skips it if it is done)."""

    group: str  # the epoch's Spark job group: cancelling it cancels these stages too
    description: str
    rdds: dict[int, RDD]  # source task -> its RDD
    shuffles: dict[tuple[int, int], RDD]  # (consumer, source task) -> the consumer's input
    futures: list[Any]  # Spark's FutureAction of each map stage (py4j)


class RunningEpoch:
    """The Spark job of an epoch, collecting on the job's collector thread."""

    def __init__(
        self,
        sc: SparkContext,
        group: str,
        description: str,
        collecting: Future[list[Any]],
        timeout_s: float | None,
        persisted: list[RDD],
    ):
        self.sc = sc
        self.group = group
        self.description = description
        self.collecting = collecting
        self.persisted = persisted
        self.timed_out = threading.Event()
        self.timer: threading.Timer | None = None
        if timeout_s is not None:
            self.timer = threading.Timer(timeout_s, self._time_out)
            self.timer.daemon = True
            self.timer.start()

    def _time_out(self) -> None:
        self.timed_out.set()
        self.sc.cancelJobGroup(self.group)

    def result(self) -> EpochOutput:
        """The records of collect sinks and the result attempts; ``EpochTimeout`` if the
        timeout cancelled the job, Spark's error if it failed."""
        try:
            batches = self.collecting.result()
        except BaseException as exc:
            if self.timed_out.is_set():
                raise EpochTimeout(self.description) from None
            if not isinstance(exc, Exception):  # interrupted here: the job must not run on
                self.sc.cancelJobGroup(self.group)
            raise
        finally:
            if self.timer is not None:
                self.timer.cancel()
            for rdd in self.persisted:
                rdd.unpersist(blocking=False)
        output = EpochOutput([], {})
        for item in batches:
            if isinstance(item, AttemptReport):
                key = (item.vertex, item.subtask)
                output.attempts.setdefault(key, set()).add(item.attempt)
            elif isinstance(item, CollectedRecords):
                output.collected.extend(loads(record) for record in loads(item.records))
            else:
                raise RuntimeError(f"an epoch's job returned {type(item).__name__} items")
        return output


class EpochJob:
    def __init__(
        self,
        sc: SparkContext,
        job: JobGraph,
        placement: SubtaskPlacement,
        keys: RunKeys,
        job_id: str,
        job_name: str,
    ):
        self.sc = sc
        self.job = job
        self.tag = job_tag(job_id)  # on every Spark job of the lockgate job
        self.job_name = job_name
        self.placement = placement
        self.keys = keys
        self.started_runs: set[str] = set()  # runs whose subtasks may live on executors
        # Collects each epoch's job, so that the driver can plan the next epoch meanwhile
        self.collector = ThreadPoolExecutor(1, thread_name_prefix="lockgate-epoch")

    def close(self) -> None:
        self.collector.shutdown(wait=False)

    def submit_sources(
        self, plan: EpochPlan, enumerators: dict[int, SplitEnumerator], description: str
    ) -> SourceStages:
        """Start the source tasks of ``plan`` (a job that ``pipelines``) as map stages."""
        self.started_runs.add(plan.run)
        group = f"lockgate-{uuid.uuid4().hex}"
        stages = SourceStages(group, description, {}, {}, [])
        jsc = self.sc._jsc.sc()
        with labelled(self.sc, self.tag, group, description, interrupt_on_cancel=True):
            for vertex in self.job.sources:
                rdd = self._source_rdd(vertex, plan, enumerators[vertex.id])
                stages.rdds[vertex.id] = rdd
                (consumer,) = {edge.target for edge in vertex.outputs}
                shuffled = self._shuffle(consumer, vertex.id, rdd)
                stages.shuffles[(consumer.id, vertex.id)] = shuffled
                # the values of a ShuffledRDD, whose dependency is the shuffle (partitionBy)
                dependency = shuffled._jrdd.rdd().dependencies().head().rdd().dependencies().head()
                stages.futures.append(jsc.submitMapStage(dependency))
        return stages

    def sources_failure(self, stages: SourceStages, wait: bool) -> Exception | None:
        """How a map stage of ``stages`` failed (waiting for them to end, or looking only at
        those that ended); None if none did."""
        for future in stages.futures:
            if not wait and not future.isCompleted():
                continue
            try:
                future.get()
            except SPARK_JOB_FAILURES as exc:
                return exc
        return None

    def last_stage_launched(self, running: RunningEpoch, sources: SourceStages) -> None:
        """Wait until every task of the last stage of ``running`` (the epoch's job, after
        ``sources``, which are done) was launched, or the job ended: stages submitted after
        that take only the cores the epoch leaves free (Spark's FIFO scheduling would let
        them take a core in the moment between two of the epoch's stages)."""
        tracker = self.sc.statusTracker()
        # Not tracker.getJobIdsForGroup: it copies and sorts every job Spark remembers (1000
        # by default), some 100 ms of the JVM per call. Job ids rise: the epoch's job is the
        # first after its source stages' jobs that is in its group.
        candidate = max(future.jobIds().head() for future in sources.futures) + 1
        last_stage = None
        while not running.collecting.done():
            if last_stage is None:
                job_id = first_job_in_group(self.sc, running.group, candidate)
                if job_id is not None:
                    job = tracker.getJobInfo(job_id)
                    last_stage = max(job.stageIds) if job else None
            if last_stage is not None:
                # Spark's own object: PySpark's getStageInfo asks for all 7 fields, a call each
                stage = tracker._jtracker.getStageInfo(last_stage)
                if stage is not None and (
                    stage.numActiveTasks() + stage.numCompletedTasks() + stage.numFailedTasks()
                    >= stage.numTasks()
                ):
                    return
            time.sleep(_LAUNCH_POLL_S)

    def cancel(self, stages: SourceStages) -> None:
        """Cancel source stages submitted ahead, and wait until Spark gave them up."""
        self.sc.cancelJobGroup(stages.group)
        self.sources_failure(stages, wait=True)

    def start(
        self,
        plan: EpochPlan,
        enumerators: dict[int, SplitEnumerator],
        description: str,
        timeout_s: float | None = None,
        sources: SourceStages | None = None,
    ) -> RunningEpoch:
        """Start the Spark job of one epoch: its tasks (``plan.tasks``), the sources reading
        ``plan.assignments`` as planned by ``enumerators``, or reusing ``sources`` submitted
        ahead. An epoch still running after ``timeout_s`` is cancelled (``EpochTimeout``)."""
        sc = self.sc
        self.started_runs.add(plan.run)
        rdds: dict[int, RDD] = dict(sources.rdds) if sources else {}
        shuffles = sources.shuffles if sources else {}
        persisted: list[RDD] = []
        results: list[RDD] = []
        for vertex in self.job.vertices:
            if vertex.id in rdds:
                rdd = rdds[vertex.id]
            elif vertex.is_source:
                rdd = self._source_rdd(vertex, plan, enumerators[vertex.id])
            else:
                task_input = self._task_input(vertex, rdds, shuffles)
                rdd = task_input.mapPartitionsWithIndex(plan.tasks[vertex.id])
            consumers = {edge.target.id for edge in vertex.outputs}
            collects = _collects(vertex)
            if len(consumers) + int(collects) > 1:
                rdd = rdd.persist(StorageLevel.MEMORY_AND_DISK)
                persisted.append(rdd)
            rdds[vertex.id] = rdd
            if not consumers:
                results.append(rdd)
            elif collects:
                results.append(rdd.filter(to_driver))
        final = results[0] if len(results) == 1 else sc.union(results)
        group = sources.group if sources else f"lockgate-{uuid.uuid4().hex}"

        def collect() -> list[Any]:
            with labelled(sc, self.tag, group, description, interrupt_on_cancel=True):
                return final.collect()

        collecting = self.collector.submit(collect)
        return RunningEpoch(sc, group, description, collecting, timeout_s, persisted)

    def commit_in_tasks(self, committer: TaskCommitter, groups: list[list[Any]]) -> None:
        """Commit a task committer's groups of committables, one Spark task each, wherever
        Spark places them; a commit that fails fails the job over, and the restore commits
        again."""
        if not groups:
            return
        group = f"lockgate-commit-{uuid.uuid4().hex}"
        description = f"lockgate {self.job_name} commit"
        try:
            with labelled(self.sc, self.tag, group, description):
                self.sc.parallelize(groups, len(groups)).foreach(committer.commit_group)
        except SPARK_JOB_FAILURES as exc:
            raise CommitFailedError(failure_text(exc, "a commit")) from exc

    def release(self, run: str) -> None:
        """End ``run`` on every executor: its subtask hosts close their subtasks (user
        functions' close()) and exit. A host this misses (an executor Spark did not run the
        release on) goes when its executor does."""
        if run not in self.started_runs:
            return  # no epoch of it ran: nothing lives anywhere
        self.started_runs.discard(run)
        # One task per executor, asking to run there (local mode: the driver's executor)
        places = [(e.id, e.location) for e in list_executors(self.sc)] or [("driver", None)]
        description = f"lockgate {self.job_name} release of run {run}"
        try:
            release = ReleaseRun(self.keys.access(run))
            with labelled(self.sc, self.tag, RELEASE_GROUP, description):
                problems = located_rdd(self.sc, places).mapPartitions(release).collect()
        except SPARK_JOB_FAILURES as exc:
            log.warning("could not release the subtasks of run %s: %s", run, exc)
            return
        for problem in problems:
            log.warning("releasing run %s: %s", run, problem)

    def _source_rdd(self, vertex: JobVertex, plan: EpochPlan, enumerator: SplitEnumerator) -> RDD:
        # Partition i carries subtask i's restore and assignments (a collection source's
        # records included): each task deserializes only its own, and the task closure
        # stays small (no per-epoch broadcast).
        assignments = plan.assignments.get(vertex.id, {})
        parts = [
            SourcePartition(
                plan.source_restores[vertex.id][i], source_input(enumerator, assignments.get(i, []))
            )
            for i in range(vertex.parallelism)
        ]
        places = self.placement.locations(vertex.id, vertex.parallelism)
        if places is None:
            base = self.sc.parallelize(parts, vertex.parallelism)
        else:
            base = located_rdd(self.sc, list(zip(parts, places, strict=True)))
        return base.mapPartitionsWithIndex(plan.tasks[vertex.id])

    def _shuffle(self, vertex: JobVertex, source_id: int, upstream: RDD) -> RDD:
        """The items of the edges from task ``source_id`` to ``vertex``, by subtask."""
        source = self.job.vertex(source_id)
        own = frozenset(e.id for e in vertex.inputs if e.source.id == source_id)
        if len(source.outputs) > len(own) or _collects(source):
            upstream = upstream.filter(ToConsumer(own))
        return upstream.partitionBy(vertex.parallelism, target_partition)

    def _task_input(
        self, vertex: JobVertex, rdds: dict[int, RDD], shuffles: dict[tuple[int, int], RDD]
    ) -> RDD:
        """The input of a task after a shuffle: per input task, the items of its edges to
        this one, partitioned by subtask (taken from ``shuffles`` if submitted ahead).

        A union of RDDs with one partitioner is Spark's ``PartitionerAwareUnionRDD``: its
        partition i is the parents' partitions i, and prefers the host most of them prefer.
        A shuffle's partition prefers the hosts that hold much of its map output, which says
        nothing of where the subtask lives; so when placement applies, a marker shuffle whose
        map task i ran at subtask i's place sends one marker to partition i (the receiver
        drops it), and is read once more than there are data shuffles, to outvote them.
        """
        inputs = [
            shuffles.get((vertex.id, source_id))
            or self._shuffle(vertex, source_id, rdds[source_id])
            for source_id in dict.fromkeys(edge.source.id for edge in vertex.inputs)
        ]
        places = self.placement.locations(vertex.id, vertex.parallelism)
        if places is not None:
            markers = [(ShuffleItem(index, PLACEMENT), place) for index, place in enumerate(places)]
            marker = located_rdd(self.sc, markers).partitionBy(vertex.parallelism, target_partition)
            inputs += [marker] * (len(inputs) + 1)
        return inputs[0] if len(inputs) == 1 else self.sc.union(inputs)


def first_job_in_group(sc: SparkContext, group: str, first_id: int) -> int | None:
    """The id of the first job from ``first_id`` on that Spark knows and that is in job
    group ``group``; None if there is none yet. Reads jobs by id (``AppStatusStore.job``,
    what Spark's REST API serves), looking past a few ids Spark does not know: a job that
    failed before it started leaves a gap."""
    store = sc._jsc.sc().statusStore()
    tracker = sc.statusTracker()
    job_id, gaps = first_id, 0
    while gaps < _JOB_ID_GAPS:
        if tracker.getJobInfo(job_id) is None:
            gaps += 1
        else:
            found = store.job(job_id).jobGroup()
            if found.isDefined() and found.get() == group:
                return job_id
        job_id += 1
    return None
