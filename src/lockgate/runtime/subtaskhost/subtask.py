"""One parallel subtask of a task (a chain of operators), as it lives in its host.

It survives from epoch to epoch in its host (``subtask_host``); after a failure, or on a
machine that did not host it, it is rebuilt and its keyed state restored from the files of
the previous epoch. Either way it starts epoch n from the state of epoch n-1.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pickle import loads
from typing import Any

from lockgate.common.output_tag import OutputTag
from lockgate.common.type_conversion import (
    Converter,
    RecordTypeError,
    record_converter,
    source_converter,
)
from lockgate.common.watermark_strategy import LONG_MAX, LONG_MIN
from lockgate.core.fs.storage import Storage
from lockgate.core.source import Source
from lockgate.graph.job_graph import JobEdge, JobGraph, JobVertex, StreamEdge, StreamNode
from lockgate.graph.transformations import PartitioningKind
from lockgate.runtime.messages.metric_value import MetricValue
from lockgate.runtime.messages.spark_items import HostOutput, RecordBatch
from lockgate.runtime.messages.task_deployment import BatchBounds, SubtaskRestore, run_parts
from lockgate.runtime.subtaskhost.channels import (
    BroadcastWriter,
    ChannelWriter,
    CustomPartitionWriter,
    ForwardWriter,
    KeyGroupWriter,
    RebalanceWriter,
    RescaleWriter,
    ShuffleWriter,
)
from lockgate.runtime.subtaskhost.context import RecordTimestamp, SubtaskRuntimeContext
from lockgate.runtime.subtaskhost.metrics import (
    NUM_RECORDS_IN,
    NUM_RECORDS_OUT,
    DerivedCount,
    OperatorMetrics,
)
from lockgate.runtime.subtaskhost.operators import (
    Operator,
    OperatorContext,
    _drop,
    create_operator,
    key_function,
)
from lockgate.runtime.subtaskhost.staging_log import StagingLog
from lockgate.runtime.subtaskhost.timestamps_and_watermarks import (
    SourceOperator,
    TimestampsAndWatermarksOperator,
)
from lockgate.runtime.subtaskhost.watermarks import ChannelEnd, combine
from lockgate.state.backend_settings import KeyedStateSettings
from lockgate.state.key_groups import key_group_range
from lockgate.state.keyed_backend import KeyedStateBackend
from lockgate.state.keyed_subtask import KeyedSubtask
from lockgate.state.manifests import CanonicalManifest, KeyedStateSnapshot
from lockgate.state.operator_state_backend import OperatorStateBackend
from lockgate.state.operator_state_handle import OperatorStateHandle
from lockgate.state.restore_operation import restore_operation
from lockgate.state.savepoint_state import write_savepoint_state

# Takes one shuffled batch to the head operator; returns the number of records in it.
BatchConsumer = Callable[[RecordBatch], int]


def _fan_out(targets: Sequence[Callable[[Any], None]]) -> Callable[[Any], None]:
    if not targets:
        return _drop
    if len(targets) == 1:
        return targets[0]

    def emit(value: Any) -> None:
        for target in targets:
            target(value)

    return emit


def _converting(
    operator: Operator, convert: Converter, downstream: Callable[[Any], None], declared: str
) -> Callable[[Any], None]:
    """Hands on each record as its declared type makes it (see type_conversion)."""

    def emit(value: Any) -> None:
        try:
            converted = convert(value)
        except RecordTypeError as exc:
            raise operator.failure(exc, value, declared) from exc
        downstream(converted)

    return emit


def _counting_output(operator: Operator, emit: Callable[[Any], None]) -> Callable[[Any], None]:
    """``emit``, counting the operator's numRecordsOut."""

    def counted(value: Any) -> None:
        operator.records_out += 1
        emit(value)

    return counted


def _counting_input(target: Operator) -> Callable[[Any], None]:
    """``target.process``, counting its numRecordsIn."""
    process = target.process

    def counted(value: Any) -> None:
        target.records_in += 1
        process(value)

    return counted


@dataclass(frozen=True)
class Route:
    """Where an operator's records go: a chained operator or a channel writer (``target``)
    over ``edge``. ``crosses`` says the record leaves PyFlink's Python chain there (to a
    shuffle or a sink), where PyFlink serializes it with its declared type. ``counted``: the
    target counts the records arriving here (its input is not simply its upstream's output)."""

    edge: StreamEdge  # its side output (output_tag) and that side output's type
    target: Operator
    crosses: bool
    counted: bool = False

    def deliver(self) -> Callable[[Any], None]:
        return _counting_input(self.target) if self.counted else self.target.process


def _emitter(
    operator: Operator, routes: list[Route], convert: Converter | None
) -> Callable[[Any], None]:
    """An operator's ``emit``: to the targets of its main output, and ``(tag, value)``
    outputs to the side output of that tag where one is read. As in PyFlink, a ``(tag,
    value)`` whose side output nobody reads goes to the main output as it is.

    Records are converted to their declared type where PyFlink converts them: main output
    records to the operator's ``output_type`` (``convert``) where they cross out of the
    chain, side output records to their OutputTag's type always (a side output leaves
    PyFlink's Python operator). Chained operators get main output records as returned."""
    main_routes = [route for route in routes if route.edge.output_tag is None]
    crossing = _fan_out([route.deliver() for route in main_routes if route.crosses])
    if convert is not None and crossing is not _drop:
        crossing = _converting(operator, convert, crossing, "its output_type")
    main = _fan_out(
        [route.deliver() for route in main_routes if not route.crosses]
        + ([crossing] if crossing is not _drop else [])
    )
    by_tag: dict[str, list[Callable[[Any], None]]] = {}
    for route in routes:
        edge = route.edge
        if edge.output_tag is None:
            continue
        side: Callable[[Any], None] = route.deliver()
        side_convert = record_converter(edge.side_output_type)
        if side_convert is not None:
            declared = f"the type_info of OutputTag '{edge.output_tag}'"
            side = _converting(operator, side_convert, side, declared)
        by_tag.setdefault(edge.output_tag, []).append(side)
    if not by_tag:
        return main
    sides = {tag: _fan_out(targets) for tag, targets in by_tag.items()}

    def emit(value: Any) -> None:
        if type(value) is tuple and len(value) == 2 and isinstance(value[0], OutputTag):
            side = sides.get(value[0].tag_id)
            if side is not None:
                side(value[1])
                return
        main(value)

    return emit


def _keyed_batches(head: Operator, target: Operator, key_fn: Any) -> BatchConsumer:
    """Batches of a key-group edge (their records come with their key groups) to a keyed
    head, through ``target`` (the head, or one input of a two-input head)."""

    def deliver(batch: RecordBatch) -> int:
        key_groups = batch.key_groups
        assert key_groups is not None  # a key-group edge's writer sends them
        head.records_in += len(batch.records)
        target.process_keyed_batch(key_groups, batch.records, key_fn, batch.timestamps)
        return len(batch.records)

    return deliver


def _unkeyed_batches(head: Operator, target: Operator) -> BatchConsumer:
    """Batches to an unkeyed head, through ``target`` (the key groups of a key-group edge go
    unused)."""

    def deliver(batch: RecordBatch) -> int:
        values = [loads(data) for data in batch.records]
        head.records_in += len(values)
        target.process_batch(values, batch.timestamps)
        return len(values)

    return deliver


def _single_upstream(vertex: JobVertex) -> dict[int, StreamNode]:
    """The chained operators whose only input is all the main output of one upstream
    operator (which has no side outputs), by node id: their numRecordsIn is that operator's
    numRecordsOut. The others count what they take (the head, its input batches)."""
    single = {}
    for node in vertex.nodes:
        if node is vertex.head or len(node.inputs) != 1 or node.inputs[0].output_tag is not None:
            continue
        source = node.inputs[0].source
        if all(edge.output_tag is None for edge in source.outputs):
            single[id(node)] = source
    return single


class Subtask:
    """The running operators, channel writers and keyed state of subtask ``index``.

    ``restore`` is the state of the previous epoch (keyed-state manifest, operator states).
    """

    def __init__(
        self,
        job: JobGraph,
        vertex: JobVertex,
        index: int,
        attempt: int,
        restore: SubtaskRestore,
        keyed_state: KeyedStateSettings,
        batch_bounds: BatchBounds,
    ):
        self.vertex = vertex
        self.index = index
        self.batch: bool = job.batch
        self.job_parameters: dict[str, str] = job.job_parameters
        self.record = RecordTimestamp()
        self.epoch = 0
        self.version: str | None = None  # of the last epoch it acknowledged (see EpochTask)
        self.outbox: list[HostOutput] = []
        self.batch_bounds = batch_bounds
        self.backend: KeyedStateBackend | None = None
        self.source: Source | None = None  # set by _build_chain for a source's chain
        self.restore = restore
        head = vertex.head
        self.keyed_subtask = KeyedSubtask(
            head.uid,
            head.name,
            index,
            f"op{vertex.id}-{index}",
            key_group_range(head.max_parallelism, head.parallelism, index),
            head.max_parallelism,
        )
        if vertex.keyed:
            self.backend = restore_operation(keyed_state).restore(
                self.keyed_subtask, restore.keyed, restore.claimed
            )
        try:
            self._build_chain(vertex, attempt)
        except BaseException:
            self.dispose()  # the restored instance must not outlive a chain that failed
            raise

    def _build_chain(self, vertex: JobVertex, attempt: int) -> None:
        """The chain's operators and channel writers, wired to each other."""
        head = vertex.head
        self.contexts: list[OperatorContext] = []
        self.operators: list[Operator] = []  # in chain order
        self.writers: list[tuple[int, ChannelWriter]] = []  # (node id, writer)
        built: dict[int, Operator] = {}
        self.source_operator: SourceOperator | None = None
        in_chain = {id(node) for node in vertex.nodes}
        edges_from: dict[int, list[Any]] = {}
        for edge in vertex.outputs:
            edges_from.setdefault(id(edge.stream_edge.source), []).append(edge)
        upstream = _single_upstream(vertex)
        for node in reversed(vertex.nodes):
            ctx = self._context(node, attempt)
            # its outputs: chained operators (a sink is outside PyFlink's Python chain), and
            # channel writers
            routes = [
                Route(
                    e,
                    built[id(e.target)],
                    e.target.is_sink,
                    counted=id(e.target) not in upstream,
                )
                for e in node.outputs
                if id(e.target) in in_chain
            ]
            for edge in edges_from.get(id(node), ()):
                writer = self._writer(edge, ctx)
                self.writers.append((id(node), writer))
                routes.append(Route(edge.stream_edge, writer, True))
            main_targets = [route.target for route in routes if route.edge.output_tag is None]
            output_type = node.transformation.output_type
            operator: Operator
            if node.is_source:
                # it converts what it reads itself, and hands it on in chunks
                typed = output_type is not None and output_type == node.source.produced_type
                source = SourceOperator(
                    ctx,
                    node.transformation.watermark_strategy,
                    None if typed else source_converter(output_type),
                )
                source.targets = main_targets  # a source has no side outputs
                operator = source
                self.source_operator = source
            else:
                operator = create_operator(node.spec, ctx, keyed=node is head and vertex.keyed)
                if isinstance(operator, TimestampsAndWatermarksOperator) and len(
                    main_targets
                ) == len(routes):
                    operator.targets = main_targets
                operator.emit = _emitter(operator, routes, record_converter(output_type))
                if not operator.one_to_one:
                    operator.emit = _counting_output(operator, operator.emit)
            built[id(node)] = operator
        for node_id, upstream_node in upstream.items():
            built[node_id].in_from = built[id(upstream_node)]
        self.operators = [built[id(n)] for n in vertex.nodes]
        for operator in self.operators:  # before open(), where functions register theirs
            operator.ctx.metrics.register(NUM_RECORDS_IN, DerivedCount(operator.counted_in))
            operator.ctx.metrics.register(NUM_RECORDS_OUT, DerivedCount(operator.counted_out))
        self.source = head.source if vertex.is_source else None
        # Per input edge: what takes one shuffled batch to the head operator.
        self.deliver: dict[int, BatchConsumer] = {}
        if not vertex.is_source:
            head_operator = built[id(head)]
            for edge in vertex.inputs:
                by_key = edge.partitioning.kind is PartitioningKind.KEY_GROUP
                target = head_operator.input(edge.stream_edge.input_index)
                if by_key and vertex.keyed:
                    key_fn = key_function(
                        edge.partitioning.key_selector, edge.partitioning.key_type
                    )
                    self.deliver[edge.id] = _keyed_batches(head_operator, target, key_fn)
                else:
                    self.deliver[edge.id] = _unkeyed_batches(head_operator, target)

    def _context(self, node: StreamNode, attempt: int) -> OperatorContext:
        where = f"operator '{node.name}' (uid '{node.uid}', subtask {self.index})"
        metrics = OperatorMetrics(where, time.monotonic)
        runtime_context = SubtaskRuntimeContext(
            node.name,
            self.index,
            node.parallelism,
            node.max_parallelism,
            attempt,
            self.job_parameters,
            self.backend if node is self.vertex.head else None,
            metrics.group(),
        )
        ctx = OperatorContext(
            node.name,
            node.uid,
            self.index,
            node.parallelism,
            runtime_context,
            self.backend,
            self.outbox,
            self.record,
            job_id=run_parts(self.restore.run)[0],
            generation=run_parts(self.restore.run)[1],
            managed_parts=self.restore.managed.get(node.uid, []),
            input_type=node.input_type,
            restored_epoch=self.restore.restored_epoch,
            batch=self.batch,
            max_record_bytes=self.batch_bounds.record_bytes,
            metrics=metrics,
        )
        self.contexts.append(ctx)
        return ctx

    def _writer(self, edge: JobEdge, ctx: OperatorContext) -> ChannelWriter:
        target = edge.target
        kind = edge.partitioning.kind
        timestamped = edge.stream_edge.source.timestamped
        if kind is PartitioningKind.KEY_GROUP:
            return KeyGroupWriter(
                ctx,
                edge.id,
                target.parallelism,
                self.batch_bounds,
                timestamped,
                key_function(edge.partitioning.key_selector, edge.partitioning.key_type),
                target.max_parallelism,
                target.head.name,
            )
        if kind is PartitioningKind.REBALANCE:
            return RebalanceWriter(ctx, edge.id, target.parallelism, self.batch_bounds, timestamped)
        if kind is PartitioningKind.RESCALE:
            return RescaleWriter(
                ctx,
                edge.id,
                edge.source.parallelism,
                target.parallelism,
                self.batch_bounds,
                timestamped,
            )
        if kind is PartitioningKind.SHUFFLE:
            return ShuffleWriter(ctx, edge.id, target.parallelism, self.batch_bounds, timestamped)
        if kind is PartitioningKind.CUSTOM:
            return CustomPartitionWriter(
                ctx,
                edge.id,
                target.parallelism,
                self.batch_bounds,
                timestamped,
                edge.partitioning.partitioner,
                edge.partitioning.key_selector,
            )
        if kind is PartitioningKind.BROADCAST:
            return BroadcastWriter(ctx, edge.id, target.parallelism, self.batch_bounds, timestamped)
        return ForwardWriter(ctx, edge.id, self.batch_bounds, timestamped)

    # Lifecycle -----------------------------------------------------------------------------

    def open(self) -> None:
        for _, writer in self.writers:  # partition_custom's functions
            writer.open()
        for operator in reversed(self.operators):
            operator.open()

    def begin_epoch(
        self,
        epoch: int,
        commit_on_checkpoint: bool,
        checkpoint: bool,
        attempt: str,
        staging: StagingLog,
        sink_files: str,
    ) -> None:
        self.epoch = epoch
        for ctx in self.contexts:
            ctx.sink_files = sink_files
            ctx.epoch = epoch
            ctx.commit_on_checkpoint = commit_on_checkpoint
            ctx.checkpoint = checkpoint
            ctx.attempt = attempt
            ctx.staging = staging

    def end_epoch(
        self,
        end_of_input: bool,
        source_ends: bool,
        records: int,
        channel_ends: dict[tuple[int, int], ChannelEnd],
        now_ms: int,
    ) -> None:
        """The epoch's input is consumed: advance event time through the chain (each
        operator fires its due timers before the next one moves on), then processing
        time, then flush, and end every output channel with the watermark it carries on.
        ``channel_ends`` are what the input channels' markers said (none for a source).
        A source whose input ends sends the end of event time, whatever the other sources
        do (as Flink's); ``end_of_input``, the end of all of them, ends the operators'
        input."""
        vertex = self.vertex
        status: dict[int, tuple[int, bool]] = {}
        for node, operator in zip(vertex.nodes, self.operators, strict=True):
            if node is not vertex.head:
                inputs = [status[id(edge.source)] for edge in node.inputs]
            elif vertex.is_source:
                inputs = [(LONG_MAX, False) if source_ends else (LONG_MIN, True)]
            else:
                inputs = self._input_channels(channel_ends)
            status[id(node)] = operator.advance_watermark(*combine(inputs, operator.watermark))
            if not self.batch:
                operator.advance_processing_time(now_ms)
            elif end_of_input:  # processing time stands still in BATCH until the end
                operator.advance_processing_time(LONG_MAX)
            if end_of_input:
                operator.end_input()
        for operator in self.operators:
            operator.end_epoch()
        for node_id, writer in self.writers:
            writer.end_channels(ChannelEnd(*status[node_id]))
        if self.backend is not None:
            self.backend.end_epoch(records)  # TTL cleanup

    def _input_channels(
        self, channel_ends: dict[tuple[int, int], ChannelEnd]
    ) -> list[tuple[int, bool]]:
        """(watermark, idle) of every input channel; each must have ended its epoch."""
        inputs = []
        for edge in self.vertex.inputs:
            senders = (
                [self.index]
                if edge.partitioning.kind is PartitioningKind.FORWARD
                else range(edge.source.parallelism)
            )
            for sender in senders:
                end = channel_ends.get((edge.id, sender))
                if end is None:
                    raise RuntimeError(
                        f"epoch {self.epoch}: subtask {self.index} of task {self.vertex.id} "
                        f"got no end-of-epoch marker from subtask {sender} of its input edge "
                        f"{edge.id}"
                    )
                inputs.append((end.watermark, end.idle))
        return inputs

    def metrics(self) -> dict[str, dict[str, MetricValue]]:
        """The current value of each operator's metrics, by operator uid."""
        return {ctx.uid: ctx.metrics.report() for ctx in self.contexts}

    def next_processing_time(self) -> int | None:
        """When the earliest processing-time timer of the chain is due (None: none, or
        BATCH, where they fire at the end of input)."""
        if self.batch:
            return None
        times = [t for t in (op.next_processing_time() for op in self.operators) if t is not None]
        return min(times) if times else None

    def close(self) -> None:
        for operator in self.operators:
            operator.close()
        for _, writer in self.writers:
            writer.close()

    # State ---------------------------------------------------------------------------------

    def restore_operator_states(self, operator_states: dict[str, Any]) -> None:
        for operator in self.operators:
            if operator.ctx.uid in operator_states:
                operator.restore_state(operator_states[operator.ctx.uid])

    def restore_watermarks(self, watermarks: dict[str, int]) -> None:
        for operator in self.operators:
            operator.watermark = watermarks.get(operator.ctx.uid, LONG_MIN)

    def watermarks(self) -> dict[str, int]:
        """Each operator's watermark, by uid (what a restore starts from)."""
        return {operator.ctx.uid: operator.watermark for operator in self.operators}

    def snapshot_operator_states(self) -> dict[str, Any]:
        states = {}
        for operator in self.operators:
            state = operator.snapshot_state()
            if state is not None:
                states[operator.ctx.uid] = state
        return states

    def snapshot_functions(self) -> dict[str, OperatorStateBackend]:
        """Let every ``CheckpointedFunction`` of the chain snapshot its state; the operator
        state of each operator that has some, by uid."""
        backends = {}
        for operator in self.operators:
            backend = operator.snapshot_function(self.epoch)
            if backend is not None:
                backends[operator.ctx.uid] = backend
        return backends

    def write_operator_state(
        self,
        backends: dict[str, OperatorStateBackend],
        storage: Storage,
        tag: str,
        savepoint: bool,
        digests: bool,
    ) -> dict[str, OperatorStateHandle]:
        """Write the operator states of ``snapshot_functions``: into the job's state files
        (by URL; a file of the previous epoch is named again when nothing changed), or into
        a savepoint's directory (by a path relative to it); with digests when ``digests``."""
        handles = {}
        for uid, backend in backends.items():
            relative = f"{uid}/{self.index}-{tag}.lgos"
            if not savepoint:
                relative = f"operator/{relative}"
            handle = backend.snapshot(storage, relative, reuse=not savepoint, digests=digests)
            if handle is not None:
                handles[uid] = replace(handle, file=relative) if savepoint else handle
        return handles

    def snapshot_state(
        self, storage: Storage, tag: str, checkpoint: bool, digests: bool
    ) -> KeyedStateSnapshot | None:
        """Persist the keyed state of this epoch; return what the ack reports of it."""
        if self.backend is None:
            return None
        return self.backend.snapshot(self.keyed_subtask, storage, tag, checkpoint, digests=digests)

    def savepoint_state(
        self, storage: Storage, tag: str, digests: bool
    ) -> CanonicalManifest | None:
        """Write the keyed state in canonical form into a savepoint's directory (``storage``),
        as ``<uid>/<subtask>-<tag>.lgcs``: attempts of one subtask write apart."""
        if self.backend is None:
            return None
        relative = f"{self.keyed_subtask.uid}/{self.keyed_subtask.index}-{tag}.lgcs"
        return write_savepoint_state(self.backend, self.keyed_subtask, storage, relative, digests)

    def dispose(self) -> None:
        """Release what the subtask holds outside the Python heap (a RocksDB instance, a
        source's client)."""
        if self.backend is not None:
            self.backend.dispose()
        if self.source is not None:
            self.source.close()

    def notify_checkpoint_complete(self, epoch: int) -> None:
        for operator in self.operators:
            operator.notify_checkpoint_complete(epoch)
