"""Operators as they run inside a subtask, built from the specs in the job graph
(``graph.operator_spec``) by ``create_operator``. Operators push records downstream by
calling ``emit``; a chain is nothing more than these calls, so nothing is serialized between
chained operators.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import repeat
from pickle import HIGHEST_PROTOCOL, dumps, loads
from typing import Any

from lockgate.common.clock import processing_time_ms
from lockgate.common.config_options import MAX_RECORD_LIMIT
from lockgate.common.type_conversion import print_formatter, record_converter
from lockgate.common.typeinfo import TypeInformation
from lockgate.common.watermark_strategy import LONG_MIN
from lockgate.graph.operator_spec import REDUCE_STATE_NAME, OperatorKind, OperatorSpec
from lockgate.runtime.errors import UserFunctionError, preview
from lockgate.runtime.messages.spark_items import HostOutput, ItemKind
from lockgate.runtime.subtaskhost.context import (
    FunctionInitializationContext,
    FunctionSnapshotContext,
    KeyedProcessContext,
    KeyedTimerService,
    OnTimerContext,
    ProcessContext,
    RecordTimestamp,
    SubtaskRuntimeContext,
    TimeDomain,
    TimerService,
)
from lockgate.runtime.subtaskhost.metrics import OperatorMetrics
from lockgate.runtime.subtaskhost.staging_log import StagingLog
from lockgate.runtime.subtaskhost.timer_service import InternalTimerService
from lockgate.state.descriptors import ReducingStateDescriptor
from lockgate.state.operator_state_backend import OperatorStateBackend
from lockgate.state.operator_state_handle import OperatorStatePart


@dataclass
class OperatorContext:
    """Everything an operator needs to know about the subtask it runs in."""

    name: str
    uid: str
    index: int
    parallelism: int
    runtime_context: SubtaskRuntimeContext
    keyed_backend: Any
    outbox: list[HostOutput]
    #: the timestamp of the record being processed, shared by the chain
    record: RecordTimestamp
    epoch: int = 0
    #: the job (names what two-phase-commit sinks stage)
    job_id: str = ""
    #: the job's restores before this run of its subtasks
    generation: int = 0
    #: sinks publish only when a checkpoint completes (exactly-once), not per epoch
    commit_on_checkpoint: bool = False
    #: this epoch ends with a checkpoint
    checkpoint: bool = False
    #: the Spark task attempt running this epoch (names what it writes)
    attempt: str = ""
    #: records files the attempt creates outside the job's directories (see staged_files)
    staging: StagingLog | None = None
    #: the URL of the directory where sinks stage what their commits publish
    sink_files: str = ""
    #: what the operator state of its function restores from
    managed_parts: list[OperatorStatePart] | None = None
    #: the epoch the subtask's state is of (None: the start of the job)
    restored_epoch: int | None = None
    #: the job runs in BATCH mode (JobGraph.batch)
    batch: bool = False
    #: the declared type information of its input records (None: none declared)
    input_type: TypeInformation | None = None
    #: the largest pickled record it may send on (lockgate.record.max-size)
    max_record_bytes: int = MAX_RECORD_LIMIT
    #: its metrics (its runtime context's metric group registers them)
    metrics: OperatorMetrics = field(
        default_factory=lambda: OperatorMetrics("an operator", time.monotonic)
    )


NO_RECORD = object()


class RecordTooLarge(ValueError):
    """A record above lockgate.record.max-size."""


class Operator:
    """Base of all running operators: a named place in the job that can fail clearly.

    Records arrive through ``process``; operators at the head of a keyed task receive
    them through ``process_keyed`` with their key group and key. ``watermark`` is the
    operator's event time, which moves at the end of an epoch (``advance_watermark``).
    """

    #: takes records with their key (``process_keyed``) itself; else a keyed task wraps it
    #: in ``KeyedInput``, which makes each record's key current
    handles_keys = False
    #: emits one record per record it takes: its numRecordsOut is its numRecordsIn
    one_to_one: bool = False

    def process_keyed(self, key_group: int, key: Any, value: Any) -> None:
        raise TypeError(f"operator '{self.ctx.name}' is not at the head of a keyed task")

    def __init__(self, ctx: OperatorContext, function: Any = None):
        self.ctx = ctx
        self.function = function
        self.emit: Callable[[Any], None] = _drop
        self.watermark = LONG_MIN
        #: the operator state of a ``CheckpointedFunction`` (or of broadcast state)
        self.managed: OperatorStateBackend | None = None
        # numRecordsIn and numRecordsOut, counted where that costs least (see the subtask's
        # chain): records in batches as they arrive, one by one only where nothing else
        # knows them; an operator whose input is all its upstream's output counts none
        # (``in_from``), nor does a one-to-one operator count its output.
        self.records_in = 0
        self.records_out = 0
        self.in_from: Operator | None = None

    def counted_in(self) -> int:
        """The records it has taken since it was built (Flink's numRecordsIn)."""
        upstream = self.in_from
        return upstream.counted_out() if upstream is not None else self.records_in

    def counted_out(self) -> int:
        """The records it has emitted since it was built (Flink's numRecordsOut)."""
        return self.counted_in() if self.one_to_one else self.records_out

    def open(self) -> None:
        """``initialize_state`` of a ``CheckpointedFunction`` first, then ``open``."""
        function = self.function
        if callable(getattr(function, "initialize_state", None)) and callable(
            getattr(function, "snapshot_state", None)
        ):
            backend = self.operator_state()
            context = FunctionInitializationContext(
                backend, self.ctx.runtime_context.keyed_state_store(), self.ctx.restored_epoch
            )
            self._call(function.initialize_state, context, what="initialize_state()")
        opener = getattr(function, "open", None)
        if opener is not None:
            self._call(opener, self.ctx.runtime_context, what="open()")

    def operator_state(self) -> OperatorStateBackend:
        """The operator's operator state, restored from its parts when first asked for."""
        if self.managed is None:
            ctx = self.ctx
            where = f"operator '{ctx.name}' (uid '{ctx.uid}', subtask {ctx.index})"
            self.managed = OperatorStateBackend(where, ctx.managed_parts or [])
        return self.managed

    def snapshot_function(self, epoch: int) -> OperatorStateBackend | None:
        """Let a ``CheckpointedFunction`` put its state into its operator state; that state."""
        if self.managed is not None and callable(getattr(self.function, "snapshot_state", None)):
            context = FunctionSnapshotContext(epoch, processing_time_ms())
            self._call(self.function.snapshot_state, context, what="snapshot_state()")
        return self.managed

    def close(self) -> None:
        closer = getattr(self.function, "close", None)
        if closer is not None:
            self._call(closer, what="close()")

    def input(self, index: int) -> Operator:
        """What the records of input ``index`` (1 or 2) go to: a two-input operator's side,
        the operator itself for the others."""
        return self

    def end_input(self) -> None:
        """All input of a bounded job has arrived."""

    def end_epoch(self) -> None:
        """The epoch's input is consumed; flush anything buffered."""

    def advance_watermark(self, watermark: int, idle: bool) -> tuple[int, bool]:
        """The epoch ends with the operator's input at ``watermark`` (``idle``: its inputs
        are idle): fire what is due, and return the operator's output watermark and
        idleness. A watermark never goes back."""
        if watermark > self.watermark:
            self.watermark = watermark
        return self.watermark, idle

    def advance_processing_time(self, now: int) -> None:
        """The epoch ends at processing time ``now``: fire the processing-time timers due."""

    def next_processing_time(self) -> int | None:
        """When the operator next needs an epoch by processing time (None: never): its
        earliest processing-time timer, or when an input of it would become idle."""
        return None

    def process(self, value: Any) -> None:
        raise NotImplementedError

    def process_batch(self, values: Any, timestamps: list[int] | None = None) -> None:
        process = self.process
        if timestamps is None:
            for value in values:
                process(value)
            return
        record = self.ctx.record
        for value, timestamp in zip(values, timestamps, strict=True):
            record.value = timestamp
            process(value)
        record.value = LONG_MIN

    def process_keyed_batch(
        self,
        key_groups: list[int],
        data: list[bytes],
        key_fn: Any,
        timestamps: list[int] | None = None,
    ) -> None:
        """One shuffled batch of a keyed input: key groups, pickled values and (when the
        edge carries them) timestamps."""
        process_keyed = self.process_keyed
        record = self.ctx.record
        for key_group, blob, timestamp in zip(
            key_groups, data, timestamps or repeat(LONG_MIN), strict=False
        ):
            value = loads(blob)
            try:
                key = key_fn(value)
            except Exception as exc:
                raise self.failure(exc, value, "the key selector") from exc
            record.value = timestamp
            process_keyed(key_group, key, value)
        record.value = LONG_MIN

    def snapshot_state(self) -> Any:
        """Operator state to carry to the next epoch, as JSON (None: stateless)."""
        return None

    def restore_state(self, state: Any) -> None:
        """Take back what ``snapshot_state`` returned in the previous epoch."""

    def notify_checkpoint_complete(self, epoch: int) -> None:
        """Checkpoints up to the one taken at the end of ``epoch`` are complete."""

    def failure(
        self, exc: BaseException, record: Any = NO_RECORD, what: str = ""
    ) -> UserFunctionError:
        ctx = self.ctx
        where = (
            f"operator '{ctx.name}' (uid '{ctx.uid}', subtask {ctx.index}/{ctx.parallelism}, "
            f"epoch {ctx.epoch})"
        )
        action = f"failed in {what}" if what else "failed"
        if record is not NO_RECORD:
            action += f" on record {preview(record)}"
        return UserFunctionError(f"{where} {action}: {type(exc).__name__}: {exc}")

    def check_record_size(self, size: int, value: Any) -> None:
        """Fail clearly on a record too large to send: PySpark's frames could not carry it."""
        if size > self.ctx.max_record_bytes:
            exc = RecordTooLarge(
                f"the record pickles to {size} bytes, more than lockgate.record.max-size "
                f"({self.ctx.max_record_bytes} bytes)"
            )
            raise self.failure(exc, value, "sending it on")

    def _call(self, fn: Callable[..., Any], *args: Any, what: str) -> Any:
        try:
            return fn(*args)
        except UserFunctionError:
            raise
        except Exception as exc:
            raise self.failure(exc, what=what) from exc


def _drop(_: Any) -> None:
    return None


def resolve_callable(function: Any, method: str, kind: str) -> Callable[..., Any]:
    """A PyFlink Function's method, or the callable itself (PyFlink accepts both)."""
    bound: Any = getattr(function, method, None)
    if callable(bound):
        return bound  # type: ignore[no-any-return]
    if callable(function):
        return function  # type: ignore[no-any-return]
    raise TypeError(f"the input must be a {kind} or a callable function, got {function!r}")


def key_function(key_selector: Any, key_type: TypeInformation | None) -> Callable[[Any], Any]:
    """The key of a record on a key-group edge: its key selector's, converted to the
    ``key_type`` of ``key_by`` when one is declared (PyFlink serializes keys with it, so
    functions, state and key groups all see the converted key)."""
    select = resolve_callable(key_selector, "get_key", "KeySelector")
    convert = record_converter(key_type)
    if convert is None:
        return select
    return lambda value: convert(select(value))


# Stateless operators ---------------------------------------------------------------------


class MapOperator(Operator):
    one_to_one = True

    def __init__(self, ctx: OperatorContext, function: Any):
        super().__init__(ctx, function)
        self.fn = resolve_callable(function, "map", "MapFunction")

    def process(self, value: Any) -> None:
        try:
            out = self.fn(value)
        except Exception as exc:
            raise self.failure(exc, value) from exc
        self.emit(out)


class FlatMapOperator(Operator):
    def __init__(self, ctx: OperatorContext, function: Any):
        super().__init__(ctx, function)
        self.fn = resolve_callable(function, "flat_map", "FlatMapFunction")

    def process(self, value: Any) -> None:
        emit = self.emit
        try:
            for out in self.fn(value):
                emit(out)
        except UserFunctionError:
            raise  # a chained operator's, attributed where it failed
        except Exception as exc:
            raise self.failure(exc, value) from exc


class FilterOperator(Operator):
    def __init__(self, ctx: OperatorContext, function: Any):
        super().__init__(ctx, function)
        self.fn = resolve_callable(function, "filter", "FilterFunction")

    def process(self, value: Any) -> None:
        try:
            keep = self.fn(value)
        except Exception as exc:
            raise self.failure(exc, value) from exc
        if keep:
            self.emit(value)


class ProcessOperator(Operator):
    """Runs a ``ProcessFunction``; its ``process_element`` yields (or returns) outputs."""

    def __init__(self, ctx: OperatorContext, function: Any):
        super().__init__(ctx, function)
        self.fn = function.process_element
        self.process_ctx = ProcessContext(ctx.record, TimerService(self))

    def process(self, value: Any) -> None:
        emit = self.emit
        try:
            result = self.fn(value, self.process_ctx)
            if result is not None:
                for out in result:
                    emit(out)
        except UserFunctionError:
            raise  # a chained operator's, attributed where it failed
        except Exception as exc:
            raise self.failure(exc, value) from exc


# Keyed operators: their input records are (key group, key, value) -------------------------


class KeyedInput(Operator):
    """Sets the current key, then hands the value to a stateless-style operator."""

    def __init__(self, ctx: OperatorContext, inner: Operator):
        super().__init__(ctx)
        self.inner = inner
        self.one_to_one = inner.one_to_one
        self.set_key = ctx.keyed_backend.set_current_key

    def open(self) -> None:
        self.inner.emit = self.emit
        self.inner.open()

    def snapshot_function(self, epoch: int) -> OperatorStateBackend | None:
        return self.inner.snapshot_function(epoch)

    def close(self) -> None:
        self.inner.close()

    def process(self, value: Any) -> None:
        raise TypeError("keyed operators receive records through process_keyed")

    def process_keyed(self, key_group: int, key: Any, value: Any) -> None:
        self.set_key(key_group, key)
        self.inner.process(value)


class TimerFiringOperator(Operator):
    """An operator whose user function has timers and ``on_timer`` (a keyed process
    function): ``timers`` and ``timer_ctx`` are None on a non-keyed stream."""

    timers: InternalTimerService | None = None
    timer_ctx: OnTimerContext | None = None
    on_timer: Callable[[int, Any], Any] | None = None

    def advance_watermark(self, watermark: int, idle: bool) -> tuple[int, bool]:
        if watermark > self.watermark:
            self.watermark = watermark
        if self.timers is not None and self.timer_ctx is not None:
            # also timers registered at or below an unchanged watermark: they fire at the
            # end of the epoch that registered them
            self.timer_ctx.domain = TimeDomain.EVENT_TIME
            self.timers.advance_watermark(self.watermark, self._fire)
        return self.watermark, idle

    def advance_processing_time(self, now: int) -> None:
        if self.timers is not None and self.timer_ctx is not None:
            self.timer_ctx.domain = TimeDomain.PROCESSING_TIME
            self.timers.advance_processing_time(now, self._fire)

    def next_processing_time(self) -> int | None:
        return self.timers.next_processing_time() if self.timers is not None else None

    def _fire(self, timestamp: int, key: Any, namespace: Any) -> None:
        if self.on_timer is None:
            return
        record = self.ctx.record
        record.value = timestamp  # outputs carry the timer's time (PyFlink, both domains)
        emit = self.emit
        try:
            result = self.on_timer(timestamp, self.timer_ctx)
            if result is not None:
                for out in result:
                    emit(out)
        except UserFunctionError:
            raise
        except Exception as exc:
            raise self.failure(exc, what=f"on_timer({timestamp}) for key {key!r}") from exc
        finally:
            record.value = LONG_MIN


class KeyedProcessOperator(TimerFiringOperator):
    """Runs a ``KeyedProcessFunction``: records with their key current, and its timers."""

    handles_keys = True

    def __init__(self, ctx: OperatorContext, function: Any):
        super().__init__(ctx, function)
        self.fn = function.process_element
        self.on_timer = function.on_timer
        backend = ctx.keyed_backend
        self.set_key = backend.set_current_key
        self.key_ctx = backend.ctx
        self.timers = InternalTimerService(backend, "user")
        timer_service = KeyedTimerService(self, self.timers)
        self.process_ctx = KeyedProcessContext(ctx.record, timer_service, backend.ctx)
        self.timer_ctx = OnTimerContext(ctx.record, timer_service, backend.ctx)

    def process_keyed_batch(
        self,
        key_groups: list[int],
        data: list[bytes],
        key_fn: Any,
        timestamps: list[int] | None = None,
    ) -> None:
        # The base class's loop with process_keyed's body inlined: the most common keyed
        # operator's per-record path, a function call shorter
        key_ctx = self.key_ctx
        fn = self.fn
        process_ctx = self.process_ctx
        emit = self.emit
        record = self.ctx.record
        for key_group, blob, timestamp in zip(
            key_groups, data, timestamps or repeat(LONG_MIN), strict=False
        ):
            value = loads(blob)
            try:
                key_ctx.key = key_fn(value)
            except Exception as exc:
                raise self.failure(exc, value, "the key selector") from exc
            try:
                key_ctx.group = key_group
                record.value = timestamp
                result = fn(value, process_ctx)
                if result is not None:
                    for out in result:
                        emit(out)
            except UserFunctionError:
                raise  # a chained operator's, attributed where it failed
            except Exception as exc:
                raise self.failure(exc, value) from exc
        record.value = LONG_MIN

    def process_keyed(self, key_group: int, key: Any, value: Any) -> None:
        self.set_key(key_group, key)
        emit = self.emit
        try:
            result = self.fn(value, self.process_ctx)
            if result is not None:
                for out in result:
                    emit(out)
        except UserFunctionError:
            raise  # a chained operator's, attributed where it failed
        except Exception as exc:
            raise self.failure(exc, value) from exc


class ReduceOperator(Operator):
    """Rolling reduce: emits the reduced value after every record, as PyFlink streaming."""

    STATE_NAME = REDUCE_STATE_NAME
    handles_keys = True

    def __init__(self, ctx: OperatorContext, function: Any):
        super().__init__(ctx, function)
        reduce = resolve_callable(function, "reduce", "ReduceFunction")
        self.set_key = ctx.keyed_backend.set_current_key
        self.state = ctx.keyed_backend.get_state(ReducingStateDescriptor(self.STATE_NAME, reduce))
        self.rolling = not ctx.batch  # BATCH emits only the final values, at the end

    def process_keyed(self, key_group: int, key: Any, value: Any) -> None:
        self.set_key(key_group, key)
        state = self.state
        try:
            state.add(value)
        except Exception as exc:
            raise self.failure(exc, value) from exc
        if self.rolling:
            self.emit(state.get())

    def end_input(self) -> None:
        if self.rolling:
            return
        backend = self.ctx.keyed_backend
        for key_group in backend.key_groups:
            for key in list(backend.keys(self.STATE_NAME, key_group)):
                self.set_key(key_group, key)
                self.emit(self.state.get())


# Sinks -------------------------------------------------------------------------------------


class PrintSinkOperator(Operator):
    """Writes each record to the task's stdout with Flink's ``N>`` prefix: as PyFlink's
    print does when its stream declares a type (``(a,1)``, ``+I[a,1]``), else ``str()``."""

    def __init__(self, ctx: OperatorContext, sink_identifier: str | None, stderr: bool):
        super().__init__(ctx)
        subtask = f"{ctx.index + 1}" if ctx.parallelism > 1 else ""
        if sink_identifier and subtask:
            prefix = f"{sink_identifier}:{subtask}> "
        elif sink_identifier or subtask:
            prefix = f"{sink_identifier or subtask}> "
        else:
            prefix = ""
        self.prefix = prefix
        self.stream = sys.stderr if stderr else sys.stdout
        self.lines: list[str] = []
        self.format: Callable[[Any], str] = print_formatter(ctx.input_type) or str

    def process(self, value: Any) -> None:
        self.lines.append(f"{self.prefix}{self.format(value)}\n")
        if len(self.lines) >= 1024:
            self.end_epoch()

    def end_epoch(self) -> None:
        if self.lines:
            self.stream.write("".join(self.lines))
            self.stream.flush()
            self.lines.clear()


class CollectSinkOperator(Operator):
    """Buffers records for the driver, which receives them as the Spark job's result.

    Records are pickled as they arrive, so a record changed after it was emitted (say, a
    list also kept in state) is collected as it was when emitted.
    """

    BATCH = 4096

    def __init__(self, ctx: OperatorContext):
        super().__init__(ctx)
        self.batch: list[bytes] = []
        self.size = 0  # bytes in the batch: one item of PySpark's, under the maximum too

    def process(self, value: Any) -> None:
        data = dumps(value, HIGHEST_PROTOCOL)
        if self.size + len(data) > self.ctx.max_record_bytes:
            self.check_record_size(len(data), value)
            self.end_epoch()
        self.batch.append(data)
        self.size += len(data)
        if len(self.batch) >= self.BATCH:
            self.end_epoch()

    def end_epoch(self) -> None:
        if self.batch:
            records = dumps(self.batch, HIGHEST_PROTOCOL)
            self.ctx.outbox.append(HostOutput(ItemKind.COLLECTED, 0, 0, 0, records))
            self.batch = []
            self.size = 0


class DiscardingSinkOperator(Operator):
    def process(self, value: Any) -> None:
        return None


# Building an operator from its spec --------------------------------------------------------


def create_operator(spec: OperatorSpec, ctx: OperatorContext, keyed: bool) -> Operator:
    """The operator ``spec`` describes, for one subtask; a keyed head that does not handle
    keys itself is wrapped to set the current key of each record."""
    operator = _BUILDERS[spec.kind](ctx, spec)
    return KeyedInput(ctx, operator) if keyed and not operator.handles_keys else operator


_BUILDERS: dict[OperatorKind, Callable[[OperatorContext, OperatorSpec], Operator]] = {
    OperatorKind.MAP: lambda ctx, spec: MapOperator(ctx, spec.function),
    OperatorKind.FLAT_MAP: lambda ctx, spec: FlatMapOperator(ctx, spec.function),
    OperatorKind.FILTER: lambda ctx, spec: FilterOperator(ctx, spec.function),
    OperatorKind.PROCESS: lambda ctx, spec: ProcessOperator(ctx, spec.function),
    OperatorKind.KEYED_PROCESS: lambda ctx, spec: KeyedProcessOperator(ctx, spec.function),
    OperatorKind.REDUCE: lambda ctx, spec: ReduceOperator(ctx, spec.function),
    OperatorKind.PRINT: lambda ctx, spec: PrintSinkOperator(
        ctx, (spec.options or {}).get("identifier"), (spec.options or {}).get("stderr", False)
    ),
    OperatorKind.COLLECT: lambda ctx, spec: CollectSinkOperator(ctx),
    OperatorKind.DISCARD: lambda ctx, spec: DiscardingSinkOperator(ctx),
    OperatorKind.FACTORY: lambda ctx, spec: spec.function(ctx),
}
