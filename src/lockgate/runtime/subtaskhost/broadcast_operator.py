"""The operator of ``connect(broadcast_stream).process(...)``: a two-input operator whose
input 1 is the broadcast stream (every subtask receives all of it) and input 2 the other
stream, keyed or not.

Broadcast state is operator state in broadcast mode: the broadcast side reads and writes
it, the other side only reads it, so every subtask keeps the same contents; a restore at
another parallelism copies it to every subtask. Within an epoch the broadcast side's
records are processed first (they travel on the operator's first input edge; Flink leaves
the order of the two inputs open).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from lockgate.common.clock import processing_time_ms
from lockgate.runtime.subtaskhost.co_operators import TwoInputOperator, TwoInputSide
from lockgate.runtime.subtaskhost.context import (
    RecordTimestamp,
    TimeDomain,
    TimerService,
)
from lockgate.runtime.subtaskhost.operators import OperatorContext
from lockgate.state.descriptors import MapStateDescriptor, StateDescriptor
from lockgate.state.key_groups import NO_KEY_GROUP
from lockgate.state.operator_state_backend import OperatorBroadcastState, ReadOnlyView


class _BaseContext:
    __slots__ = ("_operator", "_record")

    def __init__(self, operator: BroadcastProcessOperator):
        self._operator = operator
        self._record: RecordTimestamp = operator.ctx.record

    def timestamp(self) -> int:
        return self._record.value

    def current_processing_time(self) -> int:
        return processing_time_ms()

    def current_watermark(self) -> int:
        return int(self._operator.watermark)


class BroadcastContext(_BaseContext):
    """The broadcast side's: broadcast state to read and write; on a keyed stream, also
    ``apply_to_keyed_state``."""

    __slots__ = ()

    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> OperatorBroadcastState:
        return self._operator.broadcast_state(state_descriptor)

    def apply_to_keyed_state(self, state_descriptor: StateDescriptor, function: Any) -> None:
        """Call ``function(key, state)`` (or ``function.process(key, state)``) for every key
        of this subtask that has state ``state_descriptor``, with that key current."""
        self._operator.apply_to_keyed_state(state_descriptor, function)


class ReadOnlyContext(_BaseContext):
    """The other side's: broadcast state to read; on a keyed stream, timers and the key."""

    __slots__ = ("_timer_service", "_views")

    def __init__(self, operator: BroadcastProcessOperator, timer_service: TimerService):
        super().__init__(operator)
        self._timer_service = timer_service
        self._views: dict[str, ReadOnlyView] = {}

    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> ReadOnlyView:
        # asked for per record: the view of a known state is a dict lookup
        view = self._views.get(getattr(state_descriptor, "name", None))  # type: ignore[arg-type]
        if view is None or not isinstance(state_descriptor, MapStateDescriptor):
            state = self._operator.broadcast_state(state_descriptor)  # checks the descriptor
            view = self._views[state_descriptor.name] = ReadOnlyView(state, state_descriptor.name)
        return view

    def timer_service(self) -> TimerService:
        return self._timer_service

    def get_current_key(self) -> Any:
        return self._operator.current_key()


class OnTimerContext(ReadOnlyContext):
    __slots__ = ("domain",)

    def __init__(self, operator: BroadcastProcessOperator, timer_service: TimerService):
        super().__init__(operator, timer_service)
        self.domain = TimeDomain.EVENT_TIME

    def time_domain(self) -> TimeDomain:
        return self.domain


class BroadcastProcessOperator(TwoInputOperator):
    """Runs a ``BroadcastProcessFunction``, or on a keyed stream a
    ``KeyedBroadcastProcessFunction`` (with keyed state and timers)."""

    def __init__(
        self,
        ctx: OperatorContext,
        function: Any,
        descriptors: list[MapStateDescriptor],
        keyed: bool,
    ):
        super().__init__(ctx, function)
        self.descriptors = {d.name: d for d in descriptors}
        self.keyed_backend: Any = None
        self.states: dict[str, OperatorBroadcastState] = {}  # declared ones, by name
        if keyed:
            self.keyed_backend = ctx.keyed_backend
            timer_service: TimerService = self.keyed_timers(function)
            self.timer_ctx = OnTimerContext(self, timer_service)  # type: ignore[assignment]
        else:
            timer_service = TimerService(
                self,
                "key the stream with key_by() before connect() and use a "
                "KeyedBroadcastProcessFunction",
            )
        element_ctx = ReadOnlyContext(self, timer_service)
        broadcast_ctx = BroadcastContext(self)
        process_element = function.process_element
        process_broadcast = function.process_broadcast_element
        self.inputs = {
            1: TwoInputSide(self, self._broadcast_call(process_broadcast, broadcast_ctx)),
            2: TwoInputSide(self, lambda value: process_element(value, element_ctx)),
        }

    def _broadcast_call(
        self, process: Callable[[Any, Any], Any], ctx: BroadcastContext
    ) -> Callable[[Any], Any]:
        key_ctx = self.key_ctx

        def call(value: Any) -> Any:
            if key_ctx is not None:  # no key is current on the broadcast side
                key_ctx.key = None
                key_ctx.group = NO_KEY_GROUP
            return process(value, ctx)

        return call

    def open(self) -> None:
        self.operator_state()  # the broadcast state, restored
        super().open()

    def broadcast_state(self, descriptor: MapStateDescriptor) -> OperatorBroadcastState:
        # asked for per record: a dict lookup once the state is known
        state = self.states.get(getattr(descriptor, "name", None))  # type: ignore[arg-type]
        if state is not None and isinstance(descriptor, MapStateDescriptor):
            return state
        if (
            not isinstance(descriptor, MapStateDescriptor)
            or descriptor.name not in self.descriptors
        ):
            declared = ", ".join(repr(name) for name in sorted(self.descriptors))
            raise ValueError(
                f"broadcast state {getattr(descriptor, 'name', descriptor)!r} was not declared: "
                f"pass its MapStateDescriptor to broadcast() (declared: {declared})"
            )
        state = self.states[descriptor.name] = self.operator_state().get_broadcast_state(descriptor)
        return state

    def current_key(self) -> Any:
        return self.key_ctx.key if self.key_ctx is not None else None

    def apply_to_keyed_state(self, descriptor: StateDescriptor, function: Any) -> None:
        backend = self.keyed_backend
        if backend is None:
            raise TypeError(
                "apply_to_keyed_state needs keyed state: use a KeyedBroadcastProcessFunction "
                "on a keyed stream"
            )
        process = getattr(function, "process", function)
        state = backend.get_state(descriptor)
        key_ctx = self.key_ctx
        for key_group, keys in _keys_by_group(backend, descriptor.name):
            for key in keys:
                key_ctx.key = key
                key_ctx.group = key_group
                process(key, state)
        key_ctx.key = None
        key_ctx.group = NO_KEY_GROUP


def _keys_by_group(backend: Any, name: str) -> Iterable[tuple[int, list[Any]]]:
    """Per key group, its keys with state ``name``, listed before any is visited, so that
    the function may change or clear their state."""
    for key_group in backend.key_groups:
        yield key_group, list(backend.keys(name, key_group))
