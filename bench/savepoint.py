"""Savepoints of 1M keys: time to take one, its size, time to restore it and to read it.

Per backend (``--backends``, default hashmap then rocksdb), on a warmed-up ``local[2]``
session, with the job of ``state_jobs``: keyed_count's ``CountAndSum`` (a ValueState
``count_sum`` per key) over ``KeySpaceSource``, parallelism 2, a checkpoint at the end of
every epoch in a FileSystemCheckpointStorage; RocksDB with *full* checkpoints
(``EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=False)``: every checkpoint
holds its own copy of all state, as a savepoint does). Every record goes through Spark
tasks, savepoint files are written by the subtasks; the driver plans epochs and writes
``_metadata``.

1. Take: the job loads ``--keys`` keys (default 1M), runs ``--touch-epochs`` epochs
   (default 8) of ``--touch-keys`` random keys (default 1,000) and then stops with a
   savepoint: ``JobMaster.trigger_savepoint(dir, stop=True)`` (what
   ``JobClient.stop_with_savepoint`` calls), asked for between two epochs so that it goes
   with the next, itself a touch epoch. Its subtasks write their regular snapshot, then the
   savepoint (the whole state in canonical form, one file per subtask); once the epoch is
   accepted the driver writes the savepoint's ``_metadata``.

   - ``savepoint_s``: the savepoint's epoch (``savepoint_epoch_s``) minus the median of the
     touch epochs before it (``touch_epoch_s``): both read as many records and end with a
     full checkpoint, so the difference is what the savepoint adds.
   - ``savepoint_floor_s``: the same figure for the same job over a state of only
     ``--touch-keys`` keys: what a savepoint costs whatever the state, a large part of
     ``savepoint_s`` even at 1M keys. A savepoint's epoch is planned anew, so the next
     epoch's source stages, which lockgate starts while an epoch runs (pipelined epochs:
     ``touch_sources_ahead`` counts the touch epochs that had them), are cancelled; their
     source subtasks are rebuilt and new Python processes start for the epoch.
   - ``checkpoint_s``: what a regular checkpoint of the same state costs, for comparison:
     ``touch_epoch_s`` minus the median touch epoch of that small-state job
     (``floor_epoch_s``: the same records, a checkpoint of almost nothing). On the heap
     backend lockgate writes the key groups that changed at the end of every epoch; 1,000
     random keys change all 128 key groups, so every touch epoch writes the whole state,
     as a full checkpoint does. On RocksDB a full checkpoint flushes the memtable and
     copies every SST file into checkpoint storage. The difference also holds whatever else
     a larger state costs an epoch (RocksDB reads of keys not in memory).
     ``checkpoint_bytes``: ``size_bytes`` of the last touch epoch's checkpoint.
   - ``size_bytes`` and ``files``: the bytes and number of the files under the savepoint's
     directory (``_metadata`` included). The canonical form is the same bytes whichever
     backend wrote it.

2. Restore: a job whose source has another uid (only the keyed state is restored;
   ``execution.state-recovery.ignore-unclaimed-state`` drops the old source's positions)
   reads one epoch of ``--touch-keys`` records, then one more, with
   ``execution.state-recovery.path`` set to the savepoint. ``restore_same_p_s`` (at
   parallelism 2), ``restore_other_p_s`` (at ``--other-parallelism``, default 3: key
   groups regrouped over 3 subtasks, each reading parts of both files) and
   ``restore_cross_s`` (into the other backend, at parallelism 2) are each the time from
   starting the job (the driver reads ``_metadata`` and assigns key groups) to the end of
   its first epoch, minus the same for the same job without a recovery path, run just
   before it; medians of ``--repeats`` pairs (default 3; the raw medians are in the detail
   line). The first epoch of the restored job also ends with a snapshot holding the whole
   restored state (a heap restore marks every key group changed, a new RocksDB instance
   uploads all its SST files): lockgate writes state at the end of every epoch, so a
   restore is read + rebuild + a first full checkpoint.

3. ``reader_count_s``: the time of
   ``SavepointReader.read(spark, path).keyed_state("count", "count_sum").count()``
   (reading ``_metadata``, Spark's type inference over the first rows, then one Spark task
   per savepoint file decoding every entry), after the same on the small-state savepoint
   (not measured: Spark SQL's first DataFrames). ``rows`` must be ``--keys``; the script
   exits with status 1 otherwise.

Printed per backend: a detail line (every touch and floor epoch's time, the load epochs,
the first epochs of the restores and of their baselines) and the figures line

    savepoint backend=<b> keys=<n> savepoint_s=<f> checkpoint_s=<f> size_bytes=<n>
    files=<n> restore_same_p_s=<f> restore_other_p_s=<f> restore_cross_s=<f>
    reader_count_s=<f> rows=<n> ...

There is no peer figure: PyFlink 2.3's Python ``trigger_savepoint`` and
``stop_with_savepoint`` fail, so the comparison in the run is the checkpoint of the same
state (``checkpoint_s``, ``checkpoint_bytes``). Figures of a few hundred milliseconds are
within the noise of a busy 2-core machine. About 2.5 minutes at 1M keys on 2 cores; a quick
run: ``--keys 20000``.

Run: ``python bench/savepoint.py [--keys N] [--backends hashmap,rocksdb] [--touch-keys K]
[--touch-epochs E] [--other-parallelism P] [--repeats R] [--load-records-per-split R]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import keyed_count
import state_jobs

from lockgate.checkpoint.coordinator import CheckpointStats
from lockgate.common import config_options as options
from lockgate.datastream import StreamExecutionEnvironment
from lockgate.datastream.state_backend import EmbeddedRocksDBStateBackend
from lockgate.runtime.jobmaster.job_summary import EpochStats
from lockgate.state_processor import SavepointReader

KEYED_UID = "count"  # state_jobs' keyed operator
STATE_NAME = "count_sum"  # keyed_count.CountAndSum's ValueState


def _backends(text: str) -> list[str]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items or not set(items) <= set(keyed_count.BACKENDS):
        raise argparse.ArgumentTypeError(f"{text!r}: a comma-separated list of hashmap, rocksdb")
    return items


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument(
        "--backends",
        type=_backends,
        default=["hashmap", "rocksdb"],
        help="comma-separated state backends (default hashmap,rocksdb)",
    )
    parser.add_argument("--touch-keys", type=int, default=1000, help="keys per touch epoch")
    parser.add_argument(
        "--touch-epochs", type=int, default=8, help="touch epochs before the savepoint"
    )
    parser.add_argument(
        "--other-parallelism", type=int, default=3, help="the rescaled restore's parallelism"
    )
    parser.add_argument(
        "--load-records-per-split",
        type=int,
        default=1_000_000,
        help="lockgate.epoch.max-records-per-split during the load",
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs of each restore and its baseline (median)"
    )
    keyed_count.add_spark_arguments(parser)
    args = parser.parse_args(argv)
    if min(args.touch_epochs, args.repeats) < 1 or not 1 <= args.touch_keys <= args.keys:
        parser.error("need --touch-epochs, --repeats >= 1 and 1 <= --touch-keys <= --keys")
    if args.touch_keys < max(args.parallelism, args.other_parallelism):
        parser.error("--touch-keys must be at least the parallelism")
    return args


@dataclass
class Run:
    epochs: list[EpochStats]
    checkpoints: list[CheckpointStats]
    first_epoch_s: float  # from the start of the run to the end of its first epoch
    savepoint: str | None = None  # the URL of the savepoint it stopped with
    touch: list[EpochStats] = field(default_factory=list)


def run(
    env: StreamExecutionEnvironment,
    name: str,
    stop_after: int | None = None,
    target: str | None = None,
) -> Run:
    """Run the job's epochs in this thread; with ``stop_after``, ask for a stop with a
    savepoint into ``target`` once that many epochs are done (it goes with the next)."""
    master = env._job_master(name)
    epochs: list[EpochStats] = []
    future = None
    started = time.perf_counter()
    first_epoch_s = 0.0
    for result in master.run():
        if result.stats is None:
            continue
        if not epochs:
            first_epoch_s = time.perf_counter() - started
        epochs.append(result.stats)
        if len(epochs) == stop_after:
            future = master.trigger_savepoint(target, stop=True)
    savepoint = future.result(timeout=0) if future is not None else None
    return Run(epochs, list(master.summary.checkpoints), first_epoch_s, savepoint)


def _median_s(epochs: list[EpochStats]) -> float:
    return statistics.median(e.duration_ms for e in epochs) / 1000


def run_job(
    spark,
    args: argparse.Namespace,
    backend: str,
    source: state_jobs.KeySpaceSource,
    name: str,
    parallelism: int,
    settings: dict[str, str] | None = None,
    stop_after: int | None = None,
    target: str | None = None,
) -> Run:
    """Run state_jobs' job over ``source`` (RocksDB with full checkpoints) in temporary
    directories; a restoring job's source has another uid than that of the savepoint."""
    with (
        tempfile.TemporaryDirectory(prefix="lockgate-bench-") as work_dir,
        tempfile.TemporaryDirectory(prefix="lockgate-chk-") as checkpoint_dir,
    ):
        env = state_jobs.state_job(
            spark,
            source,
            backend=backend,
            work_dir=work_dir,
            checkpoint_dir=checkpoint_dir,
            parallelism=parallelism,
            max_records_per_split=args.load_records_per_split,
            settings=settings,
            source_uid="keys" if stop_after else "probe",
        )
        if backend == "rocksdb":  # full checkpoints: each holds all state, as a savepoint
            env.set_state_backend(EmbeddedRocksDBStateBackend(False))
        return run(env, name, stop_after, target)


def take_savepoint(spark, args, backend: str, keys: int, target: str) -> Run:
    """Load ``keys`` keys, touch ``--touch-keys`` of them ``--touch-epochs`` times, then stop
    with a savepoint under ``target``."""
    # Two touch epochs more than the job runs: the savepoint's epoch is not the last one
    source = state_jobs.KeySpaceSource(keys, args.touch_epochs + 2, args.touch_keys)
    loads = source.load_epochs(args.parallelism, args.load_records_per_split)
    stop_after = loads + args.touch_epochs
    name = f"savepoint {backend} {keys}"
    done = run_job(spark, args, backend, source, name, args.parallelism, None, stop_after, target)
    if done.savepoint is None or len(done.epochs) != stop_after + 1:
        raise RuntimeError(f"expected {stop_after + 1} epochs and a savepoint, got {done}")
    done.touch = done.epochs[loads:-1]
    return done


def first_epoch_s(spark, args, backend: str, parallelism: int, savepoint: str | None) -> float:
    """Start a job of two small epochs (restoring ``savepoint``, if given) over keys that
    the savepoint holds: the time to the end of its first epoch."""
    source = state_jobs.KeySpaceSource(args.touch_keys, 1, args.touch_keys)
    settings = {options.IGNORE_UNCLAIMED_STATE.key: "true"}
    if savepoint is not None:
        settings[options.STATE_RECOVERY_PATH.key] = savepoint
    name = f"savepoint {backend} restore p={parallelism}"
    done = run_job(spark, args, backend, source, name, parallelism, settings)
    entries = done.epochs[0].state_entries  # RocksDB's is an estimate
    if savepoint is not None and entries < 0.9 * args.keys:
        raise RuntimeError(f"{name}: {entries} state entries after the first epoch")
    return done.first_epoch_s


def restore_s(spark, args, backend: str, parallelism: int, savepoint: str) -> tuple[float, float]:
    """Per repeat, the first-epoch time of the restoring job and of the same job without a
    restore, run one after the other: (median restored, median baseline)."""
    restored, baseline = [], []
    for _ in range(args.repeats):
        baseline.append(first_epoch_s(spark, args, backend, parallelism, None))
        restored.append(first_epoch_s(spark, args, backend, parallelism, savepoint))
    return statistics.median(restored), statistics.median(baseline)


def count_rows(spark, savepoint: str) -> int:
    """The state processor's rows of the job's ValueState, counted by Spark."""
    return SavepointReader.read(spark, savepoint).keyed_state(KEYED_UID, STATE_NAME).count()


def _files(url: str) -> list[Path]:
    root = Path(urlparse(url).path if url.startswith("file:") else url)
    return [path for path in root.rglob("*") if path.is_file()]


def measure(spark, args, backend: str) -> bool:
    """Print the figures of ``backend``; whether the reader counted every key."""
    other = next(b for b in keyed_count.BACKENDS if b != backend)
    restores = {
        "same_p": (backend, args.parallelism),
        "other_p": (backend, args.other_parallelism),
        "cross": (other, args.parallelism),
    }
    with tempfile.TemporaryDirectory(prefix="lockgate-sp-") as target:
        floor = take_savepoint(spark, args, backend, args.touch_keys, target)
        taken = take_savepoint(spark, args, backend, args.keys, target)
        assert taken.savepoint is not None
        files = _files(taken.savepoint)
        size_bytes = sum(path.stat().st_size for path in files)
        # A job right after a large one is slower whatever it does: one not measured first
        first_epoch_s(spark, args, backend, args.parallelism, None)
        firsts = {
            name: restore_s(spark, args, into, parallelism, taken.savepoint)
            for name, (into, parallelism) in restores.items()
        }
        assert floor.savepoint is not None
        count_rows(spark, floor.savepoint)  # not measured: Spark SQL's first DataFrames
        started = time.perf_counter()
        rows = count_rows(spark, taken.savepoint)
        reader_s = time.perf_counter() - started
    restore = {name: restored - baseline for name, (restored, baseline) in firsts.items()}
    touch_s, floor_s = _median_s(taken.touch), _median_s(floor.touch)
    savepoint_epoch_s = taken.epochs[-1].duration_ms / 1000
    floor_savepoint_s = floor.epochs[-1].duration_ms / 1000 - floor_s
    checkpoints = {c.id: c for c in taken.checkpoints if c.status == "COMPLETED"}
    last_touch = checkpoints.get(taken.touch[-1].checkpoint_id or -1)
    loads = taken.epochs[: -len(taken.touch) - 1]
    print(
        f"savepoint_detail backend={backend} "
        f"touch_epochs_ms={[round(e.duration_ms) for e in taken.touch]} "
        f"floor_epochs_ms={[round(e.duration_ms) for e in floor.touch]} "
        f"floor_savepoint_epoch_ms={floor.epochs[-1].duration_ms:.0f} "
        f"touch_sources_ahead={sum(e.sources_ahead for e in taken.touch)}/{len(taken.touch)} "
        f"load_epochs_ms={[round(e.duration_ms) for e in loads]} "
        f"restore_first_epoch_s={ {k: round(v[0], 3) for k, v in firsts.items()} } "
        f"baseline_first_epoch_s={ {k: round(v[1], 3) for k, v in firsts.items()} }",
        flush=True,
    )
    print(
        f"savepoint backend={backend} keys={args.keys} "
        f"savepoint_s={savepoint_epoch_s - touch_s:.3f} checkpoint_s={touch_s - floor_s:.3f} "
        f"size_bytes={size_bytes} files={len(files)} "
        f"restore_same_p_s={restore['same_p']:.3f} "
        f"restore_other_p_s={restore['other_p']:.3f} "
        f"restore_cross_s={restore['cross']:.3f} "
        f"reader_count_s={reader_s:.3f} rows={rows} "
        f"savepoint_epoch_s={savepoint_epoch_s:.3f} touch_epoch_s={touch_s:.3f} "
        f"floor_epoch_s={floor_s:.3f} savepoint_floor_s={floor_savepoint_s:.3f} "
        f"checkpoint_bytes={last_touch.size_bytes if last_touch else 0} "
        f"other_parallelism={args.other_parallelism} cross_backend={other}",
        flush=True,
    )
    return rows == args.keys


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    spark = keyed_count.start_session(args.master)
    print(
        f"config keys={args.keys} backends={','.join(args.backends)} "
        f"touch_keys={args.touch_keys} touch_epochs={args.touch_epochs} "
        f"parallelism={args.parallelism} other_parallelism={args.other_parallelism} "
        f"load_records_per_split={args.load_records_per_split}",
        flush=True,
    )
    for backend in keyed_count.BACKENDS:  # both: each backend's savepoint goes into the other
        for parallelism in sorted({args.parallelism, args.other_parallelism}):
            state_jobs.warm_up(spark, backend, parallelism)
    complete = all([measure(spark, args, backend) for backend in args.backends])
    spark.stop()
    if not complete:
        print("savepoint: the state processor did not count every key", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
