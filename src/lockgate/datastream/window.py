"""Windows, window assigners and triggers: PyFlink's ``pyflink.datastream.window``.

Assigners take ``Time`` (as PyFlink's); a negative or zero size, slide or gap fails when the
assigner is built, so before the job starts. Windows are small immutable tuples, so they
hash, compare and travel as cheaply as their fields; their window state is keyed state
with the window as namespace (``lockgate.state.namespaces``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable
from enum import Enum
from typing import Any, Generic, NamedTuple, TypeVar

from lockgate.common.time import Duration, Time
from lockgate.common.unsupported import unsupported
from lockgate.state.descriptors import ReducingStateDescriptor, ValueStateDescriptor

MAX_LONG_VALUE = (1 << 63) - 1
MIN_LONG_VALUE = -(1 << 63)

T = TypeVar("T")
W = TypeVar("W")


class Window(ABC):
    """A window: a finite group of elements; ``max_timestamp`` is its last moment."""

    @abstractmethod
    def max_timestamp(self) -> int: ...


class TimeWindow(NamedTuple):
    """The time interval [start, end)."""

    start: int
    end: int

    def max_timestamp(self) -> int:
        return self.end - 1

    def intersects(self, other: TimeWindow) -> bool:
        """Overlapping or touching windows (touching session windows merge)."""
        return self.start <= other.end and self.end >= other.start

    def cover(self, other: TimeWindow) -> TimeWindow:
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        return timestamp - (timestamp - offset + window_size) % window_size

    @staticmethod
    def merge_windows(windows: Iterable[TimeWindow], callback: Any) -> None:
        """Merge overlapping windows; ``callback.merge(merged, result)`` per group of more
        than one window (windows sorted by start)."""
        merged: list[tuple[TimeWindow, list[TimeWindow]]] = []
        for window in sorted(windows):
            if merged and merged[-1][0].intersects(window):
                cover, members = merged[-1]
                merged[-1] = (cover.cover(window), [*members, window])
            else:
                merged.append((window, [window]))
        for cover, members in merged:
            if len(members) > 1:
                callback.merge(members, cover)


class CountWindow(NamedTuple):
    """The ``id``-th window of a count window assigner."""

    id: int

    def max_timestamp(self) -> int:
        return MAX_LONG_VALUE


class GlobalWindow(NamedTuple):
    """The one window of ``GlobalWindows``: every element of a key."""

    @staticmethod
    def get() -> GlobalWindow:
        return _GLOBAL_WINDOW

    def max_timestamp(self) -> int:
        return MAX_LONG_VALUE

    def __repr__(self) -> str:
        return "GlobalWindow"


_GLOBAL_WINDOW = GlobalWindow()
for _window in (TimeWindow, CountWindow, GlobalWindow):
    Window.register(_window)


class TriggerResult(Enum):
    CONTINUE = (False, False)
    FIRE_AND_PURGE = (True, True)
    FIRE = (True, False)
    PURGE = (False, True)

    # plain attributes, set below: an Enum's ``value`` is slow to read, and the window
    # operator asks twice per element and window
    _fire: bool
    _purge: bool

    def is_fire(self) -> bool:
        return self._fire

    def is_purge(self) -> bool:
        return self._purge


for _result in TriggerResult:
    _result._fire, _result._purge = _result.value


class Trigger(ABC, Generic[T, W]):
    """When a window fires (emits its contents) and purges (clears them)."""

    class TriggerContext(ABC):
        @abstractmethod
        def get_current_processing_time(self) -> int: ...

        @abstractmethod
        def get_metric_group(self) -> Any: ...

        @abstractmethod
        def get_current_watermark(self) -> int: ...

        @abstractmethod
        def register_processing_time_timer(self, time: int) -> None: ...

        @abstractmethod
        def register_event_time_timer(self, time: int) -> None: ...

        @abstractmethod
        def delete_processing_time_timer(self, time: int) -> None: ...

        @abstractmethod
        def delete_event_time_timer(self, time: int) -> None: ...

        @abstractmethod
        def get_partitioned_state(self, state_descriptor: Any) -> Any: ...

    class OnMergeContext(TriggerContext):
        @abstractmethod
        def merge_partitioned_state(self, state_descriptor: Any) -> None: ...

    @abstractmethod
    def on_element(
        self, element: T, timestamp: int, window: W, ctx: Trigger.TriggerContext
    ) -> TriggerResult: ...

    @abstractmethod
    def on_processing_time(
        self, time: int, window: W, ctx: Trigger.TriggerContext
    ) -> TriggerResult: ...

    @abstractmethod
    def on_event_time(self, time: int, window: W, ctx: Trigger.TriggerContext) -> TriggerResult: ...

    def can_merge(self) -> bool:
        return False

    def on_merge(self, window: W, ctx: Trigger.OnMergeContext) -> None:
        raise TypeError(f"{type(self).__name__} does not support merging windows")

    @abstractmethod
    def clear(self, window: W, ctx: Trigger.TriggerContext) -> None: ...


class EventTimeTrigger(Trigger[Any, Any]):
    """Fires once the watermark passes the end of the window."""

    @staticmethod
    def create() -> EventTimeTrigger:
        return EventTimeTrigger()

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE  # a late element within the allowed lateness
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Any) -> None:
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())


class ProcessingTimeTrigger(Trigger[Any, Any]):
    """Fires once the processing-time clock passes the end of the window."""

    @staticmethod
    def create() -> ProcessingTimeTrigger:
        return ProcessingTimeTrigger()

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> TriggerResult:
        ctx.register_processing_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.FIRE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Any) -> None:
        if window.max_timestamp() > ctx.get_current_processing_time():
            ctx.register_processing_time_timer(window.max_timestamp())

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.delete_processing_time_timer(window.max_timestamp())


def _earliest(a: int, b: int) -> int:
    return min(a, b)


def _total(a: int, b: int) -> int:
    return a + b


def _interval(interval: Any, what: str) -> int:
    millis = interval.to_milliseconds() if isinstance(interval, Duration) else interval
    if not isinstance(millis, int) or millis <= 0:
        raise ValueError(f"{what} must be a positive Time, got {interval!r}")
    return millis


class _ContinuousTrigger(Trigger[Any, Any]):
    """Fires every ``interval`` within a window; the next firing time is trigger state
    ("fire-time") and a timer of the trigger's time domain."""

    def __init__(self, interval: int):
        self.interval = _interval(interval, f"the interval of a {type(self).__name__}")
        self.fire_time = ReducingStateDescriptor("fire-time", _earliest)

    @classmethod
    def of(cls, interval: Time) -> Any:
        return cls(_interval(interval, "interval"))

    def _register(self, ctx: Any, time: int) -> None:
        raise NotImplementedError

    def _delete(self, ctx: Any, time: int) -> None:
        raise NotImplementedError

    def register_next_fire_timestamp(
        self, time: int, window: Any, ctx: Any, fire_timestamp_state: Any
    ) -> None:
        """Schedule the firing one interval after ``time`` (at the window's end at the
        latest): in ``fire_timestamp_state`` and as a timer, as PyFlink's does."""
        next_fire = min(time + self.interval, window.max_timestamp())
        fire_timestamp_state.add(next_fire)
        self._register(ctx, next_fire)

    def _fires_at(self, time: int, ctx: Any, window: Any) -> bool:
        """Whether ``time`` is the stored firing time; if so, schedule the next one."""
        fire_time = ctx.get_partitioned_state(self.fire_time)
        if fire_time.get() != time:
            return False
        fire_time.clear()
        self.register_next_fire_timestamp(time, window, ctx, fire_time)
        return True

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Any) -> None:
        ctx.merge_partitioned_state(self.fire_time)
        next_fire = ctx.get_partitioned_state(self.fire_time).get()
        if next_fire is not None:
            self._register(ctx, next_fire)

    def clear(self, window: Any, ctx: Any) -> None:
        fire_time = ctx.get_partitioned_state(self.fire_time)
        timestamp = fire_time.get()
        if timestamp is not None:
            self._delete(ctx, timestamp)
            fire_time.clear()


class ContinuousEventTimeTrigger(_ContinuousTrigger):
    """Fires every ``interval`` of event time within the window, and at its end."""

    def _register(self, ctx: Any, time: int) -> None:
        ctx.register_event_time_timer(time)

    def _delete(self, ctx: Any, time: int) -> None:
        ctx.delete_event_time_timer(time)

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        fire_time = ctx.get_partitioned_state(self.fire_time)
        if fire_time.get() is None:
            start = timestamp - timestamp % self.interval
            self.register_next_fire_timestamp(start, window, ctx, fire_time)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        if time == window.max_timestamp() or self._fires_at(time, ctx, window):
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE


class ContinuousProcessingTimeTrigger(_ContinuousTrigger):
    """Fires every ``interval`` of processing time within the window."""

    def _register(self, ctx: Any, time: int) -> None:
        ctx.register_processing_time_timer(time)

    def _delete(self, ctx: Any, time: int) -> None:
        ctx.delete_processing_time_timer(time)

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> TriggerResult:
        fire_time = ctx.get_partitioned_state(self.fire_time)
        if fire_time.get() is None:
            now = ctx.get_current_processing_time()
            self.register_next_fire_timestamp(now - now % self.interval, window, ctx, fire_time)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.FIRE if self._fires_at(time, ctx, window) else TriggerResult.CONTINUE


class CountTrigger(Trigger[Any, Any]):
    """Fires (without purging) every ``window_size`` elements of a window."""

    def __init__(self, window_size: int):
        if not isinstance(window_size, int) or window_size <= 0:
            raise ValueError(f"a CountTrigger needs a positive count, got {window_size!r}")
        self.window_size = window_size
        self.count = ReducingStateDescriptor("count", _total)

    @staticmethod
    def of(window_size: int) -> CountTrigger:
        return CountTrigger(window_size)

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> TriggerResult:
        count = ctx.get_partitioned_state(self.count)
        count.add(1)
        if count.get() >= self.window_size:
            count.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Any) -> None:
        ctx.merge_partitioned_state(self.count)

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.get_partitioned_state(self.count).clear()


class PurgingTrigger(Trigger[Any, Any]):
    """Turns every firing of ``nested_trigger`` into a firing that also purges."""

    def __init__(self, nested_trigger: Trigger[Any, Any]):
        self.nested_trigger = nested_trigger

    @staticmethod
    def of(nested_trigger: Trigger[Any, Any]) -> PurgingTrigger:
        return PurgingTrigger(nested_trigger)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if result.is_fire() else result

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> TriggerResult:
        return self._purging(self.nested_trigger.on_element(element, timestamp, window, ctx))

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return self._purging(self.nested_trigger.on_event_time(time, window, ctx))

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return self._purging(self.nested_trigger.on_processing_time(time, window, ctx))

    def can_merge(self) -> bool:
        return self.nested_trigger.can_merge()

    def on_merge(self, window: Any, ctx: Any) -> None:
        self.nested_trigger.on_merge(window, ctx)

    def clear(self, window: Any, ctx: Any) -> None:
        self.nested_trigger.clear(window, ctx)


class NeverTrigger(Trigger[Any, Any]):
    """Never fires: the default of ``GlobalWindows``."""

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Any) -> None:
        pass

    def clear(self, window: Any, ctx: Any) -> None:
        pass


# Assigners -----------------------------------------------------------------------------------


class WindowAssigner(ABC, Generic[T, W]):
    """Assigns each element to zero or more windows."""

    class WindowAssignerContext(ABC):
        @abstractmethod
        def get_current_processing_time(self) -> int: ...

        @abstractmethod
        def get_runtime_context(self) -> Any: ...

    @abstractmethod
    def assign_windows(
        self, element: T, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[W]: ...

    @abstractmethod
    def get_default_trigger(self, env: Any) -> Trigger[T, W]: ...

    def get_window_serializer(self) -> Any:
        return None  # windows travel as themselves (see the module's docstring)

    @abstractmethod
    def is_event_time(self) -> bool: ...


class MergingWindowAssigner(WindowAssigner[T, W]):
    """An assigner whose windows merge (sessions)."""

    class MergeCallback(ABC):
        @abstractmethod
        def merge(self, to_be_merged: Iterable[Any], merge_result: Any) -> None: ...

    @abstractmethod
    def merge_windows(self, windows: Iterable[W], callback: Any) -> None: ...


class SessionWindowTimeGapExtractor(ABC):
    """The gap (ms) after an element before its session window closes."""

    @abstractmethod
    def extract(self, element: Any) -> int: ...


def _millis(value: Any, what: str) -> int:
    if isinstance(value, Duration):
        return value.to_milliseconds()
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"{what} must be a Time (e.g. Time.seconds(5)), got {value!r}")


def _positive(value: Any, what: str) -> int:
    millis = _millis(value, what)
    if millis <= 0:
        raise ValueError(f"{what} must be positive, got {millis} ms")
    return millis


class _EventTime:
    """Windows by the element's timestamp, fired by the watermark."""

    def _time(self, timestamp: int, context: Any) -> int:
        if timestamp <= MIN_LONG_VALUE:
            raise ValueError(
                f"record has no timestamp ({MIN_LONG_VALUE}): {type(self).__name__} needs event "
                "time; give the stream timestamps with assign_timestamps_and_watermarks (or a "
                "source's WatermarkStrategy), or use a processing-time assigner"
            )
        return timestamp

    def get_default_trigger(self, env: Any) -> Trigger[Any, Any]:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


class _ProcessingTime:
    """Windows by the clock when the element arrives, fired by the clock."""

    def _time(self, timestamp: int, context: Any) -> int:
        return int(context.get_current_processing_time())

    def get_default_trigger(self, env: Any) -> Trigger[Any, Any]:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False


class _Tumbling(WindowAssigner[Any, TimeWindow]):
    """Fixed-size, non-overlapping windows."""

    _time: Any  # of the time domain (_EventTime, _ProcessingTime)

    def __init__(self, size: int, offset: int):
        self.size = _positive(size, "the size of a tumbling window")
        self.offset = _millis(offset, "the offset of a tumbling window")
        if abs(self.offset) >= self.size:
            raise ValueError(
                f"a tumbling window's offset must be smaller than its size: |{self.offset}| "
                f">= {self.size}"
            )

    @classmethod
    def of(cls, size: Time, offset: Time | None = None) -> Any:
        return cls(_millis(size, "size"), _millis(offset, "offset") if offset is not None else 0)

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[TimeWindow]:
        time = self._time(timestamp, context)
        start = time - (time - self.offset + self.size) % self.size
        return [TimeWindow(start, start + self.size)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.size}, {self.offset})"


class TumblingEventTimeWindows(_EventTime, _Tumbling):
    """Fixed-size, non-overlapping windows of event time."""


class TumblingProcessingTimeWindows(_ProcessingTime, _Tumbling):
    """Fixed-size, non-overlapping windows of processing time."""


class _Sliding(WindowAssigner[Any, TimeWindow]):
    """Windows of ``size`` starting every ``slide`` (the latest first, as in PyFlink)."""

    _time: Any

    def __init__(self, size: int, slide: int, offset: int):
        self.size = _positive(size, "the size of a sliding window")
        self.slide = _positive(slide, "the slide of a sliding window")
        self.offset = _millis(offset, "the offset of a sliding window")
        if abs(self.offset) >= self.slide:
            raise ValueError(
                f"a sliding window's offset must be smaller than its slide: |{self.offset}| "
                f">= {self.slide}"
            )

    @classmethod
    def of(cls, size: Time, slide: Time, offset: Time | None = None) -> Any:
        return cls(
            _millis(size, "size"),
            _millis(slide, "slide"),
            _millis(offset, "offset") if offset is not None else 0,
        )

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[TimeWindow]:
        time = self._time(timestamp, context)
        size, slide = self.size, self.slide
        last_start = time - (time - self.offset + slide) % slide
        return [TimeWindow(start, start + size) for start in range(last_start, time - size, -slide)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.size}, {self.slide}, {self.offset})"


class SlidingEventTimeWindows(_EventTime, _Sliding):
    """Windows of ``size`` starting every ``slide`` of event time."""


class SlidingProcessingTimeWindows(_ProcessingTime, _Sliding):
    """Windows of ``size`` starting every ``slide`` of processing time."""


class _Sessions(MergingWindowAssigner[Any, TimeWindow]):
    """Sessions: a window closes after ``session_gap`` without elements; windows that
    overlap or touch merge."""

    _time: Any

    def __init__(self, session_gap: int):
        self.session_gap = _positive(session_gap, "the gap of a session window")

    @classmethod
    def with_gap(cls, size: Time) -> Any:
        return cls(_millis(size, "gap"))

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[TimeWindow]:
        time = self._time(timestamp, context)
        return [TimeWindow(time, time + self.gap(element))]

    def gap(self, element: Any) -> int:
        return self.session_gap

    def merge_windows(self, windows: Any, callback: Any) -> None:
        TimeWindow.merge_windows(windows, callback)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.session_gap})"


class _DynamicSessions(_Sessions):
    """Sessions whose gap each element decides (``SessionWindowTimeGapExtractor``)."""

    def __init__(self, session_window_time_gap_extractor: SessionWindowTimeGapExtractor):
        if not callable(getattr(session_window_time_gap_extractor, "extract", None)):
            raise TypeError(
                "a dynamic session gap needs a SessionWindowTimeGapExtractor, got "
                f"{session_window_time_gap_extractor!r}"
            )
        self.extractor = session_window_time_gap_extractor

    @classmethod
    def with_dynamic_gap(cls, extractor: SessionWindowTimeGapExtractor) -> Any:
        return cls(extractor)

    def gap(self, element: Any) -> int:
        gap = self.extractor.extract(element)
        if not isinstance(gap, int) or isinstance(gap, bool) or gap <= 0:
            raise ValueError(f"Dynamic session time gap must satisfy 0 < gap, got {gap!r}")
        return gap

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.extractor!r})"


class DynamicEventTimeSessionWindows(_EventTime, _DynamicSessions):
    """Event-time sessions whose gap each element decides."""


class DynamicProcessingTimeSessionWindows(_ProcessingTime, _DynamicSessions):
    """Processing-time sessions whose gap each element decides."""


class EventTimeSessionWindows(_EventTime, _Sessions):
    """Sessions of event time."""

    @staticmethod
    def with_dynamic_gap(
        extractor: SessionWindowTimeGapExtractor,
    ) -> DynamicEventTimeSessionWindows:
        return DynamicEventTimeSessionWindows(extractor)


class ProcessingTimeSessionWindows(_ProcessingTime, _Sessions):
    """Sessions of processing time."""

    @staticmethod
    def with_dynamic_gap(
        extractor: SessionWindowTimeGapExtractor,
    ) -> DynamicProcessingTimeSessionWindows:
        return DynamicProcessingTimeSessionWindows(extractor)


class GlobalWindows(WindowAssigner[Any, GlobalWindow]):
    """One window per key holding all its elements; fires only by a custom trigger."""

    @staticmethod
    def create() -> GlobalWindows:
        return GlobalWindows()

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[GlobalWindow]:
        return [_GLOBAL_WINDOW]

    def get_default_trigger(self, env: Any) -> NeverTrigger:
        return NeverTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "GlobalWindows()"


def _count_trigger(window_size: int) -> Trigger[Any, Any]:
    """A count window's trigger: it fires once its window holds ``window_size`` elements.
    PyFlink's is a CountTrigger that keeps the contents of a fired window for ever (a count
    window has no end, hence no cleanup); a fired count window never takes another element,
    so purging it gives the same output without the contents piling up."""
    return PurgingTrigger(CountTrigger(window_size))


class CountTumblingWindowAssigner(WindowAssigner[Any, CountWindow]):
    """Per key, elements 0..n-1 in window 0, n..2n-1 in window 1, and so on."""

    def __init__(self, window_size: int):
        if not isinstance(window_size, int) or window_size <= 0:
            raise ValueError(f"a count window's size must be positive, got {window_size!r}")
        self.window_size = window_size
        self.counter = ValueStateDescriptor("tumble-count-assigner")

    @staticmethod
    def of(window_size: int) -> CountTumblingWindowAssigner:
        return CountTumblingWindowAssigner(window_size)

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[CountWindow]:
        counter = context.get_runtime_context().get_state(self.counter)
        count = counter.value() or 0
        counter.update(count + 1)
        return [CountWindow(count // self.window_size)]

    def get_default_trigger(self, env: Any) -> Trigger[Any, Any]:
        return _count_trigger(self.window_size)

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CountTumblingWindowAssigner({self.window_size})"


class CountSlidingWindowAssigner(WindowAssigner[Any, CountWindow]):
    """Per key, windows of ``window_size`` elements, a new one every ``window_slide``."""

    def __init__(self, window_size: int, window_slide: int):
        for value, what in ((window_size, "size"), (window_slide, "slide")):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"a count window's {what} must be positive, got {value!r}")
        self.window_size = window_size
        self.window_slide = window_slide
        self.counter = ValueStateDescriptor("slide-count-assigner")

    @staticmethod
    def of(window_size: int, window_slide: int) -> CountSlidingWindowAssigner:
        return CountSlidingWindowAssigner(window_size, window_slide)

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[CountWindow]:
        counter = context.get_runtime_context().get_state(self.counter)
        count = counter.value() or 0
        counter.update(count + 1)
        windows = []
        window_id = count // self.window_slide
        while window_id >= 0 and count <= window_id * self.window_slide + self.window_size - 1:
            windows.append(CountWindow(window_id))
            window_id -= 1
        return windows

    def get_default_trigger(self, env: Any) -> Trigger[Any, Any]:
        return _count_trigger(self.window_size)

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CountSlidingWindowAssigner({self.window_size}, {self.window_slide})"


_SERIALIZED = "the window classes themselves (lockgate serializes windows, they need no serializer)"
TimeWindowSerializer = unsupported("TimeWindowSerializer", _SERIALIZED, __name__)
CountWindowSerializer = unsupported("CountWindowSerializer", _SERIALIZED, __name__)
GlobalWindowSerializer = unsupported("GlobalWindowSerializer", _SERIALIZED, __name__)


__all__ = [
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountSlidingWindowAssigner",
    "CountTrigger",
    "CountTumblingWindowAssigner",
    "CountWindow",
    "CountWindowSerializer",
    "DynamicEventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
    "EventTimeSessionWindows",
    "EventTimeTrigger",
    "GlobalWindow",
    "GlobalWindowSerializer",
    "GlobalWindows",
    "MergingWindowAssigner",
    "NeverTrigger",
    "ProcessingTimeSessionWindows",
    "ProcessingTimeTrigger",
    "PurgingTrigger",
    "SessionWindowTimeGapExtractor",
    "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows",
    "TimeWindow",
    "TimeWindowSerializer",
    "Trigger",
    "TriggerResult",
    "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows",
    "Window",
    "WindowAssigner",
]
