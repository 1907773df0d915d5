"""The exactly-once test job shared by the checkpoint failure tests (not a test module).

A source of unique increasing numbers per split, a keyed stage counting per key in
``ValueState``, and an exactly-once ``FileSink``. Every record ``(split, i)`` has key
``(split, i % KEYS)``, so its count is ``i // KEYS + 1`` in a run without failures: a lost
state update, a state update applied twice, a lost record or a record written twice all
change the committed lines, which are compared with that reference exactly. Classes
defined here are pickled by reference (Spark's workers import this module from the test
directory).
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from lockgate_it_support import matrix

from lockgate.common import Configuration, Encoder, RestartStrategies
from lockgate.datastream import (
    CheckpointingMode,
    ExternalizedCheckpointRetention,
    KeyedProcessFunction,
)
from lockgate.datastream.checkpoint_storage import FileSystemCheckpointStorage
from lockgate.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    RollingPolicy,
)
from lockgate.datastream.state import ValueStateDescriptor
from lockgate.runtime.errors import JobExecutionError

KEYS = 4  # keys per split
PER_SPLIT = 240  # records per split
MAX_RECORDS = 40  # per split and epoch: 6 epochs
EPOCHS = PER_SPLIT // MAX_RECORDS
PART_SIZE = 160  # bytes: several part files (committables) per subtask and epoch
UIDS = ("numbers", "count-per-key", "file-sink")
RETAIN = ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
# `make test` runs parallelism 3 (shuffles between subtasks), `make integration-full` 1 too
PARALLELISMS = matrix("parallelism", [3, 1])


# The job -------------------------------------------------------------------------------------


def records(splits: int) -> list[tuple[int, int]]:
    """Split s (a contiguous chunk of the collection) holds (s, 0), (s, 1), ..."""
    return [(split, i) for split in range(splits) for i in range(PER_SPLIT)]


def reference(splits: int) -> Counter:
    """The committed lines of a run without failures, computed in plain Python."""
    counts: Counter = Counter()
    lines: Counter = Counter()
    for split, i in records(splits):
        key = (split, i % KEYS)
        counts[key] += 1
        lines[f"{split},{i},{counts[key]}"] += 1
    return lines


def record_in_epoch(epoch: int, split: int = 0, offset: int = 7) -> tuple[int, int]:
    return split, (epoch - 1) * MAX_RECORDS + offset


class Trap:
    """Raises on one record: the first ``times`` times it is seen, and while ``poison`` exists.

    Attempts are counted with marker files, which all Spark workers of the machine share.
    """

    def __init__(self, record: tuple[int, int], marker_dir: Path, times: int = 0, poison=None):
        self.record = tuple(record)
        self.marker_dir = str(marker_dir)
        self.times = times
        self.poison = str(poison) if poison else None

    def fired(self) -> int:
        return len(list(Path(self.marker_dir).glob("fired-*")))

    def __call__(self, value: Any) -> None:
        if tuple(value) != self.record:
            return
        poisoned = self.poison is not None and Path(self.poison).exists()
        if poisoned or self.fired() < self.times:
            Path(self.marker_dir).mkdir(parents=True, exist_ok=True)
            (Path(self.marker_dir) / f"fired-{uuid.uuid4().hex}").write_text("")
            raise RuntimeError(f"trap fired on record {value!r}")


class CountPerKey(KeyedProcessFunction):
    """Running count per key in ValueState; the trap fires after the state update."""

    def __init__(self, trap: Trap | None = None):
        self.trap = trap

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        if self.trap is not None:
            self.trap(value)
        yield f"{value[0]},{value[1]},{count}"


def file_sink(out: Path) -> FileSink:
    return (
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=PART_SIZE))
        .build()
    )


def build_job(
    env,
    out: Path,
    splits: int,
    trap: Any = None,
    uids=UIDS,
    observer=None,
    sink_apart: bool = False,
    source_parallelism: int | None = None,
    numbers: Any = None,
) -> None:
    """``sink_apart``: a rebalance puts the sink in a task of its own instead of chaining it
    to the counting function (the same operators, chained differently).
    ``source_parallelism``: the source's, which is ``splits`` unless given (the source then
    has ``splits`` chunks only if it starts at that parallelism).
    ``numbers``: the records' stream (a source of ``splits`` splits), a collection's unless
    given."""
    stream = numbers or env.from_collection(records(splits))
    stream = stream.set_parallelism(source_parallelism or splits).uid(uids[0])
    if observer is not None:
        stream = stream.map(observer).uid("observer")
    counts = (
        stream.key_by(lambda r: (r[0], r[1] % KEYS))
        .process(CountPerKey(trap))
        .uid(uids[1])
        .name("count per key")
    )
    if sink_apart:
        counts = counts.rebalance()
    counts.sink_to(file_sink(out)).uid(uids[2])


def checkpointed_env(
    make_env,
    checkpoints: Path,
    parallelism: int,
    *,
    settings: dict[str, str] | None = None,
    interval_ms: int = 1,
    retained: int = 1,
    retention: ExternalizedCheckpointRetention | None = None,
    restart=None,
):
    env = make_env(parallelism, MAX_RECORDS)
    if settings:
        config = Configuration()
        for key, value in settings.items():
            config.set_string(key, value)
        env.configure(config)
    env.enable_checkpointing(interval_ms, CheckpointingMode.EXACTLY_ONCE)
    checkpoint_config = env.get_checkpoint_config()
    checkpoint_config.set_checkpoint_storage(FileSystemCheckpointStorage(str(checkpoints)))
    checkpoint_config.set_num_retained_checkpoints(retained)
    if retention is not None:
        checkpoint_config.set_externalized_checkpoint_retention(retention)
    env.set_restart_strategy(restart or RestartStrategies.fixed_delay_restart(3, 10))
    return env


# Checking the output -------------------------------------------------------------------------


def visible_files(out: Path) -> list[Path]:
    if not out.exists():
        return []
    return sorted(p for p in out.rglob("*") if p.is_file() and not p.name.startswith("."))


def committed_lines(out: Path) -> Counter:
    return Counter(line for part in visible_files(out) for line in part.read_text().splitlines())


def assert_exactly_once(lines: Counter, splits: int) -> None:
    assert_same_lines(lines, reference(splits))


def assert_same_lines(lines: Counter, expected: Counter) -> None:
    missing = sorted(expected - lines)
    extra = sorted(lines - expected)  # duplicates and wrong counts
    assert not missing and not extra, (
        f"committed output differs from the failure-free run: {len(missing)} lines missing "
        f"(first {missing[:5]}), {len(extra)} unexpected or repeated (first {extra[:5]})"
    )


def assert_committed_output_exact(out: Path, splits: int) -> None:
    assert_exactly_once(committed_lines(out), splits)
    hidden = [p.name for p in out.rglob(".*") if "inprogress" in p.name]
    assert not hidden, f"staged part files left behind after the job finished: {hidden[:5]}"


def assert_ran_epochs(result, restarts_at_least: int = 0, unlisted: int = 1) -> None:
    """At least 5 epochs and checkpoints; with a checkpoint after every epoch, recovery
    restores the latest one, so no successful epoch ever runs twice. Up to ``unlisted``
    epochs are not listed: each failed after its checkpoint's metadata was written, and
    recovery restored that checkpoint."""
    epochs = [e.epoch for e in result.epochs]
    assert max(epochs) == EPOCHS and len(set(epochs)) >= EPOCHS - unlisted, epochs
    assert epochs == sorted(set(epochs)), f"epochs ran again: not the latest checkpoint {epochs}"
    completed = [c for c in result.checkpoints if c.status == "COMPLETED"]
    assert len(completed) >= 5, [(c.id, c.epoch, c.status) for c in result.checkpoints]
    assert completed[-1].epoch == EPOCHS, "the final checkpoint must commit all output"
    assert result.restarts >= restarts_at_least, result.restarts


def job_dirs(checkpoints: Path) -> list[Path]:
    return sorted(p for p in checkpoints.iterdir() if p.is_dir()) if checkpoints.exists() else []


def chk_dirs(job_dir: Path) -> list[Path]:
    found = [p for p in job_dir.iterdir() if re.fullmatch(r"chk-\d+", p.name)]
    return sorted(found, key=lambda p: int(p.name[4:]))


def only_job_dir(checkpoints: Path) -> Path:
    dirs = job_dirs(checkpoints)
    assert len(dirs) == 1, dirs
    return dirs[0]


def metadata_body(chk: Path) -> dict[str, Any]:
    return json.loads((chk / "_metadata").read_text())["body"]


def referenced_state_files(job_dir: Path, chk: Path) -> set[Path]:
    """State files a checkpoint's ``_metadata`` refers to (relative to the job directory):
    the heap backend's key-group handles and the RocksDB backend's files."""
    files = set()
    for operator in metadata_body(chk)["operators"].values():
        for subtask in operator["subtasks"]:
            keyed = subtask.get("keyed") or {}
            handles = [*(keyed.get("groups") or {}).values(), *(keyed.get("files") or {}).values()]
            for handle in handles:
                path = handle[0]
                if path.startswith("file://"):
                    files.add(Path(path.removeprefix("file://")))
                else:
                    files.add(Path(path) if path.startswith("/") else job_dir / path)
    return files


def run_until_failure(make_env, tmp_path: Path, parallelism: int, fail_epoch: int, **kwargs):
    """Run the job with restart strategy none until a poisoned record of ``fail_epoch``.

    It fails after ``fail_epoch - 1`` completed checkpoints (one per epoch); a FAILED job
    keeps its retained checkpoints when the retention is not NO_EXTERNALIZED_CHECKPOINTS.
    Returns the job's checkpoint directory.
    """
    checkpoints = tmp_path / "checkpoints"
    poison = tmp_path / "poison"
    poison.write_text("")
    env = checkpointed_env(
        make_env,
        checkpoints,
        parallelism,
        settings=kwargs.pop("settings", None),
        retained=kwargs.pop("retained", 3),
        retention=kwargs.pop("retention", RETAIN),
        restart=RestartStrategies.no_restart(),
    )
    trap = Trap(record_in_epoch(fail_epoch), tmp_path / "markers-first", poison=poison)
    build_job(env, kwargs.pop("out", tmp_path / "out"), parallelism, trap, **kwargs)
    with pytest.raises(JobExecutionError, match="trap fired"):
        env.execute("first run")
    poison.unlink()
    return only_job_dir(checkpoints)


def stop_with_savepoint_at_first_epoch(env, target, name="first run"):
    """Run the job for one epoch, which ends it with a savepoint: the request is there
    before the loop starts, so it goes with the first epoch planned."""
    master = env._job_master(name)
    future = master.trigger_savepoint(str(target), stop=True)
    epochs = [result.stats.epoch for result in master.run() if result.stats is not None]
    assert len(epochs) == 1, epochs
    return future.result(timeout=0)


def recovery_settings(path: Path, **extra: str) -> dict[str, str]:
    return {"execution.state-recovery.path": str(path), **extra}


class SleepOnce:
    """Sleeps once (per marker file) on one record, inside the function it is passed to."""

    def __init__(self, record: tuple[int, int], marker: Path, seconds: float):
        self.record = tuple(record)
        self.marker = str(marker)
        self.seconds = seconds

    def __call__(self, value: Any) -> None:
        if tuple(value) == self.record and not Path(self.marker).exists():
            Path(self.marker).write_text("")
            time.sleep(self.seconds)


def lines_of_epochs(splits: int, first: int, last: int) -> Counter:
    """The reference lines of epochs ``first`` to ``last``: what a run resumed from a
    checkpoint older than the last committed one commits a second time (into new part
    files: committed files are never replaced), as with Flink's FileSink."""
    return Counter(
        line
        for line in reference(splits)
        if (first - 1) * MAX_RECORDS <= int(line.split(",")[1]) < last * MAX_RECORDS
    )


def on_checkpoint(checkpoints: Path, number: int, action) -> threading.Thread:
    """Run ``action`` on a thread once checkpoint ``number`` (or a later one) of the job
    checkpointing under ``checkpoints`` is complete; its ``done`` event says it ran."""

    def wait_then_act() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            found = checkpoints.glob("*/chk-*/_metadata")
            if any(int(p.parent.name[4:]) >= number for p in found):
                action()
                thread.done.set()  # type: ignore[attr-defined]
                return
            time.sleep(0.02)

    thread = threading.Thread(target=wait_then_act, daemon=True)
    thread.done = threading.Event()  # type: ignore[attr-defined]
    thread.start()
    return thread
