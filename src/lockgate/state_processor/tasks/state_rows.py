"""Inside a Spark task: the rows of one keyed state, or of the timers, of one subtask's
state files (a ``ReadTask``).

One row per key (and namespace, for a state kept per window: a struct with the window's
field names, ``start, end`` for a TimeWindow):

- value, reducing and aggregating state: ``(key, [namespace], value)``, the value as
  stored (an aggregating state's accumulator);
- list state: ``(key, [namespace], [elements])``;
- map state: ``(key, [namespace], {map key: value})``;
- with TTL, the user's value as above, and with ``ttl_timestamps`` a last column of the
  last access times in the value's shape (an int, a list of ints, a map of ints);
- timers: ``(key, timestamp, namespace, timer service, time domain)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pickle import loads
from typing import Any

from lockgate.state.canonical_snapshot import decode_sub, read_entries, shape
from lockgate.state.key_codec import decode_key
from lockgate.state.namespaces import NAMESPACED
from lockgate.state.timer_queues import TIMERS_KIND, timer_origin
from lockgate.state.ttl import is_ttl_kind, raw_kind
from lockgate.state_processor.task_records import TIMERS, ReadTask
from lockgate.state_processor.tasks.spark_values import to_spark, window_to_spark
from lockgate.state_processor.tasks.state_files import canonical_groups


def read_rows(task_text: str) -> Iterator[tuple[Any, ...]]:
    """The rows a ``ReadTask`` (its JSON text) asks for."""
    task = ReadTask.load(task_text)
    if task.mode == TIMERS:
        return _timer_rows(task)
    return _state_rows(task)


def _timer_rows(task: ReadTask) -> Iterator[tuple[Any, ...]]:
    form = shape(TIMERS_KIND)
    origins: dict[str, tuple[str, str | None]] = {}
    for _, blob in canonical_groups(task.files):
        for name, kind, key, sub, _value in read_entries(blob):
            if kind != TIMERS_KIND:
                continue
            origin = origins.get(name)
            if origin is None:
                origin = origins[name] = timer_origin(name)
            timestamp, namespace = decode_sub(form, sub)
            yield to_spark(decode_key(key)), timestamp, to_spark(namespace), *origin


def _state_rows(task: ReadTask) -> Iterator[tuple[Any, ...]]:
    form = shape(task.kind)
    ttl = is_ttl_kind(task.kind)
    base = raw_kind(task.kind.removesuffix(NAMESPACED))
    stamps = task.ttl_timestamps
    for _, blob in canonical_groups(task.files):
        maps: dict[tuple[bytes, Any], tuple[dict[Any, Any], dict[Any, Any]]] = {}
        for name, _kind, key, sub, value in read_entries(blob):
            if name != task.state:
                continue
            parts = decode_sub(form, sub)
            head: tuple[Any, ...] = (key, parts[0]) if form.namespaced else (key,)
            stored = loads(value)
            if form.is_map:
                values, times = maps.setdefault(
                    (key, head[-1] if form.namespaced else None), ({}, {})
                )
                if ttl:
                    stored, times[parts[-1]] = stored
                values[parts[-1]] = stored
                continue
            row = _row(head)
            if base == "list":
                if ttl:
                    row.append(to_spark([element for element, _ in stored]))
                    if stamps:
                        row.append([stamp for _, stamp in stored])
                else:
                    row.append(to_spark(stored))
            elif ttl:
                row.append(to_spark(stored[0]))
                if stamps:
                    row.append(stored[1])
            else:
                row.append(to_spark(stored))
            yield tuple(row)
        for (key, namespace), (values, times) in maps.items():
            row = _row((key, namespace) if form.namespaced else (key,))
            row.append(to_spark(values))
            if ttl and stamps:
                row.append(to_spark(times))
            yield tuple(row)


def _row(head: tuple[Any, ...]) -> list[Any]:
    """The key (decoded) and the namespace (a window) of a row."""
    return [to_spark(decode_key(head[0])), *(window_to_spark(part) for part in head[1:])]
