"""What user functions see while they run: RuntimeContext and process-function contexts."""

from __future__ import annotations

import time
from typing import Any

LONG_MIN = -(1 << 63)  # PyFlink's timestamp of a record that has none


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
    ):
        self._task_name = task_name
        self._index = index
        self._parallelism = parallelism
        self._max_parallelism = max_parallelism
        self._attempt = attempt
        self._job_parameters = job_parameters
        self._backend = keyed_backend

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

    def get_metrics_group(self) -> None:
        return None

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


class TimerService:
    """Time as a process function sees it. Registering timers needs event-time support."""

    def current_processing_time(self) -> int:
        return time.time_ns() // 1_000_000

    def current_watermark(self) -> int:
        return LONG_MIN

    def _unsupported(self, *_: Any) -> None:
        raise NotImplementedError(
            "timers are not supported by this version of lockgate yet (event time and timers "
            "arrive in a later release)"
        )

    register_processing_time_timer = _unsupported
    register_event_time_timer = _unsupported
    delete_processing_time_timer = _unsupported
    delete_event_time_timer = _unsupported


_TIMER_SERVICE = TimerService()


class ProcessContext:
    """``ProcessFunction.Context``."""

    __slots__ = ()

    def timestamp(self) -> int:
        return LONG_MIN

    def timer_service(self) -> TimerService:
        return _TIMER_SERVICE


class KeyedProcessContext(ProcessContext):
    """``KeyedProcessFunction.Context``: also knows the current key."""

    __slots__ = ("_key_context",)

    def __init__(self, key_context: Any):
        self._key_context = key_context

    def get_current_key(self) -> Any:
        return self._key_context.key
