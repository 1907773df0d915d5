"""Checkpoint cost: throughput with checkpoints, incremental vs full size, recovery time.

Three measurements, all on a warmed-up local Spark session, with FileSystemCheckpointStorage
in a temporary directory:

(a) The keyed-count job of ``bench/keyed_count.py`` (its ``CountAndSum``, ``make_events``
    and settings, imported from it) with checkpointing off, every 1 s
    (``enable_checkpointing(1000)``), every epoch (``enable_checkpointing(1)``), and every
    epoch with signed checkpoints (``lockgate.security.checkpoint-signing-key-file``: every
    state blob digested with SHA-256, ``_metadata`` signed): events/s
    of each (median of ``--repeats`` interleaved runs, so that changing load on a shared
    machine hits every mode alike; the best run is printed too), number of checkpoints, and
    the median checkpoint duration, size (``size_bytes``: all state a checkpoint refers to)
    and written bytes (``written_bytes``: state written since the previous checkpoint).
    lockgate snapshots the changed key groups at the end of *every* epoch, checkpoint or
    not; a checkpoint adds only ``_metadata``, sink commits and retention on the driver.
    ``duration_ms`` is counted from the start of the checkpoint's epoch (its barrier is the
    epoch's end), so it is mostly the epoch itself.

(b) Incremental vs full: a keyed job over 100,000 keys whose first epoch touches every key
    and whose later epochs touch only 1% of them (1,000 keys), one checkpoint per epoch.
    The heap backend writes one blob per *changed key group*, so what an incremental
    checkpoint writes depends on how many key groups the touched keys fall in, not on how
    many keys they are. Four variants are printed:

    - ``random`` keys at the default max parallelism (128 key groups at parallelism 2):
      1,000 random keys hit every key group (~7.8 touched keys per group), so every
      checkpoint rewrites all state and incremental ~= full. This is the figure in the last
      line, because it is what a user gets by default.
    - ``random`` keys with ``set_max_parallelism(4096)``: ~885 of 4,096 key groups change
      (1 - e^(-1000/4096) ~= 22%), so an incremental checkpoint is ~22% of a full one.
    - ``clustered`` keys (the 1,000 keys of the fewest key groups) at 128 and 4,096: the
      lower bound, ~1% of the state plus the whole of the few groups they share.

    ``full_bytes`` is the ``size_bytes`` of the later checkpoints (all state they refer
    to), ``incremental_bytes`` the median ``written_bytes`` of the checkpoints after the
    first. Neither counts ``_metadata``, which holds one handle per key group and is
    written whole by every checkpoint (its size is printed by (c)): with 4,096 key groups
    it outweighs the state an incremental checkpoint writes.

(c) Recovery: a job builds state for 100,000 keys in ``--recovery-checkpoints`` epochs,
    each ending in a checkpoint (RETAIN_ON_CANCELLATION, restart strategy none), and then
    fails on a poison record, so it ends FAILED and keeps its last checkpoint. A new job
    with ``execution.state-recovery.path=<chk-n>`` then reads ``--recovery-extra`` further
    records; ``restore_ms`` is the time from starting it to its first completed epoch
    (first collected record), median over ``--recovery-repeats`` runs, minus the job
    overhead measured as in ``keyed_count.py``. The same job without a recovery path (no
    state) is timed too, as a reference. Both are run at the default max parallelism (the
    figures line) and at 4,096 key groups.

The last printed line is the figures line:

    checkpoint_cost off_events_per_s=... every_1s_events_per_s=... every_epoch_events_per_s=...
    median_checkpoint_ms=... median_checkpoint_bytes=... signed_events_per_s=...
    signed_median_checkpoint_ms=... incremental_bytes=... full_bytes=... recovery_ms=...

where the checkpoint medians are those of the every-epoch runs of (a).

Run: ``python bench/checkpoint_cost.py [--events N] [--keys K] [--parallelism P]
[--max-records-per-split M] [--repeats R] [--incremental-keys K] [--recovery-keys K]
[--recovery-repeats R]`` (see ``--help`` for the rest).
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import random
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

from pyspark import cloudpickle

from lockgate.common import Configuration, RestartStrategies
from lockgate.common import config_options as options
from lockgate.datastream import ExternalizedCheckpointRetention, StreamExecutionEnvironment
from lockgate.datastream.checkpoint_storage import FileSystemCheckpointStorage
from lockgate.datastream.connectors import DiscardingSink
from lockgate.runtime.errors import JobExecutionError
from lockgate.state.key_groups import default_max_parallelism, key_group_for_hash
from lockgate.state.key_hash import stable_key_hash


def _load_keyed_count() -> ModuleType:
    """Import bench/keyed_count.py (bench/ is not a package) and ship it to the workers.

    Spark's Python workers cannot import ``keyed_count``, so cloudpickle must send its
    classes by value, as it does for ``__main__``.
    """
    path = Path(__file__).resolve().with_name("keyed_count.py")
    spec = importlib.util.spec_from_file_location("keyed_count", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    cloudpickle.register_pickle_by_value(module)
    return module


keyed_count = _load_keyed_count()
CountAndSum = keyed_count.CountAndSum
_key = keyed_count._key

# mode -> (checkpoint interval in ms or None, signed)
MODES = {
    "off": (None, False),
    "every_1s": (1000, False),
    "every_epoch": (1, False),
    "every_epoch_signed": (1, True),
}
POISON = -1  # a value no generated event has: the recovery job's first run fails on it


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    keyed_count.add_job_arguments(parser)
    parser.add_argument("--repeats", type=int, default=5, help="runs of each mode in (a)")
    parser.add_argument("--incremental-keys", type=int, default=100_000)
    parser.add_argument("--touched-fraction", type=float, default=0.01)
    parser.add_argument(
        "--incremental-epochs", type=int, default=4, help="epochs after the first in (b)"
    )
    parser.add_argument("--recovery-keys", type=int, default=100_000)
    parser.add_argument("--recovery-checkpoints", type=int, default=4)
    parser.add_argument("--recovery-extra", type=int, default=1000)
    parser.add_argument("--recovery-repeats", type=int, default=3)
    return parser.parse_args(argv)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _environment(spark, work_dir: str, max_records: int, parallelism: int):
    config = Configuration()
    config.set_string(options.WORK_DIR.key, work_dir)
    config.set_integer(options.EPOCH_MAX_RECORDS_PER_SPLIT.key, max_records)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.configure(config)
    env.set_parallelism(parallelism)
    return env


def _checkpoint_every(env, interval_ms: int, checkpoint_dir: str) -> None:
    env.enable_checkpointing(interval_ms)
    env.get_checkpoint_config().set_checkpoint_storage(FileSystemCheckpointStorage(checkpoint_dir))


def _completed(result) -> list:
    return [c for c in result.checkpoints if c.status == "COMPLETED"]


# (a) Throughput ------------------------------------------------------------------------------


def run_keyed_count(
    spark, args, events, work_dir: str, interval_ms: int | None, signed: bool = False
):
    """The job of keyed_count.run_job, with checkpointing as asked."""
    env = _environment(spark, work_dir, args.max_records_per_split, args.parallelism)
    with tempfile.TemporaryDirectory(prefix="lockgate-chk-") as checkpoint_dir:
        if interval_ms is not None:
            _checkpoint_every(env, interval_ms, checkpoint_dir)
        if signed:
            key = Path(work_dir) / "signing-key"
            key.write_bytes(secrets.token_bytes(32))
            key.chmod(0o600)
            config = Configuration()
            config.set_string(options.CHECKPOINT_SIGNING_KEY_FILE.key, str(key))
            env.configure(config)
        source = env.from_collection(events)
        if args.source_parallelism != 1:
            source = source.set_parallelism(args.source_parallelism)
        source.key_by(_key).process(CountAndSum()).sink_to(DiscardingSink())
        started = time.perf_counter()
        result = env.execute(f"checkpoint_cost {interval_ms}")
        return time.perf_counter() - started, result


def throughput(spark, args, events, work_dir: str) -> dict[str, dict]:
    runs: dict[str, list] = {mode: [] for mode in MODES}
    for _ in range(args.repeats):
        for mode, (interval, signed) in MODES.items():  # interleaved: drift hits all modes
            runs[mode].append(run_keyed_count(spark, args, events, work_dir, interval, signed))
    figures = {}
    for mode, results in runs.items():
        checkpoints = [c for _, result in results for c in _completed(result)]
        epochs = [e for _, result in results for e in result.epochs]
        figures[mode] = {
            "events_per_s": _median([args.events / seconds for seconds, _ in results]),
            "best_events_per_s": max(args.events / seconds for seconds, _ in results),
            "wall_s": [round(seconds, 2) for seconds, _ in results],
            "epochs": len(results[0][1].epochs),
            "checkpoints": len(_completed(results[0][1])),
            "median_epoch_ms": _median([e.duration_ms for e in epochs]),
            "median_checkpoint_ms": _median([c.duration_ms for c in checkpoints]),
            "median_checkpoint_bytes": int(_median([c.size_bytes for c in checkpoints])),
            "median_written_bytes": int(_median([c.written_bytes for c in checkpoints])),
        }
    return figures


# (b) Incremental vs full ---------------------------------------------------------------------


def _key_group(key: int, max_parallelism: int) -> int:
    return key_group_for_hash(stable_key_hash(key), max_parallelism)


def touched_keys(keys: int, count: int, max_parallelism: int, clustered: bool) -> list[int]:
    if not clustered:
        return random.Random(7).sample(range(keys), count)
    # The keys of the fewest key groups: sort by key group, take the first ``count``.
    return sorted(range(keys), key=lambda k: (_key_group(k, max_parallelism), k))[:count]


def incremental_events(keys: int, touched: list[int], later_epochs: int) -> list:
    """One epoch-slice (``keys`` records) over every key, then slices cycling over ``touched``."""
    rng = random.Random(42)
    first = list(range(keys))
    rng.shuffle(first)
    later = [touched[i % len(touched)] for i in range(keys * later_epochs)]
    return [(key, rng.randrange(1000)) for key in first + later]


def incremental(spark, args, work_dir: str, max_parallelism: int, clustered: bool) -> dict:
    keys = args.incremental_keys
    count = max(1, round(keys * args.touched_fraction))
    touched = touched_keys(keys, count, max_parallelism, clustered)
    events = incremental_events(keys, touched, args.incremental_epochs)
    # One source subtask reading ``keys`` records per epoch: epoch 1 is the full key set,
    # every later epoch only the touched keys.
    env = _environment(spark, work_dir, keys, args.parallelism)
    env.set_max_parallelism(max_parallelism)
    with tempfile.TemporaryDirectory(prefix="lockgate-chk-") as checkpoint_dir:
        _checkpoint_every(env, 1, checkpoint_dir)
        env.from_collection(events).key_by(_key).process(CountAndSum()).sink_to(DiscardingSink())
        result = env.execute("checkpoint_cost incremental")
    checkpoints = _completed(result)
    later = checkpoints[1:]
    return {
        "touched_keys": count,
        "touched_groups": len({_key_group(k, max_parallelism) for k in touched}),
        "key_groups": max_parallelism,
        "checkpoints": len(checkpoints),
        "first_written_bytes": checkpoints[0].written_bytes if checkpoints else 0,
        "incremental_bytes": int(_median([c.written_bytes for c in later])),
        "full_bytes": int(_median([c.size_bytes for c in later])),
        "median_checkpoint_ms": _median([c.duration_ms for c in later]),
    }


# (c) Recovery --------------------------------------------------------------------------------


class FailOnPoison(CountAndSum):
    """CountAndSum that fails the job on a poison record (to end it FAILED, state kept)."""

    def process_element(self, value, ctx):
        if value[1] == POISON:
            raise RuntimeError("poison record: ending the job so that its checkpoint is kept")
        yield from super().process_element(value, ctx)


def _recovery_env(
    spark, args, work_dir: str, checkpoint_dir: str, max_records: int, max_parallelism: int
):
    env = _environment(spark, work_dir, max_records, args.parallelism)
    env.set_max_parallelism(max_parallelism)
    _checkpoint_every(env, 1, checkpoint_dir)
    config = env.get_checkpoint_config()
    config.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    env.set_restart_strategy(RestartStrategies.no_restart())
    return env


def _recovery_job(env, events):
    """The same graph (and uids) in both runs: the restore maps state by uid."""
    stream = env.from_collection(events).uid("events")
    return stream.key_by(_key).process(FailOnPoison()).uid("count").execute_and_collect()


def _dir_bytes(path: str) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def recovery(spark, args, work_dir: str, overhead_ms: float, max_parallelism: int) -> dict:
    keys = args.recovery_keys
    rng = random.Random(42)
    build = list(range(keys))
    rng.shuffle(build)
    build_events = [(key, rng.randrange(1000)) for key in build]
    per_epoch = -(-keys // args.recovery_checkpoints)  # one source subtask: epoch = slice
    extra = [(key, rng.randrange(1000)) for key in rng.sample(range(keys), args.recovery_extra)]
    with tempfile.TemporaryDirectory(prefix="lockgate-chk-") as checkpoint_root:
        first_dir = f"{checkpoint_root}/first"
        env = _recovery_env(spark, args, work_dir, first_dir, per_epoch, max_parallelism)
        results = _recovery_job(env, [*build_events, (0, POISON)])
        try:
            for _ in results:
                pass
            raise AssertionError("the state-building job did not fail on its poison record")
        except JobExecutionError:
            pass  # FAILED: RETAIN_ON_CANCELLATION (any retention but none) keeps the checkpoint
        retained = sorted(glob.glob(f"{first_dir}/*/chk-*"))
        if len(retained) != 1:
            raise AssertionError(f"expected one retained checkpoint, found {retained}")
        chk = retained[0]
        figures = {
            "checkpoint": Path(chk).name,
            "state_bytes": _dir_bytes(str(Path(chk).parent / "shared")),
            "metadata_bytes": (Path(chk) / "_metadata").stat().st_size,
        }
        # The recovered job's source resumes at offset ``keys``: it reads only ``extra``.
        # The failed task cost Spark its Python worker: a discarded fresh run starts a new
        # one (and imports lockgate in it) before anything is timed; then alternating runs.
        runs = {"warmup": [], "restore": [], "fresh": []}
        plan = [("warmup", None)] + [("restore", chk), ("fresh", None)] * args.recovery_repeats
        for attempt, (label, recovery_path) in enumerate(plan):
            target = f"{checkpoint_root}/{label}-{attempt}"
            env = _recovery_env(spark, args, work_dir, target, per_epoch, max_parallelism)
            if recovery_path is not None:
                config = Configuration()
                config.set_string(options.STATE_RECOVERY_PATH.key, recovery_path)
                env.configure(config)
            events = [*build_events, *extra] if recovery_path else extra
            started = time.perf_counter()
            results = _recovery_job(env, events)
            first = next(results)
            first_ms = (time.perf_counter() - started) * 1000
            collected = [first, *results]
            wall_ms = (time.perf_counter() - started) * 1000
            # Every key was counted once before the checkpoint: restored counts are 2.
            counts = sorted({count for _, count, _ in collected})
            runs[label].append((first_ms, wall_ms, len(collected), counts))
        del runs["warmup"]
        for label, measured in runs.items():
            figures[f"{label}_first_epoch_ms"] = _median([m[0] for m in measured])
            figures[f"{label}_first_epoch_all_ms"] = [round(m[0], 1) for m in measured]
            figures[f"{label}_wall_ms"] = _median([m[1] for m in measured])
            figures[f"{label}_records"] = measured[-1][2]
            figures[f"{label}_counts"] = sorted({c for m in measured for c in m[3]})
    figures["restore_ms"] = figures["restore_first_epoch_ms"] - overhead_ms
    return figures


# Main ----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    spark = keyed_count.start_session(args.master)
    sc = spark.sparkContext
    events = keyed_count.make_events(args.events, args.keys)
    print(
        f"config events={args.events} keys={args.keys} parallelism={args.parallelism} "
        f"source_parallelism={args.source_parallelism} "
        f"max_records_per_split={args.max_records_per_split} repeats={args.repeats} "
        f"incremental_keys={args.incremental_keys} touched_fraction={args.touched_fraction} "
        f"recovery_keys={args.recovery_keys} recovery_extra={args.recovery_extra}"
    )
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-") as work_dir:
        # Warm up: start the Python workers and import lockgate in them.
        warm_args = argparse.Namespace(**{**vars(args), "max_records_per_split": 1000})
        run_keyed_count(spark, warm_args, events[:2000], work_dir, 1)
        overhead = keyed_count.job_overhead_ms(sc)
        print(f"job_overhead_ms={overhead:.2f}")

        modes = throughput(spark, args, events, work_dir)
        for mode, f in modes.items():
            print(
                f"throughput mode={mode} events_per_s={f['events_per_s']:.2f} "
                f"best_events_per_s={f['best_events_per_s']:.2f} "
                f"wall_s={f['wall_s']} epochs={f['epochs']} checkpoints={f['checkpoints']} "
                f"median_epoch_ms={f['median_epoch_ms']:.1f} "
                f"median_checkpoint_ms={f['median_checkpoint_ms']:.1f} "
                f"median_checkpoint_bytes={f['median_checkpoint_bytes']} "
                f"median_written_bytes={f['median_written_bytes']}"
            )

        default_max = default_max_parallelism(args.parallelism)
        variants = {}
        for clustered in (False, True):
            for max_parallelism in (default_max, 4096):
                name = f"{'clustered' if clustered else 'random'}_p{max_parallelism}"
                f = incremental(spark, args, work_dir, max_parallelism, clustered)
                variants[name] = f
                ratio = f["incremental_bytes"] / f["full_bytes"] if f["full_bytes"] else 0.0
                print(
                    f"incremental variant={name} touched_keys={f['touched_keys']} "
                    f"touched_groups={f['touched_groups']}/{f['key_groups']} "
                    f"checkpoints={f['checkpoints']} "
                    f"first_written_bytes={f['first_written_bytes']} "
                    f"incremental_bytes={f['incremental_bytes']} full_bytes={f['full_bytes']} "
                    f"ratio={ratio:.4f} median_checkpoint_ms={f['median_checkpoint_ms']:.1f}"
                )

        recoveries = {}
        for max_parallelism in (default_max, 4096):
            r = recovery(spark, args, work_dir, overhead, max_parallelism)
            recoveries[max_parallelism] = r
            print(
                f"recovery keys={args.recovery_keys} key_groups={max_parallelism} "
                f"checkpoint={r['checkpoint']} state_bytes={r['state_bytes']} "
                f"metadata_bytes={r['metadata_bytes']}"
            )
            for label in ("fresh", "restore"):
                print(
                    f"recovery key_groups={max_parallelism} run={label} "
                    f"first_epoch_ms={r[f'{label}_first_epoch_ms']:.1f} "
                    f"all_first_epoch_ms={r[f'{label}_first_epoch_all_ms']} "
                    f"wall_ms={r[f'{label}_wall_ms']:.1f} records={r[f'{label}_records']} "
                    f"counts={r[f'{label}_counts']}"
                )
            print(
                f"recovery key_groups={max_parallelism} restore_ms={r['restore_ms']:.1f} "
                f"restore_minus_fresh_ms="
                f"{r['restore_first_epoch_ms'] - r['fresh_first_epoch_ms']:.1f} "
                f"job_overhead_ms={overhead:.1f}"
            )

    summary = variants[f"random_p{default_max}"]
    every_epoch = modes["every_epoch"]
    signed = modes["every_epoch_signed"]
    print(
        f"checkpoint_cost off_events_per_s={modes['off']['events_per_s']:.2f} "
        f"every_1s_events_per_s={modes['every_1s']['events_per_s']:.2f} "
        f"every_epoch_events_per_s={every_epoch['events_per_s']:.2f} "
        f"median_checkpoint_ms={every_epoch['median_checkpoint_ms']:.2f} "
        f"median_checkpoint_bytes={every_epoch['median_checkpoint_bytes']} "
        f"signed_events_per_s={signed['events_per_s']:.2f} "
        f"signed_median_checkpoint_ms={signed['median_checkpoint_ms']:.2f} "
        f"incremental_bytes={summary['incremental_bytes']} full_bytes={summary['full_bytes']} "
        f"recovery_ms={recoveries[default_max]['restore_ms']:.2f}"
    )
    spark.stop()


if __name__ == "__main__":
    main()
