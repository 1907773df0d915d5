"""State time-to-live in the backends: the TTL decorators of keyed state and the form in
which the backends store a state with TTL (its configuration, PyFlink's ``StateTtlConfig``,
is in ``ttl_config``).

As in Flink (``TtlStateFactory``), TTL does not live inside a backend: a state with TTL is
a wrapper around a plain ("raw") state of the same name that the backend creates, and the
raw state stores every user value together with its last access time in milliseconds:

============================  ==========  ============================================
user state kind               raw kind    raw value of one key
============================  ==========  ============================================
value, reducing, aggregating  value       ``(value_or_accumulator, last_access_ms)``
list                          list        ``[(element, last_access_ms), ...]``
map                           map         ``{user_key: (value, last_access_ms), ...}``
============================  ==========  ============================================

Expiry is per value for value, reducing and aggregating state, per element for list state
and per entry for map state. A value has expired when ``last_access_ms + ttl <= now`` on
the processing-time clock (``time.time()`` in milliseconds).

A backend records such a state under the kind ``"ttl-" + kind`` (see :func:`stored_kind`)
in its snapshots, so that a state written with TTL is never read back without it (or the
other way round): that fails with an error naming the state instead of handing out
``(value, timestamp)`` tuples.

Backend contract (see ``HeapKeyedStateBackend.get_state`` for the reference):

- ``settings = ttl_settings(descriptor)``; ``None`` means no TTL (no wrapper, no cost).
- Otherwise register the name under ``stored_kind(descriptor)`` and return
  ``wrap_with_ttl(descriptor, get_raw_state, clock)``, where ``get_raw_state(raw)`` returns
  the backend's plain state for ``raw``: a ``ValueStateDescriptor``, ``ListStateDescriptor``
  or ``MapStateDescriptor`` with the user descriptor's name (``raw.kind`` is the raw kind).
- Cleanup scans use :func:`purge_expired` (one key's raw value) or
  :func:`purge_expired_entries` (a ``key -> raw value`` dict), which never mutate their
  input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import islice
from typing import Any, cast

from lockgate.common.clock import processing_time_ms
from lockgate.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from lockgate.state.interfaces import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    State,
    ValueState,
)
from lockgate.state.ttl_config import StateTtlConfig

# Storage helpers shared by the backends ------------------------------------------------------

TTL_KIND_PREFIX = "ttl-"
RAW_KINDS = {
    "value": "value",
    "reducing": "value",
    "aggregating": "value",
    "list": "list",
    "map": "map",
}


def is_expired(last_access_ms: int, ttl_ms: int, now_ms: int) -> bool:
    return last_access_ms + ttl_ms <= now_ms


def stored_kind(descriptor: StateDescriptor) -> str:
    """The kind a backend records for ``descriptor``'s state: ``"ttl-<kind>"`` with TTL."""
    if ttl_settings(descriptor) is None:
        return descriptor.kind
    return TTL_KIND_PREFIX + descriptor.kind


def is_ttl_kind(kind: str) -> bool:
    return kind.startswith(TTL_KIND_PREFIX)


def raw_kind(kind: str) -> str:
    """The kind of raw state that stores a state of ``kind`` (a stored kind or a plain one):
    ``"ttl-reducing"`` -> ``"value"``, ``"ttl-map"`` -> ``"map"``, ``"list"`` -> ``"list"``."""
    if kind.startswith(TTL_KIND_PREFIX):
        kind = kind[len(TTL_KIND_PREFIX) :]
    try:
        return RAW_KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown state kind {kind!r}") from None


def raw_descriptor(descriptor: StateDescriptor) -> StateDescriptor:
    """The plain descriptor (same name, raw kind) whose state holds ``descriptor``'s values
    with their timestamps. ``stored_kind`` on it says what the backend records."""
    kind = raw_kind(descriptor.kind)
    if kind == "value":
        raw: StateDescriptor = ValueStateDescriptor(descriptor.name)
    elif kind == "list":
        raw = ListStateDescriptor(descriptor.name)
    else:
        key_type = descriptor.type_info[0] if isinstance(descriptor.type_info, tuple) else None
        raw = MapStateDescriptor(descriptor.name, key_type, None)
    # only raw descriptors carry stored_kind (for inspection; backends use TtlSettings)
    raw.stored_kind = TTL_KIND_PREFIX + descriptor.kind  # type: ignore[attr-defined]
    return raw


def purge_expired(kind: str, stored: Any, ttl_ms: int, now_ms: int) -> Any:
    """One key's raw value without its expired parts: ``None`` when nothing is left, the same
    object when nothing expired, otherwise a new list or dict. ``kind`` is the user kind or
    the stored kind (``"ttl-map"``); the input is never changed."""
    kind = raw_kind(kind)
    limit = now_ms - ttl_ms  # expired: last access <= limit
    if kind == "value":
        return None if stored[1] <= limit else stored
    if kind == "list":
        live = [element for element in stored if element[1] > limit]
        if len(live) == len(stored):
            return stored
        return live or None
    live_map = {key: entry for key, entry in stored.items() if entry[1] > limit}
    if len(live_map) == len(stored):
        return stored
    return live_map or None


def purge_expired_entries(
    kind: str, entries: dict[Any, Any], ttl_ms: int, now_ms: int
) -> dict[Any, Any]:
    """``purge_expired`` over a ``key -> raw value`` dict (one key group of one state): the
    same dict when nothing expired, otherwise a new dict without the expired parts."""
    out: dict[Any, Any] | None = None
    for index, (key, stored) in enumerate(entries.items()):
        kept = purge_expired(kind, stored, ttl_ms, now_ms)
        if kept is not stored and out is None:
            out = dict(islice(entries.items(), index))
        if out is not None and kept is not None:
            out[key] = kept
    return entries if out is None else out


class TtlSettings:
    """A state's TTL configuration, resolved once for the hot path and the cleanups."""

    __slots__ = (
        "cleanup_every_record",
        "cleanup_size",
        "compaction_filter",
        "config",
        "full_snapshot",
        "kind",
        "return_expired",
        "stored_kind",
        "ttl_ms",
        "update_on_read",
    )

    def __init__(self, kind: str, config: StateTtlConfig):
        self.config = config
        self.kind = kind
        self.stored_kind = TTL_KIND_PREFIX + kind
        self.ttl_ms = config.get_ttl().to_milliseconds()
        self.update_on_read = config.get_update_type() is StateTtlConfig.UpdateType.OnReadAndWrite
        self.return_expired = (
            config.get_state_visibility()
            is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
        )
        strategies = config.get_cleanup_strategies()
        incremental = strategies.get_incremental_cleanup_strategy()
        self.cleanup_size = None if incremental is None else incremental.get_cleanup_size()
        self.cleanup_every_record = (
            incremental is not None and incremental.run_cleanup_for_every_record()
        )
        self.full_snapshot = strategies.in_full_snapshot()
        self.compaction_filter = strategies.get_rocksdb_compact_filter_cleanup_strategy()


def ttl_settings(descriptor: StateDescriptor) -> TtlSettings | None:
    """The resolved TTL of ``descriptor``, or ``None`` when it has none or it is disabled."""
    config: StateTtlConfig | None = getattr(descriptor, "ttl_config", None)
    if config is None or not config.is_enabled():
        return None
    if descriptor.kind not in RAW_KINDS:
        raise TypeError(f"state TTL is not supported for {descriptor!r}")
    return TtlSettings(descriptor.kind, config)


# The TTL decorators ------------------------------------------------------------------------


class _TtlState:
    """Common part: the raw state, the settings, the clock, and an access counter that a
    backend's incremental cleanup reads (and resets)."""

    __slots__ = (
        "_clock",
        "_raw",
        "_return_expired",
        "_ttl",
        "_update_on_read",
        "accesses",
        "settings",
    )

    def __init__(self, raw: Any, settings: TtlSettings, clock: Callable[[], int]) -> None:
        self._raw = raw
        self.settings = settings
        self._ttl = settings.ttl_ms
        self._update_on_read = settings.update_on_read
        self._return_expired = settings.return_expired
        self._clock = clock
        self.accesses = 0

    def clear(self) -> None:
        self.accesses += 1
        self._raw.clear()

    def _read_single(self) -> tuple[bool, Any]:
        """(found, value) of a value-like state, with Flink's check-and-update on read."""
        self.accesses += 1
        stored = self._raw.value()
        if stored is None:
            return False, None
        now = self._clock()
        if stored[1] + self._ttl <= now:
            self._raw.clear()
            return (True, stored[0]) if self._return_expired else (False, None)
        if self._update_on_read:
            self._raw.update((stored[0], now))
        return True, stored[0]

    def _current_for_write(self, now: int) -> tuple[bool, Any]:
        """(found, value) before a merging write: an expired value counts only when expired
        values may still be returned (Flink's ``getUnexpired``)."""
        stored = self._raw.value()
        if stored is None or (stored[1] + self._ttl <= now and not self._return_expired):
            return False, None
        return True, stored[0]


class TtlValueState(_TtlState, ValueState):
    __slots__ = ()
    _raw: ValueState

    def value(self) -> Any:
        return self._read_single()[1]

    def update(self, value: Any) -> None:
        self.accesses += 1
        if value is None:
            self._raw.clear()
            return
        self._raw.update((value, self._clock()))


class TtlReducingState(_TtlState, ReducingState):
    __slots__ = ("_reduce",)
    _raw: ValueState

    def __init__(
        self,
        raw: Any,
        settings: TtlSettings,
        clock: Callable[[], int],
        reduce: Callable[[Any, Any], Any],
    ) -> None:
        super().__init__(raw, settings, clock)
        self._reduce = reduce

    def get(self) -> Any:
        return self._read_single()[1]

    def add(self, value: Any) -> None:
        self.accesses += 1
        now = self._clock()
        found, current = self._current_for_write(now)
        self._raw.update((self._reduce(current, value) if found else value, now))


class TtlAggregatingState(_TtlState, AggregatingState):
    __slots__ = ("_agg",)
    _raw: ValueState

    def __init__(self, raw: Any, settings: TtlSettings, clock: Callable[[], int], agg: Any) -> None:
        super().__init__(raw, settings, clock)
        self._agg = agg

    def get(self) -> Any:
        found, accumulator = self._read_single()
        return self._agg.get_result(accumulator) if found else None

    def add(self, value: Any) -> None:
        if value is None:  # as PyFlink: adding None clears the state
            self.clear()
            return
        self.accesses += 1
        now = self._clock()
        found, accumulator = self._current_for_write(now)
        if not found:
            accumulator = self._agg.create_accumulator()
        self._raw.update((self._agg.add(value, accumulator), now))


class TtlListState(_TtlState, ListState):
    __slots__ = ()
    _raw: ListState

    def get(self) -> list[Any]:
        """The live elements (all of them with ReturnExpiredIfNotCleanedUp); expired elements
        are removed from the state, and live ones get a new timestamp with OnReadAndWrite."""
        self.accesses += 1
        stored = self._raw.get()
        if not isinstance(stored, list):
            stored = list(stored)
        if not stored:
            return []
        now = self._clock()
        limit = now - self._ttl
        live = [element for element in stored if element[1] > limit]
        if self._update_on_read and live:
            self._raw.update([(element[0], now) for element in live])
        elif len(live) != len(stored):
            self._raw.update(live)  # an empty list clears the state
        return [element[0] for element in (stored if self._return_expired else live)]

    def add(self, value: Any) -> None:
        if value is None:
            raise ValueError("cannot add None to a ListState")
        self.accesses += 1
        self._raw.add((value, self._clock()))

    def add_all(self, values: list[Any]) -> None:
        for value in values:
            if value is None:
                raise ValueError("cannot add None to a ListState")
        self.accesses += 1
        if values:
            now = self._clock()
            self._raw.add_all([(value, now) for value in values])

    def update(self, values: list[Any]) -> None:
        self.accesses += 1
        if values:
            now = self._clock()
            self._raw.update([(value, now) for value in values])
        else:
            self._raw.clear()


class TtlMapState(_TtlState, MapState):
    __slots__ = ()
    _raw: MapState

    def _entry(self, key: Any) -> tuple[bool, Any]:
        self.accesses += 1
        stored = self._raw.get(key)
        if stored is None:
            return False, None
        now = self._clock()
        if stored[1] + self._ttl <= now:
            self._raw.remove(key)
            return (True, stored[0]) if self._return_expired else (False, None)
        if self._update_on_read:
            self._raw.put(key, (stored[0], now))
        return True, stored[0]

    def get(self, key: Any) -> Any:
        return self._entry(key)[1]

    def contains(self, key: Any) -> bool:
        return self._entry(key)[0]

    def put(self, key: Any, value: Any) -> None:
        self.accesses += 1
        self._raw.put(key, (value, self._clock()))

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        self.accesses += 1
        if dict_value:
            now = self._clock()
            self._raw.put_all({key: (value, now) for key, value in dict_value.items()})

    def remove(self, key: Any) -> None:
        self.accesses += 1
        self._raw.remove(key)

    def _visible(self) -> list[tuple[Any, Any]]:
        """The entries to show, in order; expired ones are removed from the state and, with
        OnReadAndWrite, the live ones get a new timestamp."""
        self.accesses += 1
        stored = list(self._raw.items())
        if not stored:
            return []
        now = self._clock()
        limit = now - self._ttl
        shown = []
        live = {}
        for key, entry in stored:
            if entry[1] > limit:
                live[key] = entry[0]
                shown.append((key, entry[0]))
            else:
                self._raw.remove(key)
                if self._return_expired:
                    shown.append((key, entry[0]))
        if self._update_on_read and live:
            self._raw.put_all({key: (value, now) for key, value in live.items()})
        return shown

    def items(self) -> Iterable[tuple[Any, Any]]:
        return self._visible()

    def keys(self) -> Iterable[Any]:
        return [key for key, _ in self._visible()]

    def values(self) -> Iterable[Any]:
        return [value for _, value in self._visible()]

    def is_empty(self) -> bool:
        """With NeverReturnExpired, a map whose entries have all expired is empty (and is
        cleaned up); Flink answers from the raw map there. With ReturnExpiredIfNotCleanedUp,
        expired entries not cleaned up yet count, as in Flink."""
        self.accesses += 1
        if self._return_expired:
            return self._raw.is_empty()
        stored = list(self._raw.items())
        if not stored:
            return True
        limit = self._clock() - self._ttl
        expired = [key for key, entry in stored if entry[1] <= limit]
        for key in expired:
            self._raw.remove(key)
        return len(expired) == len(stored)


# What wrap_with_ttl returns: a keyed State that is also a _TtlState (settings, accesses)
TtlState = TtlValueState | TtlListState | TtlMapState | TtlReducingState | TtlAggregatingState


def wrap_with_ttl(
    descriptor: StateDescriptor,
    get_raw_state: Callable[[StateDescriptor], State],
    clock: Callable[[], int] | None = None,
) -> TtlState:
    """The TTL state for ``descriptor`` (which must have an enabled TTL config), on top of
    ``get_raw_state(raw_descriptor(descriptor))``; ``clock`` returns milliseconds (default:
    processing time)."""
    settings = ttl_settings(descriptor)
    if settings is None:
        raise ValueError(f"{descriptor!r} has no enabled state TTL")
    raw = get_raw_state(raw_descriptor(descriptor))
    clock = clock or processing_time_ms
    kind = descriptor.kind
    if kind == "value":
        return TtlValueState(raw, settings, clock)
    if kind == "list":
        return TtlListState(raw, settings, clock)
    if kind == "map":
        return TtlMapState(raw, settings, clock)
    # the kinds are those of the descriptor classes (ttl_settings accepted only RAW_KINDS)
    if kind == "reducing":
        return TtlReducingState(
            raw, settings, clock, cast(ReducingStateDescriptor, descriptor).reduce
        )
    agg = cast(AggregatingStateDescriptor, descriptor).agg_function
    return TtlAggregatingState(raw, settings, clock, agg)
