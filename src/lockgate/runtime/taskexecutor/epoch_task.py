"""What a Spark task runs: one subtask of one task for one epoch.

The task attaches its subtask (from the worker's memory when it holds the state of epoch
n-1, otherwise rebuilt from files), feeds it the epoch's input in a deterministic order,
snapshots the keyed state it changed, and writes its acknowledgement. Output records leave
as Spark partition items while the input is processed.
"""

from __future__ import annotations

import gc
import json
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from pyspark import TaskContext, cloudpickle

from lockgate.checkpoint.staged_files import StagingLog
from lockgate.checkpoint.storage import Storage
from lockgate.runtime.acknowledgement import SubtaskAck, ack_name, channel_name
from lockgate.runtime.errors import InjectedFailure
from lockgate.runtime.keyed_state import KeyedStateSettings
from lockgate.runtime.taskexecutor.channels import BatchBounds
from lockgate.runtime.taskexecutor.operators import ATTEMPT_TAG
from lockgate.runtime.taskexecutor.subtask import Subtask

_SOURCE_CHUNK = 4096
_JOBS_KEPT = 2

# Per Python worker: the live subtasks of the most recent jobs, by job id.
_live: OrderedDict[str, dict[tuple[int, int], Subtask]] = OrderedDict()


def _live_subtasks(run_id: str) -> dict[tuple[int, int], Subtask]:
    live = _live.get(run_id)
    if live is None:
        job = run_id.partition("#")[0]
        for other in [r for r in _live if r.partition("#")[0] == job]:
            for stale in _live.pop(other).values():
                stale.dispose()  # a restart made them stale
        live = _live[run_id] = {}
        while len(_live) > _JOBS_KEPT:
            for stale in _live.popitem(last=False)[1].values():
                stale.dispose()
    else:
        _live.move_to_end(run_id)
    return live


def _dispose_superseded(live: dict[tuple[int, int], Subtask], epoch: int) -> None:
    """Every subtask runs in every epoch: one this worker last ran before epoch n-1 has run
    elsewhere since. Release it now, so its RocksDB instance stops compacting for nothing."""
    for place in [place for place, subtask in live.items() if subtask.epoch < epoch - 1]:
        live.pop(place).dispose()


_gc_frozen = False


def _freeze_long_lived() -> None:
    """PySpark's daemon runs a full gc.collect() after every task of a reused worker; move
    what lives as long as the worker (modules, graph, subtasks built so far) out of its
    reach, once per worker."""
    global _gc_frozen
    if not _gc_frozen:
        gc.collect()
        gc.freeze()
        _gc_frozen = True


def _drain(outbox: list[Any]) -> list[Any]:
    items = outbox[:]
    outbox.clear()
    return items


@dataclass
class EpochTask:
    """The function Spark maps over the partitions of one task's stage in one epoch."""

    run_id: str  # job id and restart generation: worker-held subtasks belong to one run
    epoch: int
    end_of_input: bool
    vertex_id: int
    graph: Any  # a Spark broadcast of the cloudpickled job graph
    work: Storage  # acknowledgements go here
    state: Storage  # keyed-state files go here
    staging: Storage  # staging records (files created outside the job's directories)
    keyed_state: KeyedStateSettings
    batch_bounds: BatchBounds  # of the shuffle batches the subtask's channel writers send
    tag: str  # names this epoch's state files; unique per run and try
    checkpoint: bool  # this epoch ends with a checkpoint
    ack_dir: str
    committed_epoch: int  # sinks may forget what checkpoints up to this epoch committed
    commit_on_checkpoint: bool  # exactly-once sinks wait for checkpoints to publish
    restore: dict[int, dict[str, Any]] = field(default_factory=dict)
    reports_attempt: bool = False  # the task's output reaches the driver (a result stage)
    inject_failure: bool = False  # fail after the snapshot, before the ack (tests)

    def __call__(self, index: int, items: Iterator[Any]) -> Iterator[Any]:
        started = time.perf_counter()
        context = TaskContext.get()
        attempt = context.attemptNumber() if context is not None else 0
        # Unique in the application (a resubmitted stage counts attempts from 0 again): names
        # this attempt's state files and the version of the subtask it leaves behind
        version = f"{self.tag}a{context.taskAttemptId() if context is not None else 0}"
        saved = self.restore.get(index, {})
        live = _live_subtasks(self.run_id)
        _dispose_superseded(live, self.epoch)
        subtask = live.pop((self.vertex_id, index), None)
        # Reuse only the very version the driver accepted for epoch n-1: another attempt of
        # that epoch (a retry, a speculative copy, a run cancelled by a timeout) may have
        # finished here too, with other input or other state files.
        reused = subtask is not None and saved.get("version") == subtask.version
        if not reused:
            if subtask is not None:
                subtask.dispose()
            subtask = None
        try:
            if subtask is None:
                subtask = self._build(index, attempt, saved)
            yield from self._run(subtask, index, version, items, reused, started)
        except BaseException:
            if subtask is not None:
                subtask.dispose()  # half through the epoch: a retry starts from epoch n-1
            raise
        if self.end_of_input:
            subtask.close()
            subtask.dispose()
        else:
            live[(self.vertex_id, index)] = subtask
        _freeze_long_lived()

    def _build(self, index: int, attempt: int, saved: dict[str, Any]) -> Subtask:
        """The subtask as of epoch n-1, from ``saved`` (manifests and operator states)."""
        # Each subtask unpickles its own copy of the graph: user functions keep per-instance
        # fields (state handles from open()), as in Flink.
        job = cloudpickle.loads(self.graph.value)
        subtask = Subtask(
            job,
            job.vertex(self.vertex_id),
            index,
            attempt,
            saved,
            self.keyed_state,
            self.batch_bounds,
        )
        try:
            subtask.restore_operator_states(saved)
            subtask.open()
        except BaseException:
            subtask.dispose()
            raise
        return subtask

    def _run(
        self,
        subtask: Subtask,
        index: int,
        version: str,
        items: Iterator[Any],
        reused: bool,
        started: float,
    ) -> Iterator[Any]:
        subtask.notify_checkpoint_complete(self.committed_epoch)
        staging = StagingLog(self.staging, self.epoch, self.vertex_id, index, version)
        subtask.begin_epoch(self.epoch, self.commit_on_checkpoint, version, staging)
        outbox = subtask.outbox
        outbox.clear()
        progress: dict[str, Any] = {}
        consumed: dict[str, str] = {}
        records_in = 0
        if subtask.source is not None:
            emit_batch = subtask.source_emit_batch
            # The source's assignments arrive as this partition's data (see EpochJob).
            for assignment in [a for part in items for a in part]:
                reader = subtask.source.read(assignment, progress)
                while True:
                    chunk = list(islice(reader, _SOURCE_CHUNK))
                    emit_batch(chunk)
                    records_in += len(chunk)
                    if outbox:
                        yield from _drain(outbox)
                    if len(chunk) < _SOURCE_CHUNK:
                        break
        else:
            deliver = subtask.deliver
            batches = sorted((payload for _, payload in items), key=_channel_order)
            for edge_id, sender, sender_attempt, _, batch in batches:
                channel = channel_name(edge_id, sender)
                if consumed.setdefault(channel, sender_attempt) != sender_attempt:
                    raise RuntimeError(  # Spark reads one map output per partition
                        f"epoch {self.epoch}: subtask {index} of task {self.vertex_id} received "
                        f"the output of two attempts of subtask {sender} of its input edge "
                        f"{edge_id}: {consumed[channel]} and {sender_attempt}"
                    )
                if batch is None:
                    continue  # the marker naming the attempt (see ChannelWriter.end_epoch)
                records_in += deliver[edge_id](batch)
                if outbox:
                    yield from _drain(outbox)
        subtask.end_epoch(self.end_of_input, records_in)
        yield from _drain(outbox)
        state = subtask.snapshot_state(self.state, version, self.checkpoint)
        operator_states = subtask.snapshot_operator_states()
        if self.inject_failure:
            raise InjectedFailure(
                f"injected failure after the snapshot of epoch {self.epoch}, before its ack "
                f"(subtask {index} of task {self.vertex_id})"
            )
        ack = SubtaskAck(
            vertex=self.vertex_id,
            subtask=index,
            epoch=self.epoch,
            run=self.run_id,
            attempt=version,
            records_in=records_in,
            source_progress=progress,
            state=state,
            operators=operator_states,
            restored=not reused,
            duration_ms=(time.perf_counter() - started) * 1000,
            consumed=consumed,
        )
        document = json.dumps(ack.to_json(), separators=(",", ":")).encode()
        self.work.create(ack_name(self.ack_dir, self.vertex_id, index, version), document)
        subtask.version = version
        if self.reports_attempt:
            yield ATTEMPT_TAG, (self.vertex_id, index, version)


def _channel_order(payload: tuple[int, int, str, int, Any]) -> tuple[int, int, int]:
    return payload[0], payload[1], payload[3]
