"""Large keyed state for benchmarks: a source that loads a key space, then touches it.

Shared by ``state_scale.py``, ``recovery.py`` and ``savepoint.py``. The job is keyed_count's:
``source -> key_by -> CountAndSum (ValueState (count, sum)) -> DiscardingSink``, with the
source below instead of ``from_collection`` so that 10M keys cost no driver memory and no
epoch plans full of records:

- ``KeySpaceSource(keys, touch_epochs, touch_keys)``: split i of p first yields every key of
  its share of ``range(keys)`` once (the *load*, in epochs of ``max-records-per-split``
  records per split), then ``touch_epochs`` epochs of ``touch_keys`` records in all, each
  a random sample (without repeats, seeded by the touch number) of ``range(keys)``. A touch
  epoch is planned on its own (never merged with load records or the next touch), so every
  touch epoch has exactly ``touch_keys`` records. Records are ``(key, 1)``; with
  ``poison=True`` one ``(0, POISON)`` record follows in an epoch of its own, on which
  ``FailOnPoison`` fails the job (so that it ends FAILED and keeps its checkpoint).
  Records are generated in the Spark tasks; positions are offsets, so the source restores
  from a checkpoint like any other.
- ``state_job(...)``: the environment (work dir, backend, a checkpoint per epoch in a
  FileSystemCheckpointStorage) and the job, with uids so that a checkpoint of one run
  restores into another (``source_uid`` gives the source another one, so that a job
  restores the keyed state and not the source's positions); ``warm_up(...)`` runs a
  small one.
- ``PeakRss``: samples the resident memory of this process's tree (the Spark JVM, the
  PySpark daemon and its Python workers, where RocksDB lives in local mode).
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import threading
from collections.abc import Iterator
from itertools import repeat
from typing import Any

import keyed_count
from pyspark import cloudpickle

from lockgate.common import Configuration, WatermarkStrategy
from lockgate.common import config_options as options
from lockgate.connectors.offset_splits import OffsetSplitEnumerator
from lockgate.core.source import Source, SplitAssignment, SplitProgress
from lockgate.datastream import StreamExecutionEnvironment
from lockgate.datastream.checkpoint_storage import FileSystemCheckpointStorage
from lockgate.datastream.connectors import DiscardingSink

# Spark's Python workers may not be able to import bench modules: ship their classes by value.
cloudpickle.register_pickle_by_value(keyed_count)
cloudpickle.register_pickle_by_value(sys.modules[__name__])

POISON = -1


class FailOnPoison(keyed_count.CountAndSum):
    """keyed_count's CountAndSum, failing the job on a ``POISON`` value."""

    def process_element(self, value, ctx):
        if value[1] == POISON:
            raise RuntimeError("poison record: ending the job so that its checkpoint is kept")
        yield from super().process_element(value, ctx)


def _share(total: int, index: int, parts: int) -> tuple[int, int]:
    return total * index // parts, total * (index + 1) // parts


class KeySpaceSource(Source):
    """Load every key of ``range(keys)`` once, then ``touch_epochs`` epochs of random keys."""

    def __init__(
        self,
        keys: int,
        touch_epochs: int,
        touch_keys: int,
        seed: int = 7,
        poison: bool = False,
    ):
        if keys < 1 or touch_keys > keys:
            raise ValueError(f"need 1 <= touch_keys <= keys, got {touch_keys} and {keys}")
        self.keys = keys
        self.touch_epochs = touch_epochs
        self.touch_keys = touch_keys
        self.seed = seed
        self.poison = poison
        self._sample: tuple[int, list[int]] | None = None  # the last touch's keys (tasks)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_sample": None}

    def layout(self, split: int, splits: int) -> dict[str, int]:
        """Where split ``split`` of ``splits`` has what, as offsets into its records."""
        lo, hi = _share(self.keys, split, splits)
        touch_lo, touch_hi = _share(self.touch_keys, split, splits)
        per_touch = touch_hi - touch_lo
        touch_end = (hi - lo) + self.touch_epochs * per_touch
        return {
            "key_lo": lo,
            "load": hi - lo,
            "touch_lo": touch_lo,
            "per_touch": per_touch,
            "touch_end": touch_end,
            "total": touch_end + (1 if self.poison and split == 0 else 0),
        }

    def load_epochs(self, splits: int, max_records_per_split: int) -> int:
        """Epochs the load takes (the touch epochs follow)."""
        largest = max(self.layout(i, splits)["load"] for i in range(splits))
        return -(-largest // max_records_per_split)

    def create_enumerator(self, parallelism: int) -> KeySpaceEnumerator:
        return KeySpaceEnumerator(self, parallelism)

    def _touched(self, touch: int, layout: dict[str, int]) -> list[int]:
        if self._sample is None or self._sample[0] != touch:
            rng = random.Random(self.seed * 1_000_003 + touch)
            self._sample = (touch, rng.sample(range(self.keys), self.touch_keys))
        return self._sample[1][layout["touch_lo"] : layout["touch_lo"] + layout["per_touch"]]

    def records(self, layout: dict[str, int], start: int, stop: int) -> Iterator[Any]:
        load, per_touch = layout["load"], layout["per_touch"]
        position = start
        if position < load:
            end = min(stop, load)
            lo = layout["key_lo"]
            yield from zip(range(lo + position, lo + end), repeat(1))
            position = end
        while position < min(stop, layout["touch_end"]):
            touch, offset = divmod(position - load, per_touch)
            end = min(stop, load + (touch + 1) * per_touch)
            keys = self._touched(touch, layout)[offset : offset + end - position]
            yield from zip(keys, repeat(1))
            position = end
        if position < stop:  # the poison record
            yield 0, POISON

    def read(
        self, assignment: SplitAssignment, payload: Any, progress: dict[str, SplitProgress]
    ) -> Iterator[Any]:
        start = assignment.start
        stop = start + assignment.max_records
        yield from self.records(payload, start, stop)  # payload: the split's layout
        progress[assignment.split] = SplitProgress(stop, assignment.last)


class KeySpaceEnumerator(OffsetSplitEnumerator):
    """One split per source subtask; an epoch never mixes load, touches and the poison."""

    source_name = "key-space"

    def __init__(self, source: KeySpaceSource, parallelism: int):
        self.layouts = {str(i): source.layout(i, parallelism) for i in range(parallelism)}
        if source.touch_epochs and any(s["per_touch"] < 1 for s in self.layouts.values()):
            raise ValueError(f"touch_keys ({source.touch_keys}) must be >= {parallelism}")
        super().__init__(
            {split: 0 for split in self.layouts},
            {split: layout["total"] for split, layout in self.layouts.items()},
            parallelism,
        )

    def stop(self, split: str, start: int, max_records: int) -> int:
        layout = self.layouts[split]
        load, per_touch, touch_end = layout["load"], layout["per_touch"], layout["touch_end"]
        if start < load:
            return min(load, start + max_records)
        if start < touch_end:
            touch_stop = load + ((start - load) // per_touch + 1) * per_touch
            return min(touch_stop, start + max_records)
        return layout["total"]

    def payload(self, assignment: SplitAssignment) -> dict[str, int]:
        return self.layouts[assignment.split]


def state_job(
    spark,
    source: KeySpaceSource,
    *,
    backend: str,
    work_dir: str,
    checkpoint_dir: str,
    parallelism: int,
    max_records_per_split: int,
    settings: dict[str, str] | None = None,
    source_uid: str = "keys",
) -> StreamExecutionEnvironment:
    """The job over ``source``, checkpointing every epoch into ``checkpoint_dir``."""
    config = Configuration()
    config.set_string(options.WORK_DIR.key, work_dir)
    # every epoch's and checkpoint's figures, not only the most recent ones
    config.set_integer(options.EPOCH_HISTORY.key, 1_000_000)
    config.set_integer(options.CHECKPOINT_HISTORY.key, 1_000_000)
    config.set_integer(options.EPOCH_MAX_RECORDS_PER_SPLIT.key, max_records_per_split)
    # The source's epochs (load, then touch) are planned by records: no sizing by time
    config.set_string(options.EPOCH_TARGET_DURATION.key, "0")
    for key, value in (settings or {}).items():
        config.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.configure(config)
    env.set_parallelism(parallelism)
    env.set_state_backend(keyed_count.state_backend(backend))
    env.enable_checkpointing(1)  # a checkpoint at the end of every epoch
    env.get_checkpoint_config().set_checkpoint_storage(FileSystemCheckpointStorage(checkpoint_dir))
    function = FailOnPoison() if source.poison else keyed_count.CountAndSum()
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "keys").uid(source_uid)
    stream.key_by(keyed_count._key).process(function).uid("count").sink_to(DiscardingSink())
    return env


def warm_up(spark, backend: str, parallelism: int) -> None:
    """A small job on ``backend``: starts the Python workers and imports lockgate (and
    rocksdict) in them, so that the first measured epoch does not pay for it."""
    source = KeySpaceSource(2000, touch_epochs=2, touch_keys=1000)
    with (
        tempfile.TemporaryDirectory(prefix="lockgate-bench-") as work_dir,
        tempfile.TemporaryDirectory(prefix="lockgate-chk-") as checkpoint_dir,
    ):
        env = state_job(
            spark,
            source,
            backend=backend,
            work_dir=work_dir,
            checkpoint_dir=checkpoint_dir,
            parallelism=parallelism,
            max_records_per_split=1000,
        )
        env.execute("warm-up")


# Memory ---------------------------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def tree_rss() -> tuple[int, int]:
    """(resident bytes of this process and all its descendants, largest single descendant)."""
    children = _children()
    pending, total, largest = [os.getpid()], 0, 0
    while pending:
        pid = pending.pop()
        rss = _rss_bytes(pid)
        total += rss
        if pid != os.getpid():
            largest = max(largest, rss)
        pending.extend(children.get(pid, ()))
    return total, largest


class PeakRss:
    """Samples ``tree_rss`` every ``interval_s`` while in a ``with`` block; keeps the peaks.

    On Linux only (reads /proc); elsewhere the peaks stay 0.
    """

    def __init__(self, interval_s: float = 0.5):
        self.interval_s = interval_s
        self.total = 0
        self.largest = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        if not os.path.isdir("/proc"):
            return
        while True:
            total, largest = tree_rss()
            self.total = max(self.total, total)
            self.largest = max(self.largest, largest)
            if self._stop.wait(self.interval_s):
                return

    def __enter__(self) -> PeakRss:
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def figures(self) -> str:
        mb = 1 << 20
        return f"peak_rss_mb={self.total / mb:.0f} peak_process_rss_mb={self.largest / mb:.0f}"
