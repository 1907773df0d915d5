"""Epochs of a small keyed job run in-process, without Spark (not a test module).

``EpochTask`` is called directly. A *worker* stands for the subtask hosts of one executor:
``Hosts``, real ``SubtaskHost``s run in this process (the socket between a task and its host
is left out; ``host_process`` has its own tests). A *host* is a RocksDB local directory:
workers on one host share its local snapshots. The driver side follows ``JobMaster``: the
attempt that ran last is the one accepted (as if Spark had used its output), and after an
epoch the state files that the accepted acks wrote are deleted once neither the current
manifests nor the latest checkpoint (the only one retained) reference them.

The job: a collection source of ``(key, n)`` records, keyed by ``key``, into a process
function that counts each key's records in a ValueState named "count" (and whatever
``then`` chains after it).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsspec.core import url_to_fs
from pyspark import cloudpickle

from lockgate.common.clock import processing_time_ms
from lockgate.core.fs.storage import Storage
from lockgate.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from lockgate.datastream.state import ValueStateDescriptor
from lockgate.graph.job_graph import build_job_graph
from lockgate.graph.shipped_graph import ship
from lockgate.runtime.jobmaster.job_state import JobState
from lockgate.runtime.messages.acknowledgement import SubtaskAck, ack_name
from lockgate.runtime.messages.host_protocol import EpochStart, RunAccess
from lockgate.runtime.messages.spark_items import ChannelItem, HostOutput, SourceSplit
from lockgate.runtime.messages.task_deployment import BatchBounds, TaskDeploymentDescriptor
from lockgate.runtime.sparktask import epoch_task
from lockgate.runtime.sparktask.epoch_task import EpochTask, source_input
from lockgate.runtime.subtaskhost.subtask_host import SubtaskHost
from lockgate.state import manifests
from lockgate.state.backend_settings import KeyedStateSettings, instances_directory
from lockgate.state.key_groups import key_group_for_hash, key_group_range
from lockgate.state.key_hash import stable_key_hash
from lockgate.state.keyed_subtask import KeyedSubtask
from lockgate.state.restore_operation import restore_operation
from lockgate.state.rocksdb import RocksDBSettings

ROCKSDB = manifests.ROCKSDB
HASHMAP = manifests.HASHMAP
COUNT = ValueStateDescriptor("count")
# Small buffers: the tests open many instances
SMALL_ROCKSDB = RocksDBSettings(write_buffer_bytes=1 << 20, block_cache_bytes=1 << 20)


def first(record: tuple[Any, Any]) -> Any:
    return record[0]


def state_files(state: JobState) -> set[str]:
    """Every file the live state of the job's keyed subtasks names."""
    return set().union(*state.subtask_files().values())


class Count(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(COUNT)

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)


class FailingOpen(Count):
    def open(self, runtime_context):
        super().open(runtime_context)
        raise RuntimeError("user open() failed")


class Hosts:
    """The subtask hosts of one executor, in this process. A failing call aborts the host's
    epoch, as ``host_process`` does."""

    current: Hosts | None = None  # where the running task is

    def __init__(self) -> None:
        self.hosts: dict[tuple[str, int, int], SubtaskHost] = {}

    @classmethod
    def open_session(cls, access: RunAccess, vertex: int, index: int) -> _Session:
        assert cls.current is not None
        hosts = cls.current.hosts
        place = (access.run, vertex, index)
        host = hosts.setdefault(place, SubtaskHost(access.request(vertex, index, "")))
        return _Session(host, lambda: hosts.pop(place, None))

    def live(self, run: str) -> dict[tuple[int, int], Any]:
        return {
            (vertex, index): host.subtask
            for (r, vertex, index), host in self.hosts.items()
            if r == run and host.subtask is not None
        }

    def runs(self) -> list[str]:
        return sorted({run for (run, _, _), host in self.hosts.items() if host.subtask})

    def release(self, run: str) -> None:
        for place in [place for place in self.hosts if place[0] == run]:
            self.hosts.pop(place).release()

    def discard(self) -> None:
        for host in self.hosts.values():
            host.discard()
        self.hosts.clear()


class _Session:
    def __init__(self, host: SubtaskHost, exit_host: Callable[[], Any]):
        self.host = host
        self.exit_host = exit_host

    def _call(self, call: Callable[..., Any], *args: Any) -> Any:
        try:
            return call(*args)
        except Exception:
            self.host.abort()
            raise

    def begin(self, start: EpochStart, graph: Callable[[], bytes]) -> None:
        self._call(self.host.begin, start, graph)

    def source(self, split: SourceSplit) -> list[HostOutput]:
        return self._call(self.host.source, split)

    def batch(self, item: ChannelItem) -> list[HostOutput]:
        return self._call(self.host.batch, item)

    def finish(self) -> list[HostOutput]:
        outputs, done = self._call(self.host.finish)
        if done.closed:
            self.exit_host()
        return outputs

    def close(self) -> None:
        pass


class _Broadcast:
    def __init__(self, value: bytes):
        self.value = value


@dataclass
class FakeTaskContext:
    """What EpochTask asks of Spark's TaskContext."""

    attempt_number: int  # restarts at 0 in a resubmitted stage
    task_attempt_id: int  # unique in the application

    def attemptNumber(self) -> int:
        return self.attempt_number

    def taskAttemptId(self) -> int:
        return self.task_attempt_id


class _TaskContext:
    """Stands in for pyspark.TaskContext in epoch_task: ``current`` is the running task's."""

    current: FakeTaskContext | None = None

    @classmethod
    def get(cls) -> FakeTaskContext | None:
        return cls.current


# Spark's task attempt ids count up across the application
_attempt_ids = itertools.count(1)


class Cluster:
    """One job's driver, and the workers and hosts its tasks run on."""

    def __init__(
        self,
        root: Path,
        monkeypatch: Any,
        records: list[tuple[Any, Any]],
        backend: str = ROCKSDB,
        function: KeyedProcessFunction | None = None,
        job_id: str = "job",
        workers: dict[str, Hosts] | None = None,
        then: Callable[[Any], Any] | None = None,
        batch_bounds: BatchBounds | None = None,
    ):
        self.root = root
        self.records = records
        self.backend = backend
        self.job_id = job_id
        self.batch_bounds = batch_bounds or BatchBounds(2048, 1 << 20, 1 << 30)
        env = StreamExecutionEnvironment()
        env.set_parallelism(1)
        counted = env.from_collection(records).key_by(first).process(function or Count())
        if then is not None:
            then(counted)  # operators chained after the counting function
        self.job = build_job_graph(env._transformations, 1, None)
        self.source, self.counter = self.job.vertices
        self.graph = _Broadcast(ship(cloudpickle.dumps(self.job)))
        self.state = JobState(self.job, backend)
        self.work = Storage(f"file://{root}/work")
        self.files = Storage(f"file://{root}/state")
        self.workers: dict[str, Hosts] = {} if workers is None else workers
        self.generation = 0
        self.tries = 0
        self.written: set[str] = set()  # files of accepted acks (JobMaster.written_files)
        self.checkpointed: set[str] = set()  # files of the latest checkpoint
        monkeypatch.setattr(epoch_task, "open_session", Hosts.open_session)
        monkeypatch.setattr(epoch_task, "TaskContext", _TaskContext)
        monkeypatch.setattr(SubtaskHost, "_freeze_long_lived", lambda self: None)

    @property
    def run_id(self) -> str:
        return f"{self.job_id}#{self.generation}"

    @property
    def access(self) -> RunAccess:
        return RunAccess(self.run_id, 64, "00" * 32)

    def settings(self, host: str) -> KeyedStateSettings:
        return KeyedStateSettings(
            backend=self.backend,
            job_id=self.job_id,
            incremental=True,
            local_dirs=(str(self.root / host),),
            rocksdb=SMALL_ROCKSDB,
        )

    def local_dir(self, host: str, vertex: Any = None) -> Path:
        """The directory of a subtask's instances and local snapshots on ``host``."""
        vertex = vertex or self.counter
        return self.root / host / instances_directory() / self.job_id / f"op{vertex.id}-0"

    def instance_dirs(self, host: str) -> list[Path]:
        return sorted(self.local_dir(host).glob("db-*"))

    # Tasks and epochs ----------------------------------------------------------------------

    def run_task(
        self,
        vertex: Any,
        epoch: int,
        tag: str,
        items: list[Any],
        worker: str,
        host: str,
        attempt_number: int = 0,
        checkpoint: bool = False,
    ) -> tuple[list[Any], str]:
        """Runs one task; returns its output and its attempt."""
        descriptor = TaskDeploymentDescriptor(
            vertex=vertex.id,
            source=vertex.is_source,
            run=self.run_id,
            epoch=epoch,
            end_of_input=False,
            source_ends=False,
            savepoint_url=None,
            tag=tag,
            checkpoint=checkpoint,
            ack_dir=f"epochs/{tag}",
            committed_epoch=0,
            commit_on_checkpoint=False,
            reports_attempt=False,
            inject_failure=False,
            work_url=self.work.url,
            state_url=self.files.url,
            staging_url=self.work.child("staging").url,
            sink_files_url=self.work.child("sink-files").url,
            keyed_state=self.settings(host),
            batch_bounds=self.batch_bounds,
            state_digests=False,
        )
        [restore] = self.state.restore_for(vertex, self.run_id)
        if vertex.is_source:
            task = EpochTask(descriptor, self.graph, None, self.access)
            items = [(restore.encode(), items)]
        else:
            task = EpochTask(descriptor, self.graph, [restore.encode()], self.access)
        attempt_id = next(_attempt_ids)
        _TaskContext.current = FakeTaskContext(attempt_number, attempt_id)
        Hosts.current = self.workers.setdefault(worker, Hosts())
        try:
            return list(task(0, iter(items))), f"{tag}a{attempt_id}"
        finally:
            _TaskContext.current = None
            Hosts.current = None

    def begin_epoch(self, max_records: int = 10, checkpoint: bool = False) -> Epoch:
        """Plans the next epoch and runs its source subtask (on worker "src")."""
        self.tries += 1
        epoch = self.state.epoch + 1
        tag = f"e{epoch}-g{self.generation}t{self.tries}"
        [enumerator] = self.state.enumerators.values()
        items = source_input(enumerator, enumerator.plan(max_records).get(0, []))
        out, attempt = self.run_task(self.source, epoch, tag, items, "src", "src")
        return Epoch(self, epoch, tag, out, attempt, checkpoint)

    def epoch(self, worker: str, host: str = "a", max_records: int = 10, **kw: Any) -> SubtaskAck:
        """A whole epoch with the counting subtask on ``worker``; its accepted ack."""
        run = self.begin_epoch(max_records, **kw)
        run.run(worker, host)
        return run.accept()

    def restart(self) -> None:
        """A new generation of the job, from no state (as after a restart without checkpoint):
        the driver first releases the subtasks of the run that failed, everywhere."""
        for hosts in self.workers.values():
            hosts.release(self.run_id)
        self.generation += 1
        self.state.reset()

    # Inspection ----------------------------------------------------------------------------

    def live(self, worker: str, run_id: str | None = None) -> dict[tuple[int, int], Any]:
        hosts = self.workers.get(worker)
        return hosts.live(run_id or self.run_id) if hosts is not None else {}

    def manifest(self) -> manifests.KeyedStateManifest:
        return self.state.manifests[self.counter.id][0]

    def missing_files(self) -> list[str]:
        """Files that the accepted state references but storage does not hold."""
        missing = []
        for url in sorted(state_files(self.state)):
            fs, path = url_to_fs(url)
            if not fs.exists(path):
                missing.append(url)
        return missing

    def accepted_counts(self) -> dict[Any, int | None]:
        """The count of every key in the state the driver accepted, read by restoring it on a
        host of its own (from checkpoint storage)."""
        vertex = self.counter
        key_groups = key_group_range(vertex.max_parallelism, vertex.parallelism, 0)
        [saved] = self.state.restore_for(vertex, self.run_id)
        subtask = KeyedSubtask(
            vertex.head.uid, vertex.name, 0, f"op{vertex.id}-0", key_groups, vertex.max_parallelism
        )
        backend = restore_operation(self.settings("reader")).restore(subtask, saved.keyed, True)
        try:
            state = backend.get_state(COUNT)
            counts = {}
            for key in sorted({key for key, _ in self.records}):
                group = key_group_for_hash(stable_key_hash(key), vertex.max_parallelism)
                backend.set_current_key(group, key)
                counts[key] = state.value()
            return counts
        finally:
            dispose = getattr(backend, "dispose", None)
            if dispose is not None:
                dispose()

    def close(self) -> None:
        for hosts in self.workers.values():
            hosts.discard()


class Epoch:
    """One try of an epoch whose source subtask ran; its counting subtask may run on several
    workers (retries, speculative copies) before the driver accepts the last ack."""

    def __init__(
        self,
        cluster: Cluster,
        number: int,
        tag: str,
        source_out: list,
        source_attempt: str,
        checkpoint,
    ):
        self.cluster = cluster
        self.number = number
        self.tag = tag
        self.source_out = source_out
        self.attempts = {cluster.source.id: source_attempt}
        self.checkpoint = checkpoint

    @property
    def ack_dir(self) -> str:
        return f"epochs/{self.tag}"

    def run(self, worker: str, host: str = "a", attempt_number: int = 0) -> SubtaskAck:
        """Runs the counting subtask on ``worker``; returns the ack it wrote."""
        c = self.cluster
        _, attempt = c.run_task(
            c.counter,
            self.number,
            self.tag,
            self.source_out,
            worker,
            host,
            attempt_number,
            self.checkpoint,
        )
        self.attempts[c.counter.id] = attempt
        return self.read_ack(c.counter.id, attempt)

    def read_ack(self, vertex_id: int, attempt: str) -> SubtaskAck:
        path = ack_name(self.ack_dir, vertex_id, 0, attempt)
        return SubtaskAck.from_json(self.cluster.work.read_json(path), path)

    def accept(self) -> SubtaskAck:
        """The driver's side (JobMaster): apply the acks, complete the checkpoint if one is
        due, drop the files nothing references."""
        c = self.cluster
        acks = [self.read_ack(v.id, self.attempts[v.id]) for v in c.job.vertices]
        c.state.apply_acks(self.number, acks, processing_time_ms())
        c.work.remove(self.ack_dir)
        for ack in acks:
            if ack.state:
                c.written |= manifests.urls(ack.state.changes)
        if self.checkpoint:
            c.checkpointed = state_files(c.state)
        needed = state_files(c.state) | c.checkpointed
        for url in c.written - needed:
            c.files.discard(url)
        c.written &= needed
        [keyed] = [ack for ack in acks if ack.vertex == c.counter.id]
        return keyed
