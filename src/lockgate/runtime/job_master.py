"""The JobMaster on the Spark driver: plans epochs, runs them, and keeps their results.

It never touches records. Per epoch it asks the source enumerators for the input of every
split, runs one Spark job, reads every subtask's acknowledgement, moves source positions
and state manifests forward, and deletes state files no version still needs.
"""

from __future__ import annotations

import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark import cloudpickle
from pyspark.sql import SparkSession

from lockgate.checkpoint.storage import Storage
from lockgate.common import config_options as options
from lockgate.runtime.epoch_job import EpochJob
from lockgate.runtime.epoch_task import EpochTask, ack_path
from lockgate.runtime.errors import JobExecutionError
from lockgate.runtime.progress import EpochProgress
from lockgate.runtime.spark_errors import job_failure


@dataclass
class EpochStats:
    epoch: int
    records: int
    duration_ms: float
    state_bytes: int
    state_entries: int
    restored_subtasks: int


@dataclass
class EpochResult:
    stats: EpochStats
    collected: list[Any]


@dataclass
class JobSummary:
    job_id: str
    job_name: str
    epochs: list[EpochStats] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None


class JobMaster:
    def __init__(self, session: SparkSession, job: Any, config: dict[str, str], job_name: str):
        self.sc = session.sparkContext
        self.job = job
        self.config = config
        self.summary = JobSummary(uuid.uuid4().hex, job_name)
        work_dir = options.WORK_DIR.read(config)
        if not work_dir:
            if not self.sc.master.startswith("local"):
                raise options.ConfigurationError(
                    f"configuration key '{options.WORK_DIR.key}' must be set when Spark runs "
                    f"on a cluster (master {self.sc.master}): allowed values are "
                    f"{options.WORK_DIR.allowed}"
                )
            work_dir = f"{tempfile.gettempdir()}/lockgate"
        self.storage = Storage(work_dir).child(self.summary.job_id)
        self.max_records = options.EPOCH_MAX_RECORDS_PER_SPLIT.read(config)
        self.idle_poll_s = options.CONTINUOUS_IDLE_POLL.read(config) / 1000
        self.progress = EpochProgress(job_name) if options.PROGRESS.read(config) else None
        self._cancelled = threading.Event()
        self.enumerators = {
            v.id: v.head.operator.create_enumerator(v.parallelism) for v in job.sources
        }
        # Latest state version of every keyed subtask: key group -> handle of its blob.
        self.manifests = {
            v.id: {i: {"kinds": {}, "groups": {}} for i in range(v.parallelism)}
            for v, _ in job.stateful_nodes
        }
        # Latest operator state of every subtask (sink part counters, ...), by operator uid.
        self.operator_states: dict[int, dict[int, dict[str, Any]]] = {
            v.id: {} for v in job.vertices
        }

    @property
    def job_id(self) -> str:
        return self.summary.job_id

    def cancel(self) -> None:
        """Stop after the running epoch; safe to call from any thread."""
        self._cancelled.set()

    def run(self) -> Iterator[EpochResult]:
        """Run epochs until bounded sources are exhausted or the job is cancelled."""
        graph = self.sc.broadcast(cloudpickle.dumps(self.job))
        spark_job = EpochJob(self.sc, self.job)
        epoch = 0
        try:
            while not self._cancelled.is_set():
                plans = {vid: e.plan(self.max_records) for vid, e in self.enumerators.items()}
                has_input = any(plans.values())
                finished = all(e.is_finished() for e in self.enumerators.values())
                if not has_input and not finished:
                    self._cancelled.wait(self.idle_poll_s)  # continuous sources, nothing new
                    continue
                end_of_input = all(
                    e.is_finished() or e.will_finish() for e in self.enumerators.values()
                )
                epoch += 1
                result = self._run_epoch(spark_job, graph, epoch, plans, end_of_input)
                yield result
                if end_of_input:
                    break
        finally:
            self.summary.finished = time.monotonic()
            graph.destroy()
            self.storage.remove("")

    def _run_epoch(
        self, spark_job: EpochJob, graph: Any, epoch: int, plans: dict, end_of_input: bool
    ) -> EpochResult:
        started = time.perf_counter()
        self.storage.write_json(
            f"epochs/{epoch}/plan.json",
            {
                "epoch": epoch,
                "end_of_input": end_of_input,
                "sources": {
                    str(vid): {
                        str(sub): [{k: v for k, v in a.items() if k != "records"} for a in lst]
                        for sub, lst in plan.items()
                    }
                    for vid, plan in plans.items()
                },
            },
        )
        tasks = {
            vertex.id: EpochTask(
                self.job_id,
                epoch,
                end_of_input,
                vertex.id,
                graph,
                self.storage,
                assignments=plans.get(vertex.id, {}),
                restore={
                    index: {
                        "keyed": self.manifests.get(vertex.id, {}).get(index),
                        "operators": self.operator_states[vertex.id].get(index, {}),
                    }
                    for index in range(vertex.parallelism)
                },
            )
            for vertex in self.job.vertices
        }
        description = f"lockgate {self.summary.job_name} epoch {epoch}"
        try:
            collected = spark_job.run(tasks, description)
        except JobExecutionError:
            raise
        except Exception as exc:
            raise job_failure(exc, epoch) from exc
        stats = self._complete_epoch(epoch, time.perf_counter() - started)
        self.summary.epochs.append(stats)
        if self.progress is not None:
            self.progress.report(stats)
        return EpochResult(stats, collected)

    def _complete_epoch(self, epoch: int, seconds: float) -> EpochStats:
        acks = []
        for vertex in self.job.vertices:
            for index in range(vertex.parallelism):
                path = ack_path(epoch, vertex.id, index)
                if not self.storage.exists(path):
                    raise JobExecutionError(
                        f"epoch {epoch}: subtask {index} of '{vertex.name}' (uid "
                        f"'{vertex.head.uid}') finished without acknowledging "
                        f"({self.storage.path(path)} is missing)"
                    )
                acks.append(self.storage.read_json(path))
        records = 0
        restored = 0
        progress_by_source: dict[int, dict[str, Any]] = {}
        for ack in acks:
            restored += bool(ack["restored"])
            self.operator_states[ack["vertex"]][ack["subtask"]] = ack["operators"]
            if ack["vertex"] in self.enumerators:
                records += ack["records_in"]
                progress_by_source.setdefault(ack["vertex"], {}).update(ack["source_progress"])
        for vertex_id, progress in progress_by_source.items():
            self.enumerators[vertex_id].acknowledge(progress)
        entries = self._advance_state(acks)
        self.storage.remove(f"epochs/{epoch - 1}")
        return EpochStats(epoch, records, seconds * 1000, self._state_bytes(), entries, restored)

    def _advance_state(self, acks: list[dict[str, Any]]) -> int:
        """Fold the acks' changed key groups into the manifests; drop unreferenced files."""
        before = self._referenced_files()
        entries = 0
        for ack in acks:
            state = ack["state"]
            if state is None:
                continue
            manifest = self.manifests[ack["vertex"]][ack["subtask"]]
            manifest["kinds"].update(state["kinds"])
            manifest["groups"].update(state["groups"])
            entries += state["entries"]
        for stale in before - self._referenced_files():
            self.storage.remove(stale)
        return entries

    def _referenced_files(self) -> set[str]:
        return {
            handle[0]
            for subtasks in self.manifests.values()
            for manifest in subtasks.values()
            for handle in manifest["groups"].values()
        }

    def _state_bytes(self) -> int:
        return sum(
            handle[2]
            for subtasks in self.manifests.values()
            for manifest in subtasks.values()
            for handle in manifest["groups"].values()
        )
