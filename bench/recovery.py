"""Recovery: time to restore and resume from a checkpoint of 1M keys, per state backend.

The job is that of ``state_scale.py`` (``state_jobs``: keyed_count's ``CountAndSum`` over
``KeySpaceSource``, parallelism 2, a checkpoint at the end of every epoch in a
FileSystemCheckpointStorage): it loads ``--keys`` keys (default 1M), then runs epochs that
each touch ``--touch-keys`` random keys (default 10k). Per backend (``--backends``, RocksDB
first) and mode (``--modes``):

- ``same_executor``: the failure strikes inside the running Spark application.
  ``lockgate.testing.inject-failure=after-snapshot-before-ack@<e>`` fails touch epoch
  ``--fail-at`` (default the 3rd) after its snapshot and before its acknowledgement; the
  restart strategy (fixed delay, 1 attempt, no delay) restores the checkpoint of the epoch
  before and runs the epoch again. RocksDB subtasks rebuild their instances from the
  executor's local snapshot of that checkpoint (hard links, nothing downloaded); the heap
  backend reads its key groups from checkpoint storage.
- ``fresh_executor``: a job ends FAILED on a poison record after ``--fail-at`` - 1 touch
  epochs, keeping its last checkpoint (RETAIN_ON_CANCELLATION). A new driver process (a
  new Spark application: nothing of the first one's local disk is known to it) runs a
  small warm-up job, then the same job with ``execution.state-recovery.path`` set to that
  checkpoint, which downloads every file it needs from checkpoint storage (and, as Flink's
  NO_CLAIM mode, uploads all of it again into its own checkpoint).

Printed per backend and mode:

    recovery backend=<b> mode=<same_executor|fresh_executor> keys=<n> restore_ms=<f> ...

``restore_ms`` is what the epoch that restores costs beyond an ordinary touch epoch: its
wall time (``EpochStats.duration_ms`` of the re-run epoch, or of the new job's first
epoch) minus the median of the job's other touch epochs (printed as
``failover_epoch_ms``/``first_epoch_ms`` and ``baseline_epoch_ms``). Each is measured
``--repeats`` times (default 3; every ``same_executor`` run loads the keys anew, every
``fresh_executor`` run resumes a new job in the same new process); the medians are
printed, and every run's ``restore_ms`` as ``all_restore_ms``.

A failed Spark task also costs its Python worker (PySpark exits the worker after an
exception), so the re-run epoch of ``same_executor`` starts new workers and imports lockgate
in them whatever the state. ``failover_floor_ms`` measures that: ``restore_ms`` of the same
failure with a state of 1,000 keys. ``outside_epochs_ms`` is the job's wall time not spent
in completed epochs (job start and end, the failed attempt, the restart). For
``fresh_executor``, ``resume_ms`` is the time from ``execute()`` in the new process to the
end of its first epoch (reading ``_metadata`` included), ``checkpoint_bytes`` what it
downloads and ``first_checkpoint_written_bytes`` what its first checkpoint uploads.

Takes 2-4 minutes on 2 cores at the defaults (four 1M-key loads per backend, and a new
Spark application per backend for ``fresh_executor``).

Run: ``python bench/recovery.py [--keys N] [--backends rocksdb,hashmap]
[--modes same_executor,fresh_executor] [--touch-keys K] [--touch-epochs E] [--fail-at T]
[--repeats R]``.
"""

from __future__ import annotations

import argparse
import glob
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import keyed_count
import state_jobs

from lockgate.common import RestartStrategies
from lockgate.common import config_options as options
from lockgate.datastream import ExternalizedCheckpointRetention
from lockgate.runtime.errors import JobExecutionError

MODES = ("same_executor", "fresh_executor")
FLOOR_KEYS = 1000
CHILD_TIMEOUT_S = 1800


def _choices(allowed: tuple[str, ...]):
    def parse(text: str) -> list[str]:
        items = [item.strip() for item in text.split(",") if item.strip()]
        wrong = [item for item in items if item not in allowed]
        if not items or wrong:
            raise argparse.ArgumentTypeError(
                f"{text!r}: give a comma-separated list of {', '.join(allowed)}"
            )
        return items

    return parse


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument(
        "--backends",
        type=_choices(keyed_count.BACKENDS),
        default=["rocksdb", "hashmap"],
        help="comma-separated state backends (default rocksdb,hashmap)",
    )
    parser.add_argument(
        "--modes",
        type=_choices(MODES),
        default=list(MODES),
        help="comma-separated: same_executor, fresh_executor (default both)",
    )
    parser.add_argument("--touch-keys", type=int, default=10_000, help="keys per touch epoch")
    parser.add_argument(
        "--touch-epochs", type=int, default=6, help="touch epochs of each measured job"
    )
    parser.add_argument(
        "--fail-at", type=int, default=3, help="the touch epoch that fails (same_executor)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="restores measured per backend and mode (the median is printed)",
    )
    parser.add_argument(
        "--load-records-per-split",
        type=int,
        default=1_000_000,
        help="lockgate.epoch.max-records-per-split during the load",
    )
    keyed_count.add_spark_arguments(parser)
    # The fresh_executor run: this script in a new process, resuming from a checkpoint
    parser.add_argument("--resume-from", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not 1 <= args.fail_at < args.touch_epochs:
        parser.error("--fail-at must be at least 1 and less than --touch-epochs")
    return args


def _source(args: argparse.Namespace, keys: int, touch_epochs: int, poison: bool = False):
    return state_jobs.KeySpaceSource(keys, touch_epochs, min(args.touch_keys, keys), poison=poison)


def _env(spark, args, backend: str, source, work_dir: str, checkpoint_dir: str, **settings):
    return state_jobs.state_job(
        spark,
        source,
        backend=backend,
        work_dir=work_dir,
        checkpoint_dir=checkpoint_dir,
        parallelism=args.parallelism,
        max_records_per_split=args.load_records_per_split,
        settings={key: str(value) for key, value in settings.items()},
    )


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _completed(result) -> dict[int, object]:
    """Completed checkpoints by the epoch they end."""
    return {c.epoch: c for c in result.checkpoints if c.status == "COMPLETED"}


# same_executor -------------------------------------------------------------------------------


def failover(spark, args, backend: str, keys: int) -> dict:
    """Fail touch epoch ``--fail-at`` once; figures of the epoch that ran again."""
    source = _source(args, keys, args.touch_epochs)
    loads = source.load_epochs(args.parallelism, args.load_records_per_split)
    failing = loads + args.fail_at
    with (
        tempfile.TemporaryDirectory(prefix="lockgate-bench-") as work_dir,
        tempfile.TemporaryDirectory(prefix="lockgate-chk-") as checkpoint_dir,
    ):
        injection = {options.INJECT_FAILURE.key: f"after-snapshot-before-ack@{failing}"}
        env = _env(spark, args, backend, source, work_dir, checkpoint_dir, **injection)
        env.set_restart_strategy(RestartStrategies.fixed_delay_restart(1, 0))
        started = time.perf_counter()
        result = env.execute(f"recovery {backend} same_executor")
        wall_ms = (time.perf_counter() - started) * 1000
    (rerun,) = [e for e in result.epochs if e.epoch == failing]
    others = [e.duration_ms for e in result.epochs[loads:] if e.epoch != failing]
    baseline = _median(others)
    restored_from = _completed(result).get(failing - 1)
    return {
        "restore_ms": rerun.duration_ms - baseline,
        "failover_epoch_ms": rerun.duration_ms,
        "baseline_epoch_ms": baseline,
        "restarts": result.restarts,
        "restored_subtasks": rerun.restored_subtasks,
        "checkpoint_bytes": restored_from.size_bytes if restored_from else 0,
        "outside_epochs_ms": wall_ms - sum(e.duration_ms for e in result.epochs),
        "records": rerun.records,
    }


def _medians(runs: list[dict]) -> dict:
    """Per figure, the median over runs (figures of the run of median ``restore_ms`` for
    the rest)."""
    ordered = sorted(runs, key=lambda run: run["restore_ms"])
    middle = dict(ordered[(len(ordered) - 1) // 2])
    for key, value in middle.items():
        if isinstance(value, float):
            middle[key] = _median([run[key] for run in runs])
    middle["all_restore_ms"] = [round(run["restore_ms"]) for run in runs]
    return middle


def same_executor(spark, args, backend: str) -> None:
    floors, runs = [], []
    for _ in range(args.repeats):  # interleaved, so that drift hits both alike
        floors.append(failover(spark, args, backend, FLOOR_KEYS)["restore_ms"])
        runs.append(failover(spark, args, backend, args.keys))
    f = _medians(runs)
    print(
        f"recovery backend={backend} mode=same_executor keys={args.keys} "
        f"restore_ms={f['restore_ms']:.1f} failover_epoch_ms={f['failover_epoch_ms']:.1f} "
        f"baseline_epoch_ms={f['baseline_epoch_ms']:.1f} "
        f"failover_floor_ms={_median(floors):.1f} restarts={f['restarts']} "
        f"restored_subtasks={f['restored_subtasks']} checkpoint_bytes={f['checkpoint_bytes']} "
        f"outside_epochs_ms={f['outside_epochs_ms']:.0f} epoch_records={f['records']} "
        f"all_restore_ms={f['all_restore_ms']} all_floor_ms={[round(ms) for ms in floors]}",
        flush=True,
    )


# fresh_executor ------------------------------------------------------------------------------


def retained_checkpoint(spark, args, backend: str, checkpoint_dir: str) -> str:
    """Run the job to a poison record after ``--fail-at`` - 1 touch epochs; its last
    checkpoint stays (the job ends FAILED with RETAIN_ON_CANCELLATION)."""
    source = _source(args, args.keys, args.fail_at - 1, poison=True)
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-") as work_dir:
        env = _env(spark, args, backend, source, work_dir, checkpoint_dir)
        env.get_checkpoint_config().set_externalized_checkpoint_retention(
            ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
        )
        env.set_restart_strategy(RestartStrategies.no_restart())
        try:
            env.execute(f"recovery {backend} checkpoint")
        except JobExecutionError:
            pass  # the poison record: expected
        else:
            raise RuntimeError("the checkpointing job did not fail on its poison record")
    retained = sorted(glob.glob(f"{checkpoint_dir}/*/chk-*"))
    if len(retained) != 1:
        raise RuntimeError(f"expected one retained checkpoint, found {retained}")
    return retained[0]


def fresh_executor(spark, args, backend: str) -> None:
    with tempfile.TemporaryDirectory(prefix="lockgate-chk-") as checkpoint_dir:
        checkpoint = retained_checkpoint(spark, args, backend, checkpoint_dir)
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            f"--resume-from={checkpoint}",
            f"--backends={backend}",
            f"--keys={args.keys}",
            f"--touch-keys={args.touch_keys}",
            f"--touch-epochs={args.touch_epochs}",
            f"--fail-at={args.fail_at}",
            f"--repeats={args.repeats}",
            f"--load-records-per-split={args.load_records_per_split}",
            f"--parallelism={args.parallelism}",
            f"--master={args.master}",
        ]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=False
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith("recovery ")]
    for line in lines:
        print(line, flush=True)
    if done.returncode != 0 or not lines:
        errors = [line for line in done.stderr.splitlines() if line.strip()]
        print(
            f"recovery backend={backend} mode=fresh_executor failed: exit code "
            f"{done.returncode}; {errors[-1] if errors else 'no output'}",
            flush=True,
        )


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def resume_once(spark, args: argparse.Namespace, backend: str) -> dict:
    """Resume from ``--resume-from`` in this process and run ``--touch-epochs`` epochs."""
    # The touches the checkpointed job did not get to, and more: same source, same positions
    source = _source(args, args.keys, args.touch_epochs + args.fail_at - 1)
    with (
        tempfile.TemporaryDirectory(prefix="lockgate-bench-") as work_dir,
        tempfile.TemporaryDirectory(prefix="lockgate-chk-") as checkpoint_dir,
    ):
        recovery_path = {options.STATE_RECOVERY_PATH.key: args.resume_from}
        env = _env(spark, args, backend, source, work_dir, checkpoint_dir, **recovery_path)
        started = time.perf_counter()
        result = env.execute(f"recovery {backend} fresh_executor")
        wall_ms = (time.perf_counter() - started) * 1000
    first, rest = result.epochs[0], result.epochs[1:]
    baseline = _median([e.duration_ms for e in rest])
    first_checkpoint = _completed(result).get(first.epoch)
    return {
        "restore_ms": first.duration_ms - baseline,
        "first_epoch_ms": first.duration_ms,
        "baseline_epoch_ms": baseline,
        "resume_ms": wall_ms - sum(e.duration_ms for e in rest),
        "restored_subtasks": first.restored_subtasks,
        "written_bytes": first_checkpoint.written_bytes if first_checkpoint else 0,
        "records": first.records,
    }


def resume(args: argparse.Namespace) -> None:
    """In the new process: warm up, then resume from ``--resume-from`` ``--repeats`` times
    (each run is a new job: its RocksDB directory is new and empty)."""
    (backend,) = args.backends
    spark = keyed_count.start_session(args.master)
    state_jobs.warm_up(spark, backend, args.parallelism)
    f = _medians([resume_once(spark, args, backend) for _ in range(args.repeats)])
    print(
        f"recovery backend={backend} mode=fresh_executor keys={args.keys} "
        f"restore_ms={f['restore_ms']:.1f} first_epoch_ms={f['first_epoch_ms']:.1f} "
        f"baseline_epoch_ms={f['baseline_epoch_ms']:.1f} resume_ms={f['resume_ms']:.1f} "
        f"restored_subtasks={f['restored_subtasks']} "
        f"checkpoint_bytes={_dir_bytes(Path(args.resume_from).parent / 'shared')} "
        f"first_checkpoint_written_bytes={f['written_bytes']} epoch_records={f['records']} "
        f"all_restore_ms={f['all_restore_ms']}",
        flush=True,
    )
    spark.stop()


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.resume_from:
        resume(args)
        return
    spark = keyed_count.start_session(args.master)
    print(
        f"config keys={args.keys} backends={','.join(args.backends)} "
        f"modes={','.join(args.modes)} touch_keys={args.touch_keys} "
        f"touch_epochs={args.touch_epochs} fail_at={args.fail_at} "
        f"load_records_per_split={args.load_records_per_split} parallelism={args.parallelism}",
        flush=True,
    )
    for backend in args.backends:
        state_jobs.warm_up(spark, backend, args.parallelism)
        if "same_executor" in args.modes:
            same_executor(spark, args, backend)
        if "fresh_executor" in args.modes:
            fresh_executor(spark, args, backend)
    spark.stop()


if __name__ == "__main__":
    main()
