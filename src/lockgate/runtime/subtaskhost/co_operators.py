"""Two-input operators: ``connect(...)`` followed by ``map``, ``flat_map`` or ``process``.

A two-input operator heads its task; each input edge delivers to one of its two inputs
(``input(1)``, ``input(2)``), which call the user's function for that side. Its watermark is
the minimum over the channels of both inputs (Flink: the minimum of the two inputs), and on
keyed streams both inputs share the keyed state and the timers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lockgate.runtime.errors import UserFunctionError
from lockgate.runtime.subtaskhost.context import (
    KeyedProcessContext,
    KeyedTimerService,
    OnTimerContext,
    ProcessContext,
    TimerService,
)
from lockgate.runtime.subtaskhost.operators import Operator, OperatorContext, TimerFiringOperator
from lockgate.runtime.subtaskhost.timer_service import InternalTimerService

# Calls the user's function of one side with a record; yields the outputs (or None)
SideCall = Callable[[Any], Any]


def _side_calls(kind: str, function: Any, ctx: Any) -> tuple[SideCall, SideCall]:
    """The user's functions of both sides, as PyFlink's adapters call them."""
    if kind == "co_map":
        map1, map2 = function.map1, function.map2

        def mapped(fn: Callable[[Any], Any]) -> SideCall:
            def call(value: Any) -> Any:
                result = fn(value)
                return None if result is None else (result,)  # PyFlink drops None

            return call

        return mapped(map1), mapped(map2)
    if kind == "co_flat_map":
        return function.flat_map1, function.flat_map2
    process1, process2 = function.process_element1, function.process_element2
    return (lambda value: process1(value, ctx)), (lambda value: process2(value, ctx))


class TwoInputSide(Operator):
    """One input of a two-input operator: what an input edge delivers to."""

    def __init__(self, owner: TwoInputOperator, call: SideCall):
        super().__init__(owner.ctx)
        self.owner = owner
        self.call = call

    def process(self, value: Any) -> None:
        self.owner.run(self.call, value)

    def process_keyed(self, key_group: int, key: Any, value: Any) -> None:
        key_ctx = self.owner.key_ctx
        key_ctx.key = key
        key_ctx.group = key_group
        self.owner.run(self.call, value)


class TwoInputOperator(TimerFiringOperator):
    """Base of the operators with two inputs: ``inputs`` maps 1 and 2 to their sides;
    ``key_ctx`` is the keyed backend's key context on keyed streams."""

    handles_keys = True
    key_ctx: Any = None
    inputs: dict[int, TwoInputSide]

    def keyed_timers(self, function: Any) -> KeyedTimerService:
        """On keyed streams: the key context, the user's timers and ``on_timer``."""
        backend = self.ctx.keyed_backend
        self.key_ctx = backend.ctx
        self.timers = InternalTimerService(backend, "user")
        self.on_timer = getattr(function, "on_timer", None)
        return KeyedTimerService(self, self.timers)

    def input(self, index: int) -> Operator:
        return self.inputs[index]

    def process(self, value: Any) -> None:
        raise TypeError(f"operator '{self.ctx.name}' takes its records on one of two inputs")

    def run(self, call: SideCall, value: Any) -> None:
        emit = self.emit
        try:
            result = call(value)
            if result is not None:
                for out in result:
                    emit(out)
        except UserFunctionError:
            raise  # a chained operator's, attributed where it failed
        except Exception as exc:
            raise self.failure(exc, value) from exc


class CoOperator(TwoInputOperator):
    """``CoMapFunction``, ``CoFlatMapFunction`` or ``CoProcessFunction`` on two inputs
    (``kind``: "co_map", "co_flat_map", "co_process"); keyed when its inputs are."""

    def __init__(self, ctx: OperatorContext, function: Any, kind: str, keyed: bool):
        super().__init__(ctx, function)
        if keyed:
            timer_service = self.keyed_timers(function)
            process_ctx: ProcessContext = KeyedProcessContext(
                ctx.record, timer_service, self.key_ctx
            )
            self.timer_ctx = OnTimerContext(ctx.record, timer_service, self.key_ctx)
        else:
            advice = (
                "key both inputs (connect(...).key_by(k1, k2)) and use a KeyedCoProcessFunction"
            )
            process_ctx = ProcessContext(ctx.record, TimerService(self, advice))
        call1, call2 = _side_calls(kind, function, process_ctx)
        self.inputs = {1: TwoInputSide(self, call1), 2: TwoInputSide(self, call2)}
