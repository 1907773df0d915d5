"""The job of the rescaling test (not a test module): every kind of state in one job.

``PlacedStateKinds`` keeps keyed state of every kind (``state_processor_job.StateKinds``:
value, list, map, reducing, aggregating, a value with TTL, an event-time timer per key) and
tags what it emits with its subtask index, so that the test sees where each key was; a
tumbling event-time window keeps namespaced state and timers; ``Tally`` keeps operator list,
union and broadcast state. Everything the keyed stages emit goes to an exactly-once
FileSink. Classes defined here are pickled by reference (Spark's workers import this module
from the test directory).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from exactly_once_job import file_sink
from state_processor_job import (
    TIMER_AT,
    WINDOW_MS,
    StateKinds,
    replay,
    sum_window,
    timestamped_events,
    window_sums,
)

from lockgate.common import Time
from lockgate.datastream import CheckpointedFunction, MapFunction
from lockgate.datastream.connectors import DiscardingSink
from lockgate.datastream.state import ListStateDescriptor, MapStateDescriptor
from lockgate.datastream.window import TumblingEventTimeWindows
from lockgate.state.key_groups import key_group_for_hash
from lockgate.state.key_hash import stable_key_hash

USERS = 12
PER_EPOCH = 40  # records per epoch (lockgate.epoch.max-records-per-split, one split)
RECORDS = [(f"u{i % USERS}", i, i * 1000) for i in range(3 * PER_EPOCH)]
MAX_PARALLELISM = 128


class PlacedStateKinds(StateKinds):
    def open(self, runtime_context):
        super().open(runtime_context)
        self.index = runtime_context.get_index_of_this_subtask()

    def process_element(self, value, ctx):
        for out in super().process_element(value, ctx):
            yield (*out, self.index)


class Tally(MapFunction, CheckpointedFunction):
    """Keeps every record it saw in list state, its count in union state and the latest
    epoch in broadcast state; writes what it restored when it opens, and what it holds
    when it closes, to ``reports``."""

    def __init__(self, reports: Path, run: str):
        self.reports = str(reports)
        self.run = run

    def initialize_state(self, context):
        store = context.get_operator_state_store()
        self.seen_state = store.get_list_state(ListStateDescriptor("seen"))
        self.counts = store.get_union_list_state(ListStateDescriptor("counts"))
        self.latest = store.get_broadcast_state(MapStateDescriptor("latest"))
        self.seen = [tuple(r) for r in self.seen_state.get()]
        self.restored = {
            "is_restored": context.is_restored(),
            "seen": self.seen[:],
            "counts": sorted(self.counts.get()),
            "latest": dict(self.latest.items()),
        }

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()
        self._report("open", self.restored)

    def map(self, value):
        self.seen.append(tuple(value))
        return value

    def snapshot_state(self, context):
        self.seen_state.update(self.seen)
        self.counts.update([[self.index, len(self.seen)]])
        self.latest.put("epoch", context.get_checkpoint_id())

    def close(self):
        self._report("close", {"seen": self.seen})

    def _report(self, when, body):
        name = f"{self.run}-{when}-{self.index}-{uuid.uuid4().hex}.json"
        (Path(self.reports) / name).write_text(json.dumps(body))


def reports(directory: Path, run: str, when: str) -> dict[int, dict]:
    """Subtask index -> what its ``Tally`` reported ``when`` in ``run``."""
    found = {}
    for path in directory.glob(f"{run}-{when}-*.json"):
        index = int(path.name.split("-")[2])
        assert index not in found, f"subtask {index} of {run} reported {when} twice"
        found[index] = json.loads(path.read_text())
    return found


def to_line(record: Any) -> str:
    return json.dumps(record)


def build(env, out: Path, reports_dir: Path, run: str, parallelism: int) -> None:
    events = timestamped_events(env, RECORDS)
    kinds = (
        events.key_by(lambda r: r[0])
        .process(PlacedStateKinds())
        .set_parallelism(parallelism)
        .uid("state-kinds")
    )
    windows = (
        events.key_by(lambda r: r[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
        .reduce(sum_window)
        .set_parallelism(parallelism)
        .uid("window-sums")
        .map(lambda r: ("window", *r))
        .set_parallelism(parallelism)
        .uid("window-labels")
    )
    (
        events.rebalance()
        .map(Tally(reports_dir, run))
        .set_parallelism(parallelism)
        .uid("tally")
        .sink_to(DiscardingSink())
        .uid("tally-sink")
    )
    (
        kinds.union(windows)
        .map(to_line)
        .set_parallelism(parallelism)
        .uid("lines")
        .sink_to(file_sink(out))
        .set_parallelism(parallelism)
        .uid("files")
    )


# What the three runs emit ------------------------------------------------------------------


def subtask_of(key: str, parallelism: int) -> int:
    """Flink's formulas: the key's group, and the subtask that owns it."""
    key_group = key_group_for_hash(stable_key_hash(key), MAX_PARALLELISM)
    return key_group * parallelism // MAX_PARALLELISM


def expected_lines(parallelisms: list[int]) -> Counter:
    """The committed lines of runs at ``parallelisms``, each reading one epoch but the last,
    which reads the rest: every state line tagged with the subtask that owned its key."""
    _, state_lines = replay({}, RECORDS)
    lines: Counter = Counter()
    for position, line in enumerate(state_lines):
        run = min(position // PER_EPOCH, len(parallelisms) - 1)
        lines[to_line((*line, subtask_of(line[1], parallelisms[run])))] += 1
    lines.update(to_line(("timer", f"u{u}", TIMER_AT)) for u in range(USERS))
    lines.update(to_line(("window", *r)) for r in window_sums(RECORDS).values())
    return lines
