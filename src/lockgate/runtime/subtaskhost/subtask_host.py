"""Where one parallel subtask lives for its run (Flink: a task in its TaskManager slot).

The host keeps the subtask (its operators, user-function instances and state backend) from
epoch to epoch: ``open()`` runs when it is built and ``close()`` when the run ends for it (end
of input, release, or a failed epoch). Each epoch, a Spark task hands the host its input and
takes its output (``host_process`` puts a socket in between). The host reuses its subtask only
when it is the very version the driver accepted for epoch n-1; otherwise, as after a failure,
it rebuilds the subtask from the restore the task brings (checkpoint storage).
"""

from __future__ import annotations

import gc
import logging
import time
import traceback
from collections.abc import Callable
from itertools import islice
from pickle import loads

from lockgate.common.clock import processing_time_ms
from lockgate.core.fs.storage import Storage
from lockgate.core.source import SplitAssignment, SplitProgress
from lockgate.graph.shipped_graph import read_shipped
from lockgate.runtime.errors import InjectedFailure
from lockgate.runtime.messages.acknowledgement import SubtaskAck, ack_name, channel_name
from lockgate.runtime.messages.host_protocol import EpochDone, EpochStart, HostRequest
from lockgate.runtime.messages.spark_items import ChannelItem, HostOutput, ItemKind, SourceSplit
from lockgate.runtime.messages.task_deployment import SubtaskRestore, TaskDeploymentDescriptor
from lockgate.runtime.subtaskhost.staging_log import StagingLog
from lockgate.runtime.subtaskhost.subtask import Subtask
from lockgate.runtime.subtaskhost.watermarks import ChannelEnd
from lockgate.state.canonical_snapshot import CanonicalKeyError

log = logging.getLogger(__name__)

_SOURCE_CHUNK = 4096
_YOUNG_COLLECTION_ALLOCATIONS = 10_000


class _Epoch:
    """What the host tracks of the epoch it is running."""

    def __init__(self, task: TaskDeploymentDescriptor, start: EpochStart, restored: bool):
        self.task = task
        self.index = start.index
        self.version = start.attempt
        self.restored = restored
        self.started = time.perf_counter()
        self.records_in = 0
        self.progress: dict[str, SplitProgress] = {}
        self.consumed: dict[str, str] = {}
        self.channel_ends: dict[tuple[int, int], ChannelEnd] = {}
        self.assignments = 0


class SubtaskHost:
    """Holds subtask ``index`` of task ``vertex`` of ``run`` between epochs."""

    def __init__(self, request: HostRequest):
        self.run = request.run
        self.vertex = request.vertex
        self.index = request.index
        self.location = request.location
        self.subtask: Subtask | None = None
        self.epoch: _Epoch | None = None
        self._gc_frozen = False

    # An epoch ------------------------------------------------------------------------------

    def begin(self, start: EpochStart, graph: Callable[[], bytes]) -> None:
        """Start an epoch from the subtask of epoch n-1: the one held here if the driver
        accepted it, else one rebuilt from ``start.restore`` (``graph`` gives the job)."""
        if self.epoch is not None:
            self.abort()  # the task of an unfinished epoch is gone (killed, cancelled)
        task = start.descriptor
        if (task.run, task.vertex, start.index) != (self.run, self.vertex, self.index):
            raise RuntimeError(
                f"the host of subtask {self.index} of task {self.vertex} (run {self.run}) was "
                f"handed subtask {start.index} of task {task.vertex} (run {task.run})"
            )
        restore = start.restore
        restore.check(
            task.vertex,
            start.index,
            task.run,
            f"the restore of subtask {start.index} of task {task.vertex} (run {task.run})",
        )
        subtask = self.subtask
        # Reuse only the very version the driver accepted for epoch n-1: another attempt of
        # that epoch (a retry, a run cancelled by a timeout) may have finished here too, with
        # other input or other state files.
        reused = subtask is not None and restore.attempt == subtask.version
        if subtask is not None and not reused:
            self._retire()
        if self.subtask is None:
            self.subtask = self._build(task, start, restore, graph())
        subtask = self.subtask
        epoch = _Epoch(task, start, restored=not reused)
        self.epoch = epoch
        subtask.notify_checkpoint_complete(task.committed_epoch)
        staging = StagingLog(
            Storage(task.staging_url), task.epoch, task.vertex, start.index, start.attempt
        )
        subtask.begin_epoch(
            task.epoch,
            task.commit_on_checkpoint,
            task.checkpoint,
            start.attempt,
            staging,
            task.sink_files_url,
        )
        subtask.outbox.clear()

    def source(self, given: SourceSplit) -> list[HostOutput]:
        """Read one split assignment of a source subtask; the output it produced."""
        epoch, subtask = self._running()
        source, operator = subtask.source, subtask.source_operator
        if source is None or operator is None:
            raise RuntimeError(f"subtask {self.index} of task {self.vertex} reads no source")
        where = (
            f"split assignment {epoch.assignments} of epoch {epoch.task.epoch} to subtask "
            f"{self.index} of task {self.vertex}"
        )
        epoch.assignments += 1
        assignment = SplitAssignment.decode(given.assignment, where)
        reader = source.read(assignment, loads(given.payload), epoch.progress)
        split = assignment.split
        while True:
            chunk = list(islice(reader, _SOURCE_CHUNK))
            if source.timestamped:
                operator.emit_chunk(split, [r for r, _ in chunk], [t for _, t in chunk])
            else:
                operator.emit_chunk(split, chunk)
            epoch.records_in += len(chunk)
            if len(chunk) < _SOURCE_CHUNK:
                break
        operator.split_read(split, epoch.progress.get(split))
        return self._drain(subtask)

    def batch(self, item: ChannelItem) -> list[HostOutput]:
        """Process one shuffled batch, or the sender's end-of-epoch marker
        (``CHANNEL_END``), which carries its watermark."""
        epoch, subtask = self._running()
        edge, sender, attempt = item.edge, item.sender, item.attempt
        channel = channel_name(edge, sender)
        if epoch.consumed.setdefault(channel, attempt) != attempt:
            raise RuntimeError(  # Spark reads one map output per partition
                f"epoch {epoch.task.epoch}: subtask {self.index} of task {self.vertex} received "
                f"the output of two attempts of subtask {sender} of its input edge {edge}: "
                f"{epoch.consumed[channel]} and {attempt}"
            )
        if item.kind is ItemKind.BATCH:
            epoch.records_in += subtask.deliver[edge](loads(item.payload))
            return self._drain(subtask)
        if item.kind is ItemKind.CHANNEL_END:
            where = (
                f"the end-of-epoch marker of subtask {sender} of edge {edge} to subtask "
                f"{self.index} of task {self.vertex} (epoch {epoch.task.epoch})"
            )
            epoch.channel_ends[(edge, sender)] = ChannelEnd.decode(item.payload, where)
            return []
        raise RuntimeError(
            f"subtask {self.index} of task {self.vertex} was handed a {item.kind.name} item"
        )

    def finish(self) -> tuple[list[HostOutput], EpochDone]:
        """End the epoch: snapshot the state, write the ack, and at the end of input close
        the subtask."""
        epoch, subtask = self._running()
        task = epoch.task
        now = processing_time_ms()
        subtask.end_epoch(
            task.end_of_input, task.source_ends, epoch.records_in, epoch.channel_ends, now
        )
        outputs = self._drain(subtask)
        backends = subtask.snapshot_functions()
        state_files = Storage(task.state_url)
        digests = task.state_digests
        state = subtask.snapshot_state(state_files, epoch.version, task.checkpoint, digests)
        managed = subtask.write_operator_state(backends, state_files, epoch.version, False, digests)
        savepoint = savepoint_error = None
        savepoint_managed = {}
        if task.savepoint_url is not None:
            savepoint_files = Storage(task.savepoint_url)
            savepoint_managed = subtask.write_operator_state(
                backends, savepoint_files, epoch.version, True, digests
            )
            try:
                savepoint = subtask.savepoint_state(savepoint_files, epoch.version, digests)
            except CanonicalKeyError as exc:  # the savepoint fails, not the job
                savepoint_error = str(exc)
        operator_states = subtask.snapshot_operator_states()
        if task.inject_failure:
            raise InjectedFailure(
                f"injected failure after the snapshot of epoch {task.epoch}, before its ack "
                f"(subtask {self.index} of task {self.vertex})"
            )
        ack = SubtaskAck(
            vertex=task.vertex,
            subtask=self.index,
            epoch=task.epoch,
            run=task.run,
            attempt=epoch.version,
            records_in=epoch.records_in,
            source_progress=epoch.progress,
            state=state,
            savepoint=savepoint,
            savepoint_error=savepoint_error,
            operators=operator_states,
            watermarks=subtask.watermarks(),
            next_timer_in_ms=_delay(subtask.next_processing_time(), now),
            restored=epoch.restored,
            location=self.location,
            duration_ms=(time.perf_counter() - epoch.started) * 1000,
            consumed=epoch.consumed,
            metrics=subtask.metrics(),
            managed=managed,
            savepoint_managed=savepoint_managed,
        )
        Storage(task.work_url).create(
            ack_name(task.ack_dir, task.vertex, self.index, epoch.version), ack.encode()
        )
        subtask.version = epoch.version
        self.epoch = None
        if task.end_of_input:
            self.subtask = None
            try:
                subtask.close()
            finally:
                subtask.dispose()
        return outputs, EpochDone(closed=task.end_of_input)

    def abort(self) -> None:
        """The running epoch failed or its task went away: the subtask is half through it,
        so it is closed and released; the next epoch rebuilds it from epoch n-1."""
        self.epoch = None
        self._retire()

    def release(self) -> str | None:
        """The run is over for this host: close the subtask. Returns close()'s error."""
        self.epoch = None
        return self._retire()

    def discard(self) -> None:
        """The executor is going away: release the subtask's resources (a RocksDB instance)
        without running user code."""
        subtask, self.subtask = self.subtask, None
        if subtask is not None:
            subtask.dispose()

    # Helpers -------------------------------------------------------------------------------

    def _running(self) -> tuple[_Epoch, Subtask]:
        if self.epoch is None or self.subtask is None:
            raise RuntimeError(
                f"subtask {self.index} of task {self.vertex}: input arrived outside an epoch"
            )
        return self.epoch, self.subtask

    @staticmethod
    def _drain(subtask: Subtask) -> list[HostOutput]:
        outbox = subtask.outbox
        items = outbox[:]
        outbox.clear()
        return items

    def _build(
        self,
        task: TaskDeploymentDescriptor,
        start: EpochStart,
        restore: SubtaskRestore,
        graph: bytes,
    ) -> Subtask:
        """The subtask as of epoch n-1, from its restore (manifest and operator states)."""
        job = read_shipped(graph, f"subtask {start.index} of task {task.vertex}")
        subtask = Subtask(
            job,
            job.vertex(task.vertex),
            start.index,
            start.attempt_number,
            restore,
            task.keyed_state,
            task.batch_bounds,
        )
        try:
            subtask.restore_operator_states(restore.operators)
            subtask.restore_watermarks(restore.watermarks)
            subtask.open()
        except BaseException:
            subtask.dispose()
            raise
        self._freeze_long_lived()
        return subtask

    def _retire(self) -> str | None:
        """Close and release the held subtask, if any; close()'s error is logged, not
        raised: the instance is being replaced (Flink closes operators of a failed task)."""
        subtask, self.subtask = self.subtask, None
        if subtask is None:
            return None
        try:
            subtask.close()
            return None
        except Exception:
            report = traceback.format_exc()
            log.warning(
                "close() of subtask %d of task %d failed:\n%s", self.index, self.vertex, report
            )
            return report
        finally:
            subtask.dispose()

    def _freeze_long_lived(self) -> None:
        """Move what lives as long as the host (modules, the job graph, the subtask) out of
        the collector's reach, once: full collections would otherwise walk it again and
        again. And collect the young generation every 10,000 allocations, not 700: most of
        what a subtask allocates survives as state (a window's key and namespace, a timer),
        and at 700 the collector walked it so often that it cost a window operator about a
        third of its time per element."""
        if not self._gc_frozen:
            gc.collect()
            gc.freeze()
            gc.set_threshold(_YOUNG_COLLECTION_ALLOCATIONS, *gc.get_threshold()[1:])
            self._gc_frozen = True


def _delay(due_ms: int | None, now_ms: int) -> int | None:
    return None if due_ms is None else max(0, due_ms - now_ms)
