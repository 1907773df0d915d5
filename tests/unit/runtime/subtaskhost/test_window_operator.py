"""The window operator in-process, on both backends: the inline path of tumbling and sliding
event-time windows gives exactly what the assigner-and-trigger path gives, late elements
and allowed lateness included, and windows survive a snapshot and restore."""

from __future__ import annotations

import pickle
import random
import shutil
from collections import Counter

import pytest

from lockgate.common.watermark_strategy import LONG_MAX
from lockgate.datastream.window import (
    EventTimeTrigger,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
)
from lockgate.runtime.subtaskhost.context import RecordTimestamp, SubtaskRuntimeContext
from lockgate.runtime.subtaskhost.operators import OperatorContext
from lockgate.runtime.subtaskhost.window_operator import WindowOperator, WindowOperatorSpec
from lockgate.state import snapshot
from lockgate.state.descriptors import ListStateDescriptor
from lockgate.state.heap import HeapKeyedStateBackend
from lockgate.state.key_groups import KeyGroupRange
from lockgate.state.rocksdb import RocksDBKeyedStateBackend, RocksDBSettings

GROUP = 5
LATE = "late"


class Tag:
    tag_id = LATE


class Backends:
    """Opens backends of one kind over all 128 key groups; ``reopen`` restores a copy as a
    restore would (heap: through the snapshot format; RocksDB: from a checkpoint)."""

    def __init__(self, kind: str, root):
        self.kind = kind
        self.root = root
        self.opened: list = []

    def __call__(self, path=None):
        if self.kind == "heap":
            backend = HeapKeyedStateBackend(ALL, 128)
        else:
            path = path or self.root / f"db-{len(self.opened)}"
            backend = RocksDBKeyedStateBackend(ALL, 128, str(path), SMALL)
        self.opened.append(backend)
        return backend

    def reopen(self, backend):
        if self.kind == "heap":
            kinds = backend.kinds
            groups = {g: c for g in ALL if (c := backend.group_contents(g))}
            data, positions = snapshot.encode(kinds, groups, False)
            restored = self()
            for group, position in positions.items():
                handle = snapshot.GroupHandle("memory", *position)
                restored.install_group(
                    group,
                    snapshot.decode_group(snapshot.group_blob(data, handle, group, "m")),
                    kinds,
                )
            return restored
        checkpoint = self.root / f"chk-{len(self.opened)}"
        backend.checkpoint_to(str(checkpoint))
        copy = self.root / f"copy-{len(self.opened)}"
        shutil.copytree(checkpoint, copy)
        return self(copy)

    def close(self):
        for backend in self.opened:
            if self.kind != "heap":
                backend.dispose()


ALL = KeyGroupRange(0, 127)
SMALL = RocksDBSettings(write_buffer_bytes=1 << 20, block_cache_bytes=1 << 20)


@pytest.fixture(params=["heap", "rocksdb"])
def backends(request, tmp_path):
    factory = Backends(request.param, tmp_path)
    yield factory
    factory.close()


def operator(backend, assigner, lateness: int, inline: bool) -> WindowOperator:
    runtime = SubtaskRuntimeContext("w", 0, 1, 128, 0, {}, backend)
    ctx = OperatorContext("w", "w-uid", 0, 1, runtime, backend, [], RecordTimestamp())
    size, slide = assigner.size, getattr(assigner, "slide", assigner.size)
    spec = WindowOperatorSpec(
        assigner=assigner,
        trigger=EventTimeTrigger(),
        contents=ListStateDescriptor("window-contents"),
        function_kind="value",
        function=None,
        allowed_lateness=lateness,
        late_data_tag=Tag(),
        single_value=False,
        time_windows=(size, slide, assigner.offset) if inline else None,
        window_type=TimeWindow,
    )
    return WindowOperator(ctx, spec)


def run(op, epochs) -> list:
    """Feed epochs of (key, timestamp, value), advancing the watermark to each epoch's
    max timestamp - 10 after it; the outputs with the timestamps they carry."""
    out = []
    record = op.ctx.record
    op.emit = lambda value: out.append((value, record.value))
    for batch in epochs:
        data = [pickle.dumps(e) for e in batch]
        op.process_keyed_batch([GROUP] * len(batch), data, lambda e: e[0], [e[1] for e in batch])
        op.advance_watermark(max(e[1] for e in batch) - 10, False)
    op.advance_watermark(LONG_MAX, False)
    return out


def epochs_of(seed: int) -> list[list[tuple]]:
    rng = random.Random(seed)
    events = [(f"k{rng.randrange(4)}", i * 3 - rng.randrange(150), i) for i in range(600)]
    return [events[i : i + 37] for i in range(0, len(events), 37)]


@pytest.mark.parametrize(
    "assigner",
    [
        TumblingEventTimeWindows(50, 0),
        TumblingEventTimeWindows(50, 7),
        SlidingEventTimeWindows(60, 20, 0),
    ],
    ids=repr,
)
@pytest.mark.parametrize("lateness", [0, 25])
def test_the_inline_path_gives_what_the_trigger_path_gives(backends, assigner, lateness):
    epochs = epochs_of(3)
    generic = run(operator(backends(), assigner, lateness, False), epochs)
    inline = run(operator(backends(), assigner, lateness, True), epochs)
    late = [value for value, _ in generic if isinstance(value, tuple)]
    assert late and all(isinstance(tag, Tag) for tag, _ in late)  # late elements were seen
    normalize = lambda outs: Counter(  # noqa: E731
        (tuple(sorted(v[2] for v in value)) if isinstance(value, list) else ("late", value[1]), ts)
        for value, ts in outs
    )
    assert normalize(inline) == normalize(generic)
    assert len(generic) > 10


def test_windows_survive_a_snapshot_and_restore(backends):
    assigner = TumblingEventTimeWindows(50, 0)
    first = backends()
    op = operator(first, assigner, 0, True)
    op.emit = lambda value: None
    batch = [("a", 10, 1), ("a", 20, 2), ("b", 60, 3)]
    op.process_keyed_batch(
        [GROUP] * 3, [pickle.dumps(e) for e in batch], lambda e: e[0], [10, 20, 60]
    )
    restored = backends.reopen(first)
    again = operator(restored, assigner, 0, True)
    out = []
    again.emit = out.append
    again.advance_watermark(LONG_MAX, False)
    assert sorted(tuple(v[2] for v in window) for window in out) == [(1, 2), (3,)]
