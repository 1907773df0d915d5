"""State scale: does an epoch that touches 10k keys cost the same at 10k, 1M and 10M keys?

For each scale n (``--scales``, default 10k, 1M and 10M keys) one job runs keyed_count's
``CountAndSum`` (a ValueState (count, sum) per key) over ``state_jobs.KeySpaceSource``,
on RocksDB (``EmbeddedRocksDBStateBackend`` with incremental checkpoints), parallelism 2,
a checkpoint at the end of every epoch (FileSystemCheckpointStorage in a temporary
directory):

1. Load: every key once, ``--load-records-per-split`` records per source split per epoch
   (``lockgate.epoch.max-records-per-split``; 10M keys at the default 1M: 5 epochs of 2M
   records).
2. Touch: ``--touch-epochs`` epochs (default 8) of ``--touch-keys`` records (default 10k),
   each a fresh random sample of the n keys, and one more that is not measured (the last
   epoch of a bounded job also closes the operators and deletes the RocksDB instances).

Both phases are one job, so the keyed subtasks keep their RocksDB instances from the load
into the touch epochs as they would in a long-running job (a subtask whose partition Spark
hands to another Python worker is restored there from its local snapshot on the same
executor: hard links, no download; ``restored_subtasks`` counts those, of all subtasks,
the source's included).

Printed per scale: a detail line (``state_scale_epochs``: every touch epoch's time,
uploaded bytes and restored subtasks) and the figures line

    state_scale keys=<n> median_epoch_ms=<f> checkpoint_bytes=<n>
    uploaded_bytes_per_epoch=<n> load_s=<f> ...

``median_epoch_ms``: median wall time of the touch epochs (one Spark job each, so it includes
Spark's floor for a two-stage job, printed as ``empty_two_stage_job_ms``);
``checkpoint_bytes``: ``size_bytes`` of the last checkpoint (all state it refers to);
``uploaded_bytes_per_epoch``: median ``written_bytes`` of the touch epochs' checkpoints
(SST files uploaded at that epoch; mean and max follow, since a compaction makes an epoch
upload the files it rewrote); ``load_s``: time of the load epochs; ``peak_rss_mb``: the
largest resident memory of the whole process tree (driver, Spark JVM, Python workers with
their RocksDB instances) sampled every 0.5 s, and ``peak_process_rss_mb`` that of the
largest single process. The last line is

    state_scale ratio_largest_to_smallest=<float>

(median touch-epoch time at the largest scale over that at the smallest).

``mean_epoch_ms`` and ``max_epoch_ms`` follow the median because compactions can come in
cycles. Every epoch's flush adds one small file whose keys span all key groups. With
leveled compaction (``--conf state.backend.rocksdb.compaction.style=level``, Flink's
default) those files pile up in L0 while reads slow down, then one compaction rewrites the
whole instance and the next snapshot uploads the whole state (at 10M keys over 30 touch
epochs: epochs rising to 1.3 s and one 77 MB upload). lockgate's default, universal
compaction, merges the small files among themselves and keeps epochs flat. See it with
``--scales 10000000 --touch-epochs 30``.

On a 2-core machine the default run takes 1.5-3 minutes, most of it loading 10M keys (at
roughly 150-250k keys/s: every key is a Python call and a RocksDB write); a quick run:
``--scales 10000,100000``. RocksDB state takes about 8-10 MB per 1M keys here, twice (the
local instance and checkpoint storage), under the system temp dir.

Run: ``python bench/state_scale.py [--scales 10000,1000000,10000000] [--touch-keys K]
[--touch-epochs E] [--load-records-per-split R] [--backend rocksdb|hashmap]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import keyed_count
import state_jobs

DEFAULT_SCALES = "10000,1000000,10000000"


def _scales(text: str) -> list[int]:
    try:
        scales = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a comma-separated list of integers: {text}"
        ) from None
    if not scales or min(scales) < 1:
        raise argparse.ArgumentTypeError(f"scales must be positive integers: {text}")
    return scales


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scales",
        type=_scales,
        default=_scales(DEFAULT_SCALES),
        help=f"comma-separated numbers of keys (default {DEFAULT_SCALES})",
    )
    parser.add_argument("--touch-keys", type=int, default=10_000, help="keys per touch epoch")
    parser.add_argument("--touch-epochs", type=int, default=8)
    parser.add_argument(
        "--load-records-per-split",
        type=int,
        default=1_000_000,
        help="lockgate.epoch.max-records-per-split during the load",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a lockgate/Flink configuration key for the job, e.g. "
        "state.backend.rocksdb.compaction.style=universal (repeatable)",
    )
    keyed_count.add_spark_arguments(parser)
    keyed_count.add_backend_argument(parser, default="rocksdb")
    args = parser.parse_args(argv)
    args.settings = dict(item.split("=", 1) for item in args.conf)
    return args


def _run(spark, args: argparse.Namespace, source: state_jobs.KeySpaceSource):
    with (
        tempfile.TemporaryDirectory(prefix="lockgate-bench-") as work_dir,
        tempfile.TemporaryDirectory(prefix="lockgate-chk-") as checkpoint_dir,
    ):
        env = state_jobs.state_job(
            spark,
            source,
            backend=args.backend,
            work_dir=work_dir,
            checkpoint_dir=checkpoint_dir,
            parallelism=args.parallelism,
            max_records_per_split=args.load_records_per_split,
            settings=args.settings,
        )
        started = time.perf_counter()
        result = env.execute(f"state_scale {source.keys}")
        return time.perf_counter() - started, result


def measure(spark, args: argparse.Namespace, keys: int) -> dict:
    # One touch epoch more than measured: the last epoch of a bounded job also closes the
    # operators and deletes the RocksDB instances, which no epoch of a running job does.
    source = state_jobs.KeySpaceSource(keys, args.touch_epochs + 1, min(args.touch_keys, keys))
    with state_jobs.PeakRss() as rss:
        wall_s, result = _run(spark, args, source)
    loads = source.load_epochs(args.parallelism, args.load_records_per_split)
    load, touch = result.epochs[:loads], result.epochs[loads:-1]
    checkpoints = {c.id: c for c in result.checkpoints if c.status == "COMPLETED"}
    touch_checkpoints = [checkpoints[e.checkpoint_id] for e in touch if e.checkpoint_id]
    uploaded = [c.written_bytes for c in touch_checkpoints]
    load_s = sum(e.duration_ms for e in load) / 1000
    return {
        "wall_s": wall_s,
        "load_epochs": len(load),
        "load_s": load_s,
        "load_keys_per_s": keys / load_s if load_s else 0.0,
        "epoch_ms": [e.duration_ms for e in touch],
        "records": [e.records for e in touch],
        "restored": [e.restored_subtasks for e in touch],
        "uploaded": uploaded,
        "median_epoch_ms": statistics.median(e.duration_ms for e in touch),
        "mean_epoch_ms": statistics.mean(e.duration_ms for e in touch),
        "max_epoch_ms": max(e.duration_ms for e in touch),
        "checkpoint_bytes": touch_checkpoints[-1].size_bytes if touch_checkpoints else 0,
        "checkpoint_ms": statistics.median(c.duration_ms for c in touch_checkpoints),
        "entries": touch[-1].state_entries if touch else 0,
        "rss": rss.figures(),
    }


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    spark = keyed_count.start_session(args.master)
    state_jobs.warm_up(spark, args.backend, args.parallelism)
    floor = keyed_count.epoch_floor_ms(spark.sparkContext)
    print(
        f"config scales={','.join(map(str, args.scales))} touch_keys={args.touch_keys} "
        f"touch_epochs={args.touch_epochs} load_records_per_split={args.load_records_per_split} "
        f"parallelism={args.parallelism} backend={args.backend} "
        f"empty_two_stage_job_ms={floor:.1f}",
        flush=True,
    )
    medians = {}
    for keys in args.scales:
        f = measure(spark, args, keys)
        medians[keys] = f["median_epoch_ms"]
        uploaded = f["uploaded"] or [0]
        print(
            f"state_scale_epochs keys={keys} epoch_ms={[round(ms) for ms in f['epoch_ms']]} "
            f"records={f['records']} uploaded_bytes={uploaded} "
            f"restored_subtasks={f['restored']}"
        )
        print(
            f"state_scale keys={keys} median_epoch_ms={f['median_epoch_ms']:.1f} "
            f"checkpoint_bytes={f['checkpoint_bytes']} "
            f"uploaded_bytes_per_epoch={int(statistics.median(uploaded))} "
            f"load_s={f['load_s']:.1f} mean_epoch_ms={f['mean_epoch_ms']:.1f} "
            f"max_epoch_ms={f['max_epoch_ms']:.1f} "
            f"mean_uploaded_bytes_per_epoch={int(statistics.mean(uploaded))} "
            f"max_uploaded_bytes_per_epoch={max(uploaded)} "
            f"median_checkpoint_ms={f['checkpoint_ms']:.1f} state_entries={f['entries']} "
            f"load_epochs={f['load_epochs']} load_keys_per_s={f['load_keys_per_s']:.0f} "
            f"wall_s={f['wall_s']:.1f} {f['rss']}",
            flush=True,
        )
    smallest, largest = min(medians), max(medians)
    print(f"state_scale ratio_largest_to_smallest={medians[largest] / medians[smallest]:.2f}")
    spark.stop()


if __name__ == "__main__":
    main()
