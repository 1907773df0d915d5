"""What user functions see while they run: RuntimeContext and process-function contexts."""

from __future__ import annotations

import time
from enum import Enum
from typing import Any

from lockgate.common.clock import processing_time_ms
from lockgate.common.watermark_strategy import LONG_MIN
from lockgate.metrics import MetricGroup
from lockgate.runtime.subtaskhost.metrics import OperatorMetrics


class SubtaskRuntimeContext:
    """PyFlink's ``RuntimeContext`` for one parallel instance of an operator."""

    def __init__(
        self,
        task_name: str,
        index: int,
        parallelism: int,
        max_parallelism: int,
        attempt: int,
        job_parameters: dict[str, str],
        keyed_backend: Any = None,
        metric_group: MetricGroup | None = None,
    ):
        self._task_name = task_name
        self._index = index
        self._parallelism = parallelism
        self._max_parallelism = max_parallelism
        self._attempt = attempt
        self._job_parameters = job_parameters
        self._backend = keyed_backend
        # outside a subtask (tests), a group of its own that nothing reports
        self._metric_group = metric_group or OperatorMetrics(task_name, time.monotonic).group()

    def get_task_name(self) -> str:
        return self._task_name

    def get_task_name_with_subtasks(self) -> str:
        return f"{self._task_name} ({self._index + 1}/{self._parallelism})#{self._attempt}"

    def get_number_of_parallel_subtasks(self) -> int:
        return self._parallelism

    def get_max_number_of_parallel_subtasks(self) -> int:
        return self._max_parallelism

    def get_index_of_this_subtask(self) -> int:
        return self._index

    def get_attempt_number(self) -> int:
        return self._attempt

    def get_job_parameter(self, key: str, default_value: str) -> str:
        return self._job_parameters.get(key, default_value)

    def get_metrics_group(self) -> MetricGroup:
        """The operator's metric group: what it registers there is reported each epoch."""
        return self._metric_group

    def keyed_state_store(self) -> SubtaskRuntimeContext | None:
        """Flink's KeyedStateStore: this context on a keyed stream, else None."""
        return self if self._backend is not None else None

    def _keyed(self) -> Any:
        if self._backend is None:
            raise RuntimeError(
                f"operator '{self._task_name}' asked for keyed state, which is only accessible "
                "by functions executed on a KeyedStream"
            )
        return self._backend

    def get_state(self, state_descriptor: Any) -> Any:
        return self._keyed().get_state(state_descriptor)

    def get_list_state(self, state_descriptor: Any) -> Any:
        return self._keyed().get_state(state_descriptor)

    def get_map_state(self, state_descriptor: Any) -> Any:
        return self._keyed().get_state(state_descriptor)

    def get_reducing_state(self, state_descriptor: Any) -> Any:
        return self._keyed().get_state(state_descriptor)

    def get_aggregating_state(self, state_descriptor: Any) -> Any:
        return self._keyed().get_state(state_descriptor)


class TimeDomain(Enum):
    """PyFlink's ``TimeDomain``: which clock a firing timer belongs to."""

    EVENT_TIME = 0
    PROCESSING_TIME = 1


class RecordTimestamp:
    """The timestamp of the record a chain is processing (LONG_MIN: it has none).

    One per subtask, shared by its chained operators: a record keeps its timestamp through
    the chain, except where an operator gives its outputs another one (a timestamp assigner,
    a firing timer), which sets it around its ``emit`` and puts it back after.
    """

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = LONG_MIN


class TimerService:
    """What a process function on a non-keyed stream sees of time: the clocks, no timers.

    ``operator`` is the running operator, whose ``watermark`` is the current one; ``keyed``
    says what the keyed form of the job would use."""

    __slots__ = ("_keyed", "_operator")

    def __init__(
        self,
        operator: Any,
        keyed: str = "key the stream with key_by() and use a KeyedProcessFunction",
    ):
        self._operator = operator
        self._keyed = keyed

    def current_processing_time(self) -> int:
        return processing_time_ms()

    def current_watermark(self) -> int:
        return int(self._operator.watermark)

    def _keyed_only(self, *_: Any) -> None:
        raise TypeError(
            f"operator '{self._operator.ctx.name}' registered or deleted a timer, which only "
            f"a keyed stream has: {self._keyed}"
        )

    register_processing_time_timer = _keyed_only
    register_event_time_timer = _keyed_only
    delete_processing_time_timer = _keyed_only
    delete_event_time_timer = _keyed_only


class KeyedTimerService(TimerService):
    """A keyed process function's timers: per current key, deduplicated per time."""

    __slots__ = ("_timers",)

    def __init__(self, operator: Any, timers: Any):
        super().__init__(operator)
        self._timers = timers  # the operator's InternalTimerService

    def register_event_time_timer(self, timestamp: int) -> None:
        self._timers.register_event_time_timer(None, timestamp)

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._timers.register_processing_time_timer(None, timestamp)

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._timers.delete_event_time_timer(None, timestamp)

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._timers.delete_processing_time_timer(None, timestamp)


class ProcessContext:
    """``ProcessFunction.Context``."""

    __slots__ = ("_record", "_timer_service")

    def __init__(self, record: RecordTimestamp, timer_service: TimerService):
        self._record = record
        self._timer_service = timer_service

    def timestamp(self) -> int:
        return self._record.value

    def timer_service(self) -> TimerService:
        return self._timer_service


class KeyedProcessContext(ProcessContext):
    """``KeyedProcessFunction.Context``: also knows the current key."""

    __slots__ = ("_key_context",)

    def __init__(self, record: RecordTimestamp, timer_service: TimerService, key_context: Any):
        super().__init__(record, timer_service)
        self._key_context = key_context

    def get_current_key(self) -> Any:
        return self._key_context.key


class OnTimerContext(KeyedProcessContext):
    """``KeyedProcessFunction.OnTimerContext``: a firing timer's; ``timestamp()`` is the
    timer's time, in either domain (as PyFlink)."""

    __slots__ = ("domain",)

    def __init__(self, record: RecordTimestamp, timer_service: TimerService, key_context: Any):
        super().__init__(record, timer_service, key_context)
        self.domain = TimeDomain.EVENT_TIME

    def time_domain(self) -> TimeDomain:
        return self.domain


class FunctionInitializationContext:
    """What ``CheckpointedFunction.initialize_state`` gets: the operator state of the
    function's subtask, its keyed state (on a keyed stream), and whether it was restored.

    ``restored_epoch``: the epoch whose state the subtask starts from (None: the job's
    start); lockgate's epochs are Flink's checkpoints here."""

    def __init__(self, operator_state: Any, keyed_state: Any, restored_epoch: int | None):
        self._operator_state = operator_state
        self._keyed_state = keyed_state
        self._restored_epoch = restored_epoch

    def is_restored(self) -> bool:
        return self._restored_epoch is not None

    def get_restored_checkpoint_id(self) -> int | None:
        return self._restored_epoch

    def get_operator_state_store(self) -> Any:
        return self._operator_state

    def get_keyed_state_store(self) -> Any:
        return self._keyed_state


class FunctionSnapshotContext:
    """What ``CheckpointedFunction.snapshot_state`` gets. lockgate snapshots a function's
    state at the end of every epoch (a subtask may move to another worker between any two),
    so the id is the epoch's number: it grows from snapshot to snapshot as Flink's
    checkpoint ids do."""

    __slots__ = ("_epoch", "_timestamp")

    def __init__(self, epoch: int, timestamp: int):
        self._epoch = epoch
        self._timestamp = timestamp

    def get_checkpoint_id(self) -> int:
        return self._epoch

    def get_checkpoint_timestamp(self) -> int:
        return self._timestamp
