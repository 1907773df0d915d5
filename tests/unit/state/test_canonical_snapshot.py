"""The canonical form of keyed state: every kind of state (TTL, windows' namespaces and
timers included) written by either backend reads back the same into either backend, key
group by key group, so a savepoint switches backends and rescales."""

from __future__ import annotations

import pytest
from keyed_backends import HEAP, ROCKSDB, AverageAgg, BackendFactory

from lockgate.common.time import Duration
from lockgate.common.types import Row
from lockgate.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from lockgate.datastream.window import TimeWindow
from lockgate.state import canonical_snapshot
from lockgate.state.canonical_snapshot import CanonicalKeyError, GroupWriter
from lockgate.state.key_groups import KeyGroupRange, key_group_for_hash
from lockgate.state.key_hash import stable_key_hash

MAX_P = 128
ALL = KeyGroupRange(0, MAX_P - 1)
# a Row is another key than its tuple, and comes back as the Row it was
KEYS = ["a", "b", 7, (1, "x"), 2.5, b"raw", Row(1, "x"), Row(user="u", n=2)]
NOW = 1_000_000


class Point:
    """A key type with a stable hash but no portable encoding (it pickles)."""

    def __init__(self, x):
        self.x = x

    def __eq__(self, other):
        return isinstance(other, Point) and other.x == self.x

    def __hash__(self):
        return self.x

    def __lockgate_key_hash__(self):
        return self.x


def group_of(key):
    return key_group_for_hash(stable_key_hash(key), MAX_P)


def ttl(descriptor):
    descriptor.enable_time_to_live(StateTtlConfig.new_builder(Duration.of_hours(1)).build())
    return descriptor


def fill(backend):
    """State of every kind for every key: values, lists, maps, reducing, aggregating, with
    and without TTL, per window, and event-time timers."""
    backend.ttl_clock = lambda: NOW
    states = {
        "value": backend.get_state(ValueStateDescriptor("value")),
        "list": backend.get_state(ListStateDescriptor("list")),
        "map": backend.get_state(MapStateDescriptor("map")),
        "sum": backend.get_state(ReducingStateDescriptor("sum", lambda a, b: a + b)),
        "avg": backend.get_state(AggregatingStateDescriptor("avg", AverageAgg())),
        "ttl-value": backend.get_state(ttl(ValueStateDescriptor("ttl-value"))),
        "ttl-list": backend.get_state(ttl(ListStateDescriptor("ttl-list"))),
        "ttl-map": backend.get_state(ttl(MapStateDescriptor("ttl-map"))),
    }
    window_list = backend.get_state(ListStateDescriptor("window-list"), namespaced=True)
    window_map = backend.get_state(MapStateDescriptor("window-map"), namespaced=True)
    timers = backend.timer_queue("timers")
    for n, key in enumerate(KEYS):
        group = group_of(key)
        backend.set_current_key(group, key)
        states["value"].update({"n": n})
        states["list"].add_all([n, str(n)])
        states["map"].put_all({"k": n, ("t", 1): [n]})
        states["sum"].add(n)
        states["sum"].add(10)
        states["avg"].add(n)
        states["ttl-value"].update(n)
        states["ttl-list"].add(n)
        states["ttl-map"].put(n, "x")
        for w in (TimeWindow(0, 10), TimeWindow(10, 20)):
            backend.ns_ctx.group = group
            backend.ns_ctx.key = (key, w)
            window_list.add(n)
            window_map.put("m", w.start)
            timers.add(group, key, w, w.max_timestamp())


def canonical(backend, key_groups=ALL):
    """Key group -> heap form of what ``backend`` exports."""
    out = {}
    for group in key_groups:
        if group not in backend.key_groups:
            continue
        writer = GroupWriter()
        backend.export_group(group, writer)
        blob = writer.finish()
        if blob:
            out[group] = canonical_snapshot.read_contents(blob)
    return out


def move(source, target, key_groups=ALL):
    for group in key_groups:
        if group in source.key_groups and group in target.key_groups:
            writer = GroupWriter()
            source.export_group(group, writer)
            blob = writer.finish()
            if blob:
                target.import_group(group, blob)


@pytest.fixture
def factories(tmp_path):
    made = {kind: BackendFactory(kind, tmp_path / kind) for kind in (HEAP, ROCKSDB)}
    yield made
    for factory in made.values():
        factory.close_all()


def test_both_backends_export_the_same_state(factories):
    heap, rocks = factories[HEAP](ALL), factories[ROCKSDB](ALL)
    fill(heap)
    fill(rocks)
    exported = canonical(heap)
    assert exported == canonical(rocks)
    assert set(exported) == {group_of(k) for k in KEYS}
    kinds, contents = exported[group_of("a")]
    assert kinds == {
        "value": "value",
        "list": "list",
        "map": "map",
        "sum": "reducing",
        "avg": "aggregating",
        "ttl-value": "ttl-value",
        "ttl-list": "ttl-list",
        "ttl-map": "ttl-map",
        "window-list": "list/ns",
        "window-map": "map/ns",
        "timers": "timers",
    }
    assert contents["ttl-value"] == {"a": (0, NOW)}
    assert contents["map"] == {"a": {"k": 0, ("t", 1): [0]}}
    assert contents["window-map"][("a", TimeWindow(10, 20))] == {"m": 10}
    assert (9, "a", TimeWindow(0, 10)) in contents["timers"]


@pytest.mark.parametrize("source_kind", [HEAP, ROCKSDB])
@pytest.mark.parametrize("target_kind", [HEAP, ROCKSDB])
def test_state_moves_between_backends(factories, source_kind, target_kind):
    source = factories[source_kind](ALL)
    fill(source)
    target = factories[target_kind](ALL)
    move(source, target)
    assert canonical(target) == canonical(source)
    # and reads through the state API as it was written
    target.ttl_clock = lambda: NOW
    value = target.get_state(ValueStateDescriptor("value"))
    lists = target.get_state(ListStateDescriptor("window-list"), namespaced=True)
    avg = target.get_state(AggregatingStateDescriptor("avg", AverageAgg()))
    ttl_map = target.get_state(ttl(MapStateDescriptor("ttl-map")))
    key = (1, "x")
    target.set_current_key(group_of(key), key)
    assert value.value() == {"n": 3}
    assert avg.get() == 3
    assert dict(ttl_map.items()) == {3: "x"}
    target.ns_ctx.group = group_of(key)
    target.ns_ctx.key = (key, TimeWindow(10, 20))
    assert lists.get() == [3]
    for n, row in enumerate(KEYS[6:], start=6):
        target.set_current_key(group_of(row), row)
        assert value.value() == {"n": n}
    due = list(target.timer_queue("timers").poll_due(9))
    assert sorted((t[0], str(t[2])) for t in due) == sorted((9, str(k)) for k in KEYS)


@pytest.mark.parametrize("kind", [HEAP, ROCKSDB])
def test_a_subtask_takes_only_its_key_groups(factories, kind):
    source = factories[kind](ALL)
    fill(source)
    halves = [KeyGroupRange(0, 63), KeyGroupRange(64, 127)]
    parts = []
    for half in halves:
        part = factories[kind](half)
        move(source, part, half)
        parts.append(part)
    merged = {**canonical(parts[0]), **canonical(parts[1])}
    assert merged == canonical(source)


@pytest.mark.parametrize("kind", [HEAP, ROCKSDB])
def test_a_key_without_a_portable_encoding_is_refused_naming_state_and_type(factories, kind):
    backend = factories[kind](ALL)
    state = backend.get_state(ValueStateDescriptor("positions"))
    backend.set_current_key(5, Point(5))
    state.update(1)
    with pytest.raises(CanonicalKeyError, match=r"state 'positions'.*Point"):
        canonical(backend)


def test_a_damaged_entry_fails_clearly():
    writer = GroupWriter()
    sid = writer.state("w", "list/ns")
    writer.add(sid, b"\x04\x00\x00\x00\x01a", b"", b"\x80\x05N.")  # no namespace
    with pytest.raises(ValueError, match="0 parts below its key"):
        canonical_snapshot.read_contents(writer.finish())


@pytest.mark.parametrize(("source_kind", "target_kind"), [(HEAP, ROCKSDB), (ROCKSDB, HEAP)])
def test_a_timer_s_window_comes_back_as_a_window(factories, source_kind, target_kind):
    """A window equals its tuple as a key, but a timer hands its namespace to the window
    operator, which needs the window's class (``window.end``)."""
    source = factories[source_kind](ALL)
    source.timer_queue("timers").add(group_of("a"), "a", TimeWindow(0, 10), 9)
    target = factories[target_kind](ALL)
    move(source, target)
    ((timestamp, _, key, window),) = list(target.timer_queue("timers").poll_due(9))
    assert (timestamp, key, window) == (9, "a", TimeWindow(0, 10))
    assert type(window) is TimeWindow
