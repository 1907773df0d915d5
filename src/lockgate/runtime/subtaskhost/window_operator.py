"""Flink's ``WindowOperator``: keyed windows with their assigner, trigger and function.

Window contents are namespaced keyed state (the window is the namespace), timers are the
operator's keyed timers with the window as namespace, and a key's session windows map to
the window holding their state in a keyed value (Flink's ``MergingWindowSet``): all of it
lives in the keyed backend, so windows are checkpointed and restored like any keyed state.

The rules are Flink's: an element goes into each window the assigner gives it unless that
window is already past its cleanup time (end + allowed lateness, for event time); an
element that entered no window and is behind the watermark by more than the allowed
lateness is late (to the late-data side output, else dropped); a firing emits the function
over the window's contents (nothing for empty contents); a window's state goes at its
cleanup time. Emitted records carry the window's ``max_timestamp()`` (Flink's; PyFlink uses
the time of what caused the firing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lockgate.common.clock import processing_time_ms
from lockgate.common.watermark_strategy import LONG_MAX, LONG_MIN
from lockgate.runtime.errors import UserFunctionError
from lockgate.runtime.subtaskhost.operators import Operator, OperatorContext
from lockgate.runtime.subtaskhost.timer_service import InternalTimerService
from lockgate.state.descriptors import StateDescriptor, ValueStateDescriptor

MERGING_WINDOW_SET = ValueStateDescriptor("merging-window-set")


@dataclass
class WindowOperatorSpec:
    """What a windowed stream's terminal call (reduce, aggregate, apply, process) built."""

    assigner: Any
    trigger: Any
    contents: StateDescriptor  # list, reducing or aggregating state of the window contents
    #: "value" (reduce/aggregate alone), "process", "apply", "all_process" or "all_apply"
    function_kind: str
    function: Any  # the user's window function (None for "value")
    allowed_lateness: int
    late_data_tag: Any  # an OutputTag, or None
    single_value: bool  # contents are one value (reduce/aggregate), not a list
    #: (size, slide, offset) when the assigner is a tumbling or sliding event-time one with
    #: the default EventTimeTrigger: the operator then does their work inline (the same
    #: windows, timers and firings, without the per-element calls)
    time_windows: tuple[int, int, int] | None = None
    window_type: Any = None  # the class of those windows (TimeWindow)


def cleanup_time(window: Any, allowed_lateness: int, event_time: bool) -> int:
    """When a window's state goes: its end plus the allowed lateness for event time, its
    end for processing time; LONG_MAX (never) on overflow."""
    end = window.max_timestamp()
    if not event_time:
        return int(end)
    total = end + allowed_lateness
    return LONG_MAX if end == LONG_MAX or total > LONG_MAX else int(total)


class WindowOperator(Operator):
    handles_keys = True

    def __init__(self, ctx: OperatorContext, spec: WindowOperatorSpec):
        super().__init__(ctx, spec.function)
        backend = ctx.keyed_backend
        self.spec = spec
        self.assigner = spec.assigner
        self.trigger = spec.trigger
        self.event_time = bool(spec.assigner.is_event_time())
        self.merging = callable(getattr(spec.assigner, "merge_windows", None))
        self.lateness = spec.allowed_lateness
        self.backend = backend
        self.key_ctx = backend.ctx
        self.ns_ctx = backend.ns_ctx
        self.contents = backend.get_state(spec.contents, namespaced=True)
        self.window_sets = backend.get_state(MERGING_WINDOW_SET) if self.merging else None
        self.timers = InternalTimerService(backend, "window")
        self.trigger_ctx = WindowTriggerContext(self)
        self.window_ctx = ProcessWindowContext(self)
        self.assigner_ctx = AssignerContext(ctx.runtime_context)
        self.emit_window = _window_function(spec, self.window_ctx)
        self.time_windows = spec.time_windows
        self.windows: dict[int, Any] = {}  # start -> window, for the inline path
        self.element = self._time_window_element if spec.time_windows else self._element

    # Elements ----------------------------------------------------------------------------

    def process_keyed(self, key_group: int, key: Any, value: Any) -> None:
        key_ctx = self.key_ctx
        key_ctx.key = key
        key_ctx.group = key_group
        self.element(value, self.ctx.record.value)

    def _time_window_element(self, value: Any, timestamp: int) -> None:
        """What ``_element`` does for tumbling and sliding event-time windows with the
        EventTimeTrigger, inline: each window not past its cleanup time takes the element
        and gets its trigger timer at its end (or fires at once, for an element late within
        the allowed lateness) and its cleanup timer."""
        if timestamp == LONG_MIN:
            self._element(value, timestamp)  # the assigner says what is wrong
            return
        assert self.time_windows is not None
        size, slide, offset = self.time_windows
        watermark, lateness = self.watermark, self.lateness
        key_ctx = self.key_ctx
        key, key_group = key_ctx.key, key_ctx.group
        ns = self.ns_ctx
        ns.group = key_group
        windows, add, queue = self.windows, self.contents.add, self.timers.event
        skipped = True
        start = timestamp - (timestamp - offset + slide) % slide
        lowest = timestamp - size
        try:
            while start > lowest:
                max_timestamp = start + size - 1
                cleanup = max_timestamp + lateness
                if cleanup > LONG_MAX:
                    cleanup = LONG_MAX
                if cleanup > watermark:
                    skipped = False
                    window = windows.get(start)
                    if window is None:
                        window = self._window(start, start + size)
                    ns.key = (key, window)
                    add(value)
                    if max_timestamp <= watermark:  # late, within the allowed lateness
                        contents = self._contents()
                        if contents is not None:
                            self._emit(key, window, contents)
                    else:
                        queue.add(key_group, key, window, max_timestamp)
                    if cleanup != max_timestamp and cleanup != LONG_MAX:
                        queue.add(key_group, key, window, cleanup)
                start -= slide
        except UserFunctionError:
            raise
        except Exception as exc:
            raise self.failure(exc, value) from exc
        if skipped and timestamp + lateness <= watermark:
            tag = self.spec.late_data_tag
            if tag is not None:
                self.emit((tag, value))

    def _window(self, start: int, end: int) -> Any:
        """The window [start, end) of the inline path, made once for many elements."""
        if len(self.windows) >= 65536:
            self.windows.clear()
        window = self.windows[start] = self.spec.window_type(start, end)
        return window

    def _element(self, value: Any, timestamp: int) -> None:
        try:
            windows = self.assigner.assign_windows(value, timestamp, self.assigner_ctx)
            if self.merging:
                skipped = self._merging_element(value, timestamp, windows)
            else:
                skipped = self._element_in(value, timestamp, windows)
        except UserFunctionError:
            raise
        except Exception as exc:
            raise self.failure(exc, value) from exc
        if skipped and self.event_time and timestamp + self.lateness <= self.watermark:
            tag = self.spec.late_data_tag
            if tag is not None:
                self.emit((tag, value))  # with the element's own timestamp

    def _element_in(self, value: Any, timestamp: int, windows: Iterable[Any]) -> bool:
        """Add ``value`` to ``windows``; True if none took it."""
        skipped = True
        key = self.key_ctx.key
        ns = self.ns_ctx
        ns.group = self.key_ctx.group
        for window in windows:
            if self._is_late(window):
                continue
            skipped = False
            ns.key = (key, window)
            self.contents.add(value)
            result = self.trigger_ctx.on_element(value, timestamp, window)
            if result.is_fire():
                contents = self._contents()
                if contents is None:
                    continue  # Flink skips the purge and the cleanup timer here too
                self._emit(key, window, contents)
            if result.is_purge():
                ns.key = (key, window)
                self.contents.clear()
            self._register_cleanup(window)
        return skipped

    def _merging_element(self, value: Any, timestamp: int, windows: Iterable[Any]) -> bool:
        skipped = True
        key = self.key_ctx.key
        ns = self.ns_ctx
        ns.group = self.key_ctx.group
        window_set = MergingWindowSet(self)
        for window in windows:
            actual = window_set.add_window(window)
            if self._is_late(actual):
                window_set.retire(actual)
                continue
            skipped = False
            state_window = window_set.state_window(actual)
            ns.key = (key, state_window)
            self.contents.add(value)
            result = self.trigger_ctx.on_element(value, timestamp, actual)
            if result.is_fire():
                ns.key = (key, state_window)
                contents = self._contents()
                if contents is None:
                    continue
                self._emit(key, actual, contents)
            if result.is_purge():
                ns.key = (key, state_window)
                self.contents.clear()
            self._register_cleanup(actual)
        window_set.persist()
        return skipped

    # Timers ------------------------------------------------------------------------------

    def advance_watermark(self, watermark: int, idle: bool) -> tuple[int, bool]:
        if watermark > self.watermark:
            self.watermark = watermark
        if self.time_windows:
            self._fire_time_windows(self.watermark)
        else:
            self.timers.advance_watermark(self.watermark, self._on_event_time)
        return self.watermark, idle

    def advance_processing_time(self, now: int) -> None:
        self.timers.advance_processing_time(now, self._on_processing_time)

    def next_processing_time(self) -> int | None:
        return self.timers.next_processing_time()

    def _on_event_time(self, timestamp: int, key: Any, window: Any) -> None:
        self._on_timer(timestamp, key, window, event_time=True)

    def _on_processing_time(self, timestamp: int, key: Any, window: Any) -> None:
        self._on_timer(timestamp, key, window, event_time=False)

    def _on_timer(self, timestamp: int, key: Any, window: Any, event_time: bool) -> None:
        ns = self.ns_ctx
        ns.group = self.key_ctx.group
        window_set = MergingWindowSet(self) if self.merging else None
        try:
            if window_set is not None:
                state_window = window_set.state_window(window)
                if state_window is None:
                    return  # the timer of a window that merged away or was cleaned up
            else:
                state_window = window
            if event_time:
                result = self.trigger_ctx.on_event_time(timestamp, window)
            else:
                result = self.trigger_ctx.on_processing_time(timestamp, window)
            if result.is_fire():
                ns.key = (key, state_window)
                contents = self._contents()
                if contents is not None:
                    self._emit(key, window, contents)
            if result.is_purge():
                ns.key = (key, state_window)
                self.contents.clear()
            if event_time == self.event_time and timestamp == self._cleanup_time(window):
                self._clear_all_state(key, window, state_window, window_set)
            if window_set is not None:
                window_set.persist()
        except UserFunctionError:
            raise
        except Exception as exc:
            raise self.failure(exc, what=f"a timer at {timestamp} of window {window!r}") from exc

    def _fire_time_windows(self, watermark: int) -> None:
        """``_on_timer`` for the inline path, over all due event-time timers: the
        EventTimeTrigger fires at a window's end; at its cleanup time its state goes (its
        trigger's timer has fired by then, so the trigger has nothing to clear)."""
        key_ctx, ns, record, emit = self.key_ctx, self.ns_ctx, self.ctx.record, self.emit
        contents, emit_window, window_ctx = self.contents, self.emit_window, self.window_ctx
        lateness, single = self.lateness, self.spec.single_value
        clears_function = self.spec.function_kind in ("process", "all_process")
        timestamp, window = LONG_MIN, None
        try:
            for timestamp, key_group, key, window in self.timers.event.poll_due(watermark):
                key_ctx.group = ns.group = key_group
                key_ctx.key = key
                ns.key = (key, window)
                max_timestamp = window.end - 1
                if timestamp == max_timestamp:
                    value = contents.get()
                    if value is not None and (single or value):
                        record.value = max_timestamp
                        window_ctx.current = window
                        result = emit_window(key, window, value)
                        if result is not None:
                            for out in result:
                                emit(out)
                if timestamp == min(max_timestamp + lateness, LONG_MAX):
                    if clears_function:
                        self._clear_all_state(key, window, window, None, clear_trigger=False)
                    else:
                        ns.key = (key, window)
                        contents.clear()
        except UserFunctionError:
            raise
        except Exception as exc:
            raise self.failure(exc, what=f"a timer at {timestamp} of window {window!r}") from exc
        finally:
            record.value = LONG_MIN

    # Helpers -----------------------------------------------------------------------------

    def _cleanup_time(self, window: Any) -> int:
        return cleanup_time(window, self.lateness, self.event_time)

    def _is_late(self, window: Any) -> bool:
        return self.event_time and self._cleanup_time(window) <= self.watermark

    def _register_cleanup(self, window: Any) -> None:
        cleanup = self._cleanup_time(window)
        if cleanup == LONG_MAX:
            return
        if self.event_time:
            self.timers.register_event_time_timer(window, cleanup)
        else:
            self.timers.register_processing_time_timer(window, cleanup)

    def _delete_cleanup(self, window: Any) -> None:
        cleanup = self._cleanup_time(window)
        if cleanup == LONG_MAX:
            return
        if self.event_time:
            self.timers.delete_event_time_timer(window, cleanup)
        else:
            self.timers.delete_processing_time_timer(window, cleanup)

    def _contents(self) -> Any:
        """The current namespace's contents; None when empty."""
        contents = self.contents.get()
        if contents is None or (not self.spec.single_value and not contents):
            return None
        return contents

    def _emit(self, key: Any, window: Any, contents: Any) -> None:
        record = self.ctx.record
        saved = record.value
        record.value = window.max_timestamp()
        self.ns_ctx.key = (key, window)  # window_state() of a process function
        self.window_ctx.current = window
        emit = self.emit
        try:
            result = self.emit_window(key, window, contents)
            if result is not None:
                for out in result:
                    emit(out)
        finally:
            record.value = saved

    def _clear_all_state(
        self,
        key: Any,
        window: Any,
        state_window: Any,
        window_set: MergingWindowSet | None,
        clear_trigger: bool = True,
    ) -> None:
        ns = self.ns_ctx
        ns.key = (key, state_window)
        self.contents.clear()
        if clear_trigger:
            self.trigger_ctx.clear(window)
        if self.spec.function_kind in ("process", "all_process"):
            clear = getattr(self.function, "clear", None)
            if clear is not None:
                ns.key = (key, window)
                self.window_ctx.current = window
                clear(self.window_ctx)
        if window_set is not None:
            window_set.retire(window)


class MergingWindowSet:
    """A key's session windows (Flink's ``MergingWindowSet``): window -> the window whose
    namespace holds its state. Read from keyed state when made, written by ``persist``."""

    def __init__(self, operator: WindowOperator):
        self.operator = operator
        assert operator.window_sets is not None
        self.state = operator.window_sets
        self.mapping: dict[Any, Any] = dict(self.state.value() or {})
        self.initial = dict(self.mapping)

    def state_window(self, window: Any) -> Any:
        return self.mapping.get(window)

    def retire(self, window: Any) -> None:
        if self.mapping.pop(window, None) is None:
            raise RuntimeError(f"window {window!r} is not in the in-flight window set")

    def persist(self) -> None:
        if self.mapping != self.initial:
            self.state.update(self.mapping or None)
            self.initial = dict(self.mapping)

    def add_window(self, new_window: Any) -> Any:
        """Add ``new_window``, merging it with the windows it overlaps; the window it ends
        up in."""
        groups: list[tuple[Any, list[Any]]] = []

        class Collect:
            def merge(self, to_be_merged: Iterable[Any], merge_result: Any) -> None:
                groups.append((merge_result, list(to_be_merged)))

        self.operator.assigner.merge_windows([*self.mapping, new_window], Collect())
        result = new_window
        merged_new = False
        for merge_result, merged in groups:
            if new_window in merged:
                merged.remove(new_window)
                merged_new = True
                result = merge_result
            # the state of the merge result is that of its first pre-existing window (a
            # fixed choice, so that re-running an epoch merges the same way)
            target = self.mapping[merged[0]]
            merged_states = [self.mapping.pop(w) for w in merged if w in self.mapping]
            self.mapping[merge_result] = target
            merged_states.remove(target)
            if not (len(merged) == 1 and merged[0] == merge_result):
                self.operator.trigger_ctx.merge(merge_result, merged, target, merged_states)
        if not groups or (result == new_window and not merged_new):
            self.mapping[result] = result
        return result


class WindowTriggerContext:
    """``Trigger.TriggerContext`` and ``OnMergeContext`` of the window being handled."""

    def __init__(self, operator: WindowOperator):
        self.operator = operator
        self.trigger = operator.trigger
        self.window: Any = None
        self.merged_windows: list[Any] = []

    def _at(self, window: Any) -> None:
        self.window = window
        ns = self.operator.ns_ctx
        ns.key = (self.operator.key_ctx.key, window)
        ns.group = self.operator.key_ctx.group

    def on_element(self, value: Any, timestamp: int, window: Any) -> Any:
        self._at(window)
        return self.trigger.on_element(value, timestamp, window, self)

    def on_event_time(self, timestamp: int, window: Any) -> Any:
        self._at(window)
        return self.trigger.on_event_time(timestamp, window, self)

    def on_processing_time(self, timestamp: int, window: Any) -> Any:
        self._at(window)
        return self.trigger.on_processing_time(timestamp, window, self)

    def clear(self, window: Any) -> None:
        self._at(window)
        self.trigger.clear(window, self)

    def merge(
        self, merge_result: Any, merged: list[Any], state_window: Any, merged_states: list[Any]
    ) -> None:
        """Flink's merge function of the window operator: trigger state and timers of
        ``merged`` go to ``merge_result``, their contents into ``state_window``'s."""
        operator = self.operator
        if operator.event_time:
            if merge_result.max_timestamp() + operator.lateness <= operator.watermark:
                raise ValueError(
                    "The end timestamp of an event-time window cannot become earlier than the "
                    f"current watermark by merging. Current watermark: {operator.watermark} "
                    f"window: {merge_result!r}"
                )
        elif merge_result.max_timestamp() <= processing_time_ms():
            raise ValueError(
                "The end timestamp of a processing-time window cannot become earlier than "
                f"the current processing time by merging. window: {merge_result!r}"
            )
        self.merged_windows = merged
        self._at(merge_result)
        self.trigger.on_merge(merge_result, self)
        self.merged_windows = []
        for window in merged:
            self.clear(window)
            operator._delete_cleanup(window)
        self._at(state_window)
        operator.contents.merge_namespaces(state_window, merged_states)

    # The TriggerContext interface --------------------------------------------------------

    def get_current_processing_time(self) -> int:
        return processing_time_ms()

    def get_metric_group(self) -> Any:
        return None

    def get_current_watermark(self) -> int:
        return self.operator.watermark

    def register_processing_time_timer(self, time: int) -> None:
        self.operator.timers.register_processing_time_timer(self.window, time)

    def register_event_time_timer(self, time: int) -> None:
        self.operator.timers.register_event_time_timer(self.window, time)

    def delete_processing_time_timer(self, time: int) -> None:
        self.operator.timers.delete_processing_time_timer(self.window, time)

    def delete_event_time_timer(self, time: int) -> None:
        self.operator.timers.delete_event_time_timer(self.window, time)

    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> Any:
        return self.operator.backend.get_state(state_descriptor, namespaced=True)

    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
        state = self.get_partitioned_state(state_descriptor)
        if not callable(getattr(state, "merge_namespaces", None)):
            raise TypeError(
                f"state {state_descriptor.name!r} cannot be merged: only list, reducing and "
                "aggregating state can"
            )
        if self.merged_windows:
            state.merge_namespaces(self.window, self.merged_windows)


class WindowStateStore:
    """``window_state()`` of a process window function: keyed state per window."""

    def __init__(self, operator: WindowOperator):
        self.operator = operator

    def _get(self, descriptor: StateDescriptor) -> Any:
        if self.operator.merging:
            raise TypeError("Per-window state is not allowed when using merging windows.")
        return self.operator.backend.get_state(descriptor, namespaced=True)

    get_state = _get
    get_list_state = _get
    get_map_state = _get
    get_reducing_state = _get
    get_aggregating_state = _get


class ProcessWindowContext:
    """``ProcessWindowFunction.Context`` (and ``ProcessAllWindowFunction.Context``)."""

    def __init__(self, operator: WindowOperator):
        self.operator = operator
        self.current: Any = None  # the window being emitted or cleared
        self._window_state = WindowStateStore(operator)

    def window(self) -> Any:
        return self.current

    def current_processing_time(self) -> int:
        return processing_time_ms()

    def current_watermark(self) -> int:
        return self.operator.watermark

    def window_state(self) -> WindowStateStore:
        return self._window_state

    def global_state(self) -> Any:
        return self.operator.ctx.runtime_context


class AssignerContext:
    """``WindowAssigner.WindowAssignerContext``."""

    def __init__(self, runtime_context: Any):
        self.runtime_context = runtime_context

    def get_current_processing_time(self) -> int:
        return processing_time_ms()

    def get_runtime_context(self) -> Any:
        return self.runtime_context


def _window_function(
    spec: WindowOperatorSpec, context: ProcessWindowContext
) -> Callable[[Any, Any, Any], Iterable[Any] | None]:
    """Calls the user's window function the way its kind takes the contents."""
    function = spec.function
    single = spec.single_value

    def elements(contents: Any) -> list[Any]:
        return [contents] if single else contents

    kind = spec.function_kind
    if kind == "value":
        return lambda key, window, contents: (contents,)
    if kind == "process":
        process = function.process
        return lambda key, window, contents: process(key, context, elements(contents))
    if kind == "apply":
        apply = function.apply
        return lambda key, window, contents: apply(key, window, elements(contents))
    if kind == "all_process":
        process = function.process
        return lambda key, window, contents: process(context, elements(contents))
    if kind == "all_apply":
        apply = function.apply
        return lambda key, window, contents: apply(window, elements(contents))
    raise ValueError(f"unknown window function kind {kind!r}")
