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
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pickle import loads
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark import SparkContext, StorageLevel
from pyspark.errors import PySparkException
from pyspark.rdd import RDD

from lockgate.runtime.jobmaster.executors import list_executors, located_rdd
from lockgate.runtime.jobmaster.placement import SubtaskPlacement
from lockgate.runtime.source import SplitAssignment, SplitEnumerator
from lockgate.runtime.taskexecutor.epoch_task import (
    PLACEMENT_MARKER,
    RESTORE_EDGE,
    EpochTask,
    RestoreBundle,
    source_input,
)
from lockgate.runtime.taskexecutor.host_client import release_hosts
from lockgate.runtime.taskexecutor.operators import ATTEMPT_TAG

log = logging.getLogger("lockgate")

# What the Spark job of an epoch raises when a task failed past Spark's own retries or the
# job was cancelled; a driver-side error of lockgate is none of these.
SPARK_JOB_FAILURES = (Py4JJavaError, PySparkException)


# The job group of every release job (epochs have a group each, to be cancelled by)
RELEASE_GROUP = "lockgate-release"


class _ReleaseRun:
    def __init__(self, run: str):
        self.run = run

    def __call__(self, _: Iterable[int]) -> list[str]:
        return release_hosts(self.run)


class EpochTimeout(RuntimeError):
    """An epoch ran longer than the checkpoint timeout and was cancelled."""


def _target_partition(partition: int) -> int:
    return partition


def _to_driver(item: tuple[int, Any]) -> bool:
    """Keeps what a task sends the driver (negative tags) of its output."""
    return item[0] < 0


class _ToConsumer:
    """Keeps what a task sends one consumer: the items of its edges to it, and the
    restores the task carries for it."""

    def __init__(self, edge_ids: frozenset[int], consumer: int):
        self.edge_ids = edge_ids
        self.consumer = consumer

    def __call__(self, item: tuple[int, Any]) -> bool:
        if item[0] < 0:
            return False
        edge = item[1][0]
        return edge in self.edge_ids or (edge == RESTORE_EDGE and item[1][1] == self.consumer)


def reports_attempt(vertex: Any) -> bool:
    """Whether a task's output reaches the driver, which then learns its attempts."""
    return not vertex.outputs or _collects(vertex)


@dataclass
class EpochOutput:
    """What the Spark job of an epoch returns to the driver."""

    collected: list[Any]  # records of collect sinks, in subtask order
    attempts: dict[tuple[int, int], set[str]]  # (vertex, subtask) of result tasks -> attempts


def _collects(vertex: Any) -> bool:
    return any(getattr(node.operator, "kind", None) == "collect" for node in vertex.nodes)


class EpochJob:
    def __init__(self, sc: SparkContext, job: Any, placement: SubtaskPlacement):
        self.sc = sc
        self.job = job
        self.placement = placement
        self.started_runs: set[str] = set()  # runs whose subtasks may live on executors

    def run(
        self,
        run: str,
        tasks: dict[int, EpochTask],
        plans: dict[int, dict[int, list[SplitAssignment]]],
        enumerators: dict[int, SplitEnumerator],
        restores: dict[int, list[bytes]],
        description: str,
        timeout_s: float | None = None,
    ) -> EpochOutput:
        """Run one epoch; returns the records of collect sinks and the result attempts.

        ``plans`` holds, per source task and subtask, what it reads this epoch, as planned by
        the task's enumerator in ``enumerators``, and ``restores`` each subtask's encoded
        ``SubtaskRestore``.

        An epoch still running after ``timeout_s`` is cancelled (``EpochTimeout``).
        """
        sc = self.sc
        self.started_runs.add(run)
        rdds: dict[int, RDD] = {}
        persisted: list[RDD] = []
        results: list[RDD] = []
        bundles = self._restore_bundles(restores)
        try:
            for vertex in self.job.vertices:
                task = tasks[vertex.id]
                if vertex.is_source:
                    # Partition i carries subtask i's restore bundle and assignments (a
                    # collection source's records included): each task deserializes only
                    # its own, and the task closure stays small (no per-epoch broadcast).
                    plan = plans.get(vertex.id, {})
                    enumerator = enumerators[vertex.id]
                    parts = [
                        (bundles[vertex.id][i], source_input(enumerator, plan.get(i, [])))
                        for i in range(vertex.parallelism)
                    ]
                    places = self.placement.locations(vertex.id, vertex.parallelism)
                    if places is None:
                        base = sc.parallelize(parts, vertex.parallelism)
                    else:
                        base = located_rdd(sc, list(zip(parts, places, strict=True)))
                else:
                    base = self._located(vertex, self._shuffle_input(vertex, rdds))
                rdd = base.mapPartitionsWithIndex(task)
                consumers = {edge.target.id for edge in vertex.outputs}
                collects = _collects(vertex)
                if len(consumers) + int(collects) > 1:
                    rdd = rdd.persist(StorageLevel.MEMORY_AND_DISK)
                    persisted.append(rdd)
                rdds[vertex.id] = rdd
                if not consumers:
                    results.append(rdd)
                elif collects:
                    results.append(rdd.filter(_to_driver))
            final = results[0] if len(results) == 1 else sc.union(results)
            group = f"lockgate-{uuid.uuid4().hex}"
            sc.setJobGroup(group, description, interruptOnCancel=True)
            timer = None
            timed_out = threading.Event()
            if timeout_s is not None:

                def cancel() -> None:
                    timed_out.set()
                    sc.cancelJobGroup(group)

                timer = threading.Timer(timeout_s, cancel)
                timer.daemon = True
                timer.start()
            try:
                batches = final.collect()
            except Exception:
                if timed_out.is_set():
                    raise EpochTimeout(description) from None
                raise
            finally:
                if timer is not None:
                    timer.cancel()
            output = EpochOutput([], {})
            for tag, payload in batches:
                if tag == ATTEMPT_TAG:
                    vertex_id, index, attempt = payload
                    output.attempts.setdefault((vertex_id, index), set()).add(attempt)
                else:
                    output.collected.extend(loads(record) for record in loads(payload))
            return output
        finally:
            for rdd in persisted:
                rdd.unpersist(blocking=False)

    def release(self, run: str) -> None:
        """End ``run`` on every executor: its subtask hosts close their subtasks (user
        functions' close()) and exit. A host this misses (an executor Spark did not run the
        release on) goes when its executor does."""
        if run not in self.started_runs:
            return  # no epoch of it ran: nothing lives anywhere
        self.started_runs.discard(run)
        # One task per executor, asking to run there (local mode: the driver's executor)
        places = [(e.id, e.location) for e in list_executors(self.sc)] or [("driver", None)]
        self.sc.setJobGroup(RELEASE_GROUP, f"lockgate release {run}")
        try:
            problems = located_rdd(self.sc, places).mapPartitions(_ReleaseRun(run)).collect()
        except SPARK_JOB_FAILURES as exc:
            log.warning("could not release the subtasks of run %s: %s", run, exc)
            return
        for problem in problems:
            log.warning("releasing run %s: %s", run, problem)

    def _restore_bundles(self, restores: dict[int, list[bytes]]) -> dict[int, list[RestoreBundle]]:
        """Each subtask's restore bundle (see ``RestoreBundle``): subtask j of a non-source
        task gets its restore from subtask j % p of its first input's task, through the
        shuffle between them, so restores travel from the sources hop by hop and every task
        receives only its own (and those it forwards)."""
        carried: dict[int, list[list[tuple[int, int, Any]]]] = {
            v.id: [[] for _ in range(v.parallelism)] for v in self.job.vertices
        }
        bundles: dict[int, list[RestoreBundle]] = {}
        for vertex in reversed(self.job.vertices):  # consumers before the tasks that carry
            bundles[vertex.id] = list(zip(restores[vertex.id], carried[vertex.id], strict=True))
            if not vertex.is_source:
                carrier = vertex.inputs[0].source
                for index, bundle in enumerate(bundles[vertex.id]):
                    carried[carrier.id][index % carrier.parallelism].append(
                        (vertex.id, index, bundle)
                    )
        return bundles

    def _located(self, vertex: Any, shuffled: RDD) -> RDD:
        """The shuffled input of a task, its partitions asking for their subtasks' places.

        A shuffle's partition prefers the hosts that hold much of its map output, which
        says nothing of where the subtask lives. A union of RDDs with one partitioner is
        Spark's ``PartitionerAwareUnionRDD``, whose partition i prefers the host most of its
        parents' partitions i prefer. The second parent is a marker shuffle whose map task i
        ran at subtask i's place and sent one marker to partition i (the receiver drops it),
        so partition i prefers that host; it is read twice so that it outvotes the data's
        hosts.
        """
        places = self.placement.locations(vertex.id, vertex.parallelism)
        if places is None:
            return shuffled
        markers = [((index, PLACEMENT_MARKER), place) for index, place in enumerate(places)]
        marker = located_rdd(self.sc, markers).partitionBy(vertex.parallelism, _target_partition)
        return self.sc.union([shuffled, marker, marker])

    def _shuffle_input(self, vertex: Any, rdds: dict[int, RDD]) -> RDD:
        """The vertex's input channels (with the restores its first input carries)."""
        inputs: list[RDD] = []
        for source_id in dict.fromkeys(edge.source.id for edge in vertex.inputs):
            source = self.job.vertex(source_id)
            upstream = rdds[source_id]
            own = frozenset(e.id for e in vertex.inputs if e.source.id == source_id)
            if len(source.outputs) > len(own) or _collects(source):
                upstream = upstream.filter(_ToConsumer(own, vertex.id))
            inputs.append(upstream)
        union = inputs[0] if len(inputs) == 1 else self.sc.union(inputs)
        return union.partitionBy(vertex.parallelism, _target_partition)
