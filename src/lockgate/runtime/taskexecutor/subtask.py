"""One parallel subtask of a task (a chain of operators), as it lives in its host.

It survives from epoch to epoch in its host (``subtask_host``); after a failure, or on a
machine that did not host it, it is rebuilt and its keyed state restored from the files of
the previous epoch. Either way it starts epoch n from the state of epoch n-1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pickle import loads
from typing import Any

from lockgate.checkpoint.staged_files import StagingLog
from lockgate.checkpoint.storage import Storage
from lockgate.runtime.task_deployment import BatchBounds, SubtaskRestore
from lockgate.runtime.taskexecutor.channels import (
    ForwardWriter,
    KeyGroupWriter,
    RebalanceWriter,
)
from lockgate.runtime.taskexecutor.context import SubtaskRuntimeContext
from lockgate.runtime.taskexecutor.operators import (
    Operator,
    OperatorContext,
    _drop,
    resolve_callable,
)
from lockgate.state.backend_settings import KeyedStateSettings
from lockgate.state.key_groups import key_group_range
from lockgate.state.keyed_subtask import KeyedSubtask
from lockgate.state.manifests import KeyedStateSnapshot
from lockgate.state.rocksdb import RocksDBKeyedStateBackend
from lockgate.state.snapshot_strategy import KeyedStateBackend, snapshot_strategy

# Takes one shuffled batch to the head operator; returns the number of records in it.
BatchConsumer = Callable[[Any], int]


def _fan_out(targets: Sequence[Callable[[Any], None]]) -> Callable[[Any], None]:
    if not targets:
        return _drop
    if len(targets) == 1:
        return targets[0]

    def emit(value: Any) -> None:
        for target in targets:
            target(value)

    return emit


def _keyed_batches(head: Operator, key_fn: Any) -> BatchConsumer:
    def deliver(batch: tuple[list[int], list[bytes]]) -> int:
        head.process_keyed_batch(batch[0], batch[1], key_fn)
        return len(batch[1])

    return deliver


def _unkeyed_batches(process: Callable[[Any], None], keyed_edge: bool) -> BatchConsumer:
    def deliver_values(batch: list[bytes]) -> int:
        for data in batch:
            process(loads(data))
        return len(batch)

    def deliver_keyed(batch: tuple[list[int], list[bytes]]) -> int:
        for data in batch[1]:
            process(loads(data))
        return len(batch[1])

    return deliver_keyed if keyed_edge else deliver_values


class Subtask:
    """The running operators, channel writers and keyed state of subtask ``index``.

    ``restore`` is the state of the previous epoch (keyed-state manifest, operator states).
    """

    def __init__(
        self,
        job: Any,
        vertex: Any,
        index: int,
        attempt: int,
        restore: SubtaskRestore,
        keyed_state: KeyedStateSettings,
        batch_bounds: BatchBounds,
    ):
        self.vertex = vertex
        self.index = index
        self.epoch = 0
        self.version: str | None = None  # of the last epoch it acknowledged (see EpochTask)
        self.outbox: list[Any] = []
        self.strategy = snapshot_strategy(keyed_state)
        self.batch_bounds = batch_bounds
        self.backend: KeyedStateBackend | None = None
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
            self.backend = self.strategy.restore(self.keyed_subtask, restore.keyed, restore.claimed)
        try:
            self._build_chain(vertex, attempt)
        except BaseException:
            self.dispose()  # the restored instance must not outlive a chain that failed
            raise

    def _build_chain(self, vertex: Any, attempt: int) -> None:
        """The chain's operators and channel writers, wired to each other."""
        head = vertex.head
        self.contexts: list[OperatorContext] = []
        self.operators: list[Operator] = []  # in chain order
        self.writers: list[Operator] = []
        built: dict[int, Operator] = {}
        in_chain = {id(node) for node in vertex.nodes}
        edges_from: dict[int, list[Any]] = {}
        for edge in vertex.outputs:
            edges_from.setdefault(id(edge.stream_edge.source), []).append(edge)
        head_writers: list[Operator] = []
        for node in reversed(vertex.nodes):
            ctx = self._context(node, attempt)
            targets = [
                built[id(e.target)].process for e in node.outputs if id(e.target) in in_chain
            ]
            for edge in edges_from.get(id(node), ()):
                writer = self._writer(edge, ctx)
                self.writers.append(writer)
                targets.append(writer.process)
                if node is head:
                    head_writers.append(writer)
            if node.is_source:
                continue
            operator = node.operator.create(ctx, keyed=node is head and vertex.keyed)
            operator.emit = _fan_out(targets)
            built[id(node)] = operator
        self.operators = [built[id(n)] for n in vertex.nodes if id(n) in built]
        self.source = head.operator if vertex.is_source else None
        batch_targets = [
            built[id(e.target)] for e in head.outputs if id(e.target) in in_chain
        ] + head_writers

        def source_emit_batch(values: list[Any]) -> None:
            for target in batch_targets:
                target.process_batch(values)

        self.source_emit_batch = source_emit_batch
        # Per input edge: what takes one shuffled batch to the head operator.
        self.deliver: dict[int, BatchConsumer] = {}
        if not vertex.is_source:
            head_operator = built[id(head)]
            for edge in vertex.inputs:
                by_key = edge.partitioning.kind == "key_group"
                if by_key:
                    key_fn = resolve_callable(
                        edge.partitioning.key_selector, "get_key", "KeySelector"
                    )
                    self.deliver[edge.id] = (
                        _keyed_batches(head_operator, key_fn)
                        if vertex.keyed
                        else _unkeyed_batches(head_operator.process, True)
                    )
                else:
                    self.deliver[edge.id] = _unkeyed_batches(head_operator.process, False)

    def _context(self, node: Any, attempt: int) -> OperatorContext:
        runtime_context = SubtaskRuntimeContext(
            node.name,
            self.index,
            node.parallelism,
            node.max_parallelism,
            attempt,
            {},
            self.backend if node is self.vertex.head else None,
        )
        ctx = OperatorContext(
            node.name,
            node.uid,
            self.index,
            node.parallelism,
            runtime_context,
            self.backend,
            self.outbox,
        )
        self.contexts.append(ctx)
        return ctx

    def _writer(self, edge: Any, ctx: OperatorContext) -> Operator:
        target = edge.target
        kind = edge.partitioning.kind
        if kind == "key_group":
            return KeyGroupWriter(
                ctx,
                edge.id,
                target.parallelism,
                edge.partitioning.key_selector,
                target.max_parallelism,
                target.head.name,
                self.batch_bounds,
            )
        if kind == "rebalance":
            return RebalanceWriter(ctx, edge.id, target.parallelism, self.batch_bounds)
        return ForwardWriter(ctx, edge.id, self.batch_bounds)

    # Lifecycle -----------------------------------------------------------------------------

    def open(self) -> None:
        for operator in reversed(self.operators):
            operator.open()

    def begin_epoch(
        self, epoch: int, commit_on_checkpoint: bool, attempt: str, staging: StagingLog
    ) -> None:
        self.epoch = epoch
        for ctx in self.contexts:
            ctx.epoch = epoch
            ctx.commit_on_checkpoint = commit_on_checkpoint
            ctx.attempt = attempt
            ctx.staging = staging

    def end_epoch(self, end_of_input: bool, records: int) -> None:
        if end_of_input:
            for operator in self.operators:
                operator.end_input()
        for operator in self.operators:
            operator.end_epoch()
        for writer in self.writers:
            writer.end_epoch()
        if self.backend is not None:
            self.backend.end_epoch(records)  # TTL cleanup

    def close(self) -> None:
        for operator in self.operators:
            operator.close()

    # State ---------------------------------------------------------------------------------

    def restore_operator_states(self, operator_states: dict[str, Any]) -> None:
        for operator in self.operators:
            if operator.ctx.uid in operator_states:
                operator.restore_state(operator_states[operator.ctx.uid])

    def snapshot_operator_states(self) -> dict[str, Any]:
        states = {}
        for operator in self.operators:
            state = operator.snapshot_state()
            if state is not None:
                states[operator.ctx.uid] = state
        return states

    def snapshot_state(
        self, storage: Storage, tag: str, checkpoint: bool
    ) -> KeyedStateSnapshot | None:
        """Persist the keyed state of this epoch; return what the ack reports of it."""
        if self.backend is None:
            return None
        return self.strategy.snapshot(self.backend, self.keyed_subtask, storage, tag, checkpoint)

    def dispose(self) -> None:
        """Release what the subtask holds outside the Python heap (a RocksDB instance)."""
        if isinstance(self.backend, RocksDBKeyedStateBackend):
            self.backend.dispose()

    def notify_checkpoint_complete(self, epoch: int) -> None:
        for operator in self.operators:
            operator.notify_checkpoint_complete(epoch)
