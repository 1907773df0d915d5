"""Keyed count on a two-worker Spark standalone cluster vs local[2], and 10M keys per backend.

The script starts a Spark standalone cluster itself (``StandaloneCluster`` of
``tests/integration/cluster/standalone.py``, from PySpark's own distribution): a master on
127.0.0.1 and two workers of one core and 1 GB each, on Spark hosts 127.0.0.1 and 127.0.0.2,
which Spark and lockgate take for two machines (placement acts: see "Where a subtask lives"
in docs/concepts/where-a-subtask-lives.md). It stops the cluster at the end, after an error
or Ctrl-C too. Every job runs in a driver process of its own (one SparkContext per process),
which waits until an executor on each host has registered; on the cluster the executors'
Python is this interpreter, with lockgate's source tree on ``spark.executorEnv.PYTHONPATH``,
and the benchmark's classes travel by value. Work and checkpoint directories are on this
machine's disk, which every executor shares.

1. **Keyed count**: keyed_count.py's job (``from_collection -> key_by -> CountAndSum ->
   DiscardingSink``, ``--events`` events over ``--keys`` keys, parallelism 2, the source at
   ``--source-parallelism`` 2, ``--backend``, no checkpoints), on the cluster and on
   ``local[2]``: a warm-up run, then ``--runs`` timed runs. One line per system:

       cluster hashmap events_per_s=... epochs=... restored_fraction=...
       restored_fraction_after_first=... epoch_ms_p50=... epoch_ms_p90=...

   ``events_per_s``: keyed_count's record-window rate (events over the time from the first
   record a user function saw to the last one the keyed function saw) of the run with the
   median window; ``epochs``: that run's epochs. A *subtask-epoch* is one subtask's part in
   one epoch (every task runs every epoch: here 2 source subtasks and 2 keyed subtasks,
   the sink chained to them). ``restored_fraction`` = restored subtask-epochs / all
   subtask-epochs, over every timed run, where *restored* means the subtask was rebuilt
   from the previous epoch's state files instead of found live in its host
   (``EpochStats.restored_subtasks``). The first epoch of a run builds every subtask, which
   counts as restored, so ``restored_fraction_after_first`` leaves each run's first epoch
   out: that is the share placement should keep at 0. ``epoch_ms_p50``/``_p90``:
   nearest-rank percentiles of the timed runs' epoch times (``EpochStats.duration_ms``).
   Then: ``restored_subtask_epochs`` (the fraction's count), ``execute_events_per_s``
   (events over the wall time of ``env.execute()``) and ``empty_two_stage_job_ms``
   (keyed_count's median of an empty two-stage Spark job in the same session: Spark's
   floor of an epoch there).

2. **Large state** (unless ``--skip-big``): one job per backend of ``--big-backends``
   (hashmap, rocksdb) on the cluster, bench/state_jobs.py's job: keyed_count's
   ``CountAndSum`` over ``KeySpaceSource``, parallelism 2, a checkpoint after every epoch.
   It first writes ``--big-keys`` distinct keys (default 10M) of ValueState, one record per
   key, in epochs of ``--load-records-per-split`` records per source split (default 2.5M:
   two load epochs for 10M keys), then runs ``--touch-epochs`` epochs (default 8) of
   ``--touch-keys`` random keys each (default 10k). One line per backend:

       cluster_state backend=... keys=... epochs=... load_epochs=... load_s=...
       restored_per_epoch=[...] steady_restores=<n> state_bytes=... state_entries=...
       checkpoint_bytes=... touch_epoch_ms_p50=... epoch_ms=[...]

   ``restored_per_epoch``: ``restored_subtasks`` of every epoch (4 subtasks per epoch);
   ``steady_restores``: their sum after the first two epochs (the first builds every
   subtask; the second may still move one while placement has only seen one epoch), which
   must be 0: the script ends with exit status 1 otherwise. ``state_bytes``: the size of
   the state files the last epoch's state refers to (``EpochStats.state_bytes``);
   ``state_entries``: its entries (RocksDB's own estimate on rocksdb);
   ``checkpoint_bytes``: the last checkpoint's size. 10k random keys reach every key group,
   and the heap backend writes each changed key group whole, so its touch epochs write
   about the whole state; RocksDB uploads only new SST files.

About 3-4 minutes on a 2-core machine at the defaults, most of it the two 10M-key jobs; a
quick run: ``--events 20000 --max-records-per-split 2500 --runs 1 --big-keys 20000``.

Run: ``python bench/cluster.py [--events N] [--keys K] [--backend hashmap|rocksdb]
[--runs R] [--big-keys N] [--big-backends hashmap,rocksdb] [--load-records-per-split R]
[--touch-epochs E] [--touch-keys K] [--skip-big] [--skip-local]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
CLUSTER_TESTS = BENCH.parent / "tests" / "integration" / "cluster"
# StandaloneCluster and its SPARK_HOME helpers live with the cluster tests (not test modules)
sys.path[:0] = [str(CLUSTER_TESTS), str(CLUSTER_TESTS.parent)]

import keyed_count  # noqa: E402
import state_jobs  # noqa: E402
from keyed_events import make_events, read_window  # noqa: E402
from pyspark import cloudpickle  # noqa: E402
from spark_distribution import clean_env  # noqa: E402
from standalone import StandaloneCluster  # noqa: E402

import lockgate  # noqa: E402
from lockgate.runtime.jobmaster.executors import list_executors  # noqa: E402
from lockgate.runtime.jobmaster.spark_session import get_or_create_session  # noqa: E402

# The executors import lockgate from its source tree, but no bench module: ship the job's
# classes (keyed_count's, state_jobs') by value.
cloudpickle.register_pickle_by_value(keyed_count)
cloudpickle.register_pickle_by_value(state_jobs)

SRC = str(Path(lockgate.__file__).resolve().parents[1])
# Two Spark hosts (two machines, as far as Spark and lockgate can tell): name -> host
WORKERS = {"worker-1": "127.0.0.1", "worker-2": "127.0.0.2"}
EXECUTOR_MEMORY = "1g"  # the whole of a worker's (StandaloneCluster: 1g); RocksDB and the
# heap backend's dicts live in Python processes, outside it
EXECUTORS_TIMEOUT_S = 90
DRIVER_TIMEOUT_S = 1800
STEADY_AFTER = 2  # epochs: the first builds every subtask, the second may still move some


# Driver processes ---------------------------------------------------------------------------


def _session(spec: dict):
    settings = {
        "spark.master": spec["master"],
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": "2g",
    }
    if not spec["master"].startswith("local"):
        settings["spark.executor.memory"] = EXECUTOR_MEMORY
        settings["spark.executor.cores"] = "1"
        settings["spark.executorEnv.PYTHONPATH"] = SRC
    spark = get_or_create_session(settings)
    if not spec["master"].startswith("local"):
        _wait_for_hosts(spark.sparkContext, set(WORKERS.values()))
    return spark


def _wait_for_hosts(sc, hosts: set[str]) -> None:
    """Until an executor on each of ``hosts`` has registered: a job started before would
    put every subtask of its first epoch on the hosts there are."""
    deadline = time.monotonic() + EXECUTORS_TIMEOUT_S
    while {e.host for e in list_executors(sc)} < hosts:
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"no executors on all of {sorted(hosts)} after {EXECUTORS_TIMEOUT_S} s"
            )
        time.sleep(0.2)


def _epochs(result) -> list[dict]:
    return [
        {
            "epoch": e.epoch,
            "records": e.records,
            "ms": e.duration_ms,
            "restored": e.restored_subtasks,
            "state_bytes": e.state_bytes,
            "state_entries": e.state_entries,
        }
        for e in result.epochs
    ]


def _keyed_count_driver(spec: dict, spark) -> dict:
    args = argparse.Namespace(**spec["job"])
    events = make_events(args.events, args.keys)
    runs = []
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-", dir=spec["tmp"]) as work_dir:
        # Warm up: start the task managers and Python workers, import lockgate in them.
        warm_args = argparse.Namespace(**{**vars(args), "max_records_per_split": 1000})
        keyed_count.run_job(spark, warm_args, events[:2000], work_dir)
        floor_ms = keyed_count.epoch_floor_ms(spark.sparkContext)
        for _ in range(max(1, spec["runs"])):
            with tempfile.TemporaryDirectory(prefix="lockgate-marks-", dir=spec["tmp"]) as marks:
                wall_s, result = keyed_count.run_job(spark, args, events, work_dir, marks)
                window = read_window(marks)
            keyed_count.check_window(window, len(events), spec["name"])
            runs.append({"wall_s": wall_s, "window_s": window.seconds, "epochs": _epochs(result)})
    return {"runs": runs, "empty_two_stage_job_ms": floor_ms}


def _state_driver(spec: dict, spark) -> dict:
    job = spec["job"]
    state_jobs.warm_up(spark, job["backend"], job["parallelism"])
    source = state_jobs.KeySpaceSource(job["keys"], job["touch_epochs"], job["touch_keys"])
    with (
        tempfile.TemporaryDirectory(prefix="lockgate-bench-", dir=spec["tmp"]) as work_dir,
        tempfile.TemporaryDirectory(prefix="lockgate-chk-", dir=spec["tmp"]) as checkpoint_dir,
    ):
        env = state_jobs.state_job(
            spark,
            source,
            backend=job["backend"],
            work_dir=work_dir,
            checkpoint_dir=checkpoint_dir,
            parallelism=job["parallelism"],
            max_records_per_split=job["load_records_per_split"],
        )
        started = time.perf_counter()
        result = env.execute(f"cluster state {job['backend']}")
        wall_s = time.perf_counter() - started
    completed = [c for c in result.checkpoints if c.status == "COMPLETED"]
    return {
        "wall_s": wall_s,
        "epochs": _epochs(result),
        "load_epochs": source.load_epochs(job["parallelism"], job["load_records_per_split"]),
        "checkpoint_bytes": completed[-1].size_bytes if completed else 0,
    }


def driver(spec: dict) -> None:
    """One job in this process: print its figures as a ``RESULT`` JSON line."""
    spark = _session(spec)
    try:
        run = _keyed_count_driver if spec["kind"] == "keyed_count" else _state_driver
        figures = run(spec, spark)
    finally:
        spark.stop()
    print("RESULT " + json.dumps(figures), flush=True)


# The cluster and the drivers, from the main process ------------------------------------------


class Drivers:
    """Driver processes, each in a process group of its own (killed on Ctrl-C or error)."""

    def __init__(self, base: Path, cluster: StandaloneCluster):
        self.base = base
        self.cluster = cluster
        self.running: subprocess.Popen | None = None

    def run(self, spec: dict) -> dict:
        log = self.base / f"driver-{spec['name'].replace(' ', '-')}.log"
        env = clean_env(
            self.cluster.spark_home,
            PYSPARK_PYTHON=sys.executable,
            PYTHONPATH=SRC,
            SPARK_CONF_DIR=str(self.cluster.spark_home / "conf"),
        )
        with open(log, "wb") as out:
            self.running = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "--driver", json.dumps(spec)],
                cwd=self.base,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                code = self.running.wait(timeout=DRIVER_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                code = None
            finally:
                self.kill()
        text = log.read_text(errors="replace")
        for line in text.splitlines():
            if line.startswith("RESULT "):
                return json.loads(line[len("RESULT ") :])
        tail = "\n".join(text.splitlines()[-40:])
        raise RuntimeError(f"{spec['name']}: driver exited with {code}, no result:\n{tail}")

    def kill(self) -> None:
        process, self.running = self.running, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=30)


def start_cluster(base: Path) -> StandaloneCluster:
    cluster = StandaloneCluster(base)
    started = time.monotonic()
    cluster.start(WORKERS)
    print(
        f"standalone cluster up in {time.monotonic() - started:.1f} s: {cluster.url}, workers "
        + ", ".join(f"{name} on {host} (1 core)" for name, host in WORKERS.items()),
        flush=True,
    )
    return cluster


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile; nan of nothing."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def keyed_count_line(system: str, backend: str, events: int, figures: dict, subtasks: int) -> str:
    runs = figures["runs"]
    for run in runs:
        first = run["epochs"][0]["restored"] if run["epochs"] else None
        if first != subtasks:
            print(
                f"warning: {system}: the first epoch restored {first} subtasks, not all "
                f"{subtasks}: the subtask count per epoch is not what this script assumes"
            )
    median = sorted(runs, key=lambda run: run["window_s"])[(len(runs) - 1) // 2]
    epochs = [e for run in runs for e in run["epochs"]]
    later = [e for run in runs for e in run["epochs"][1:]]
    restored = sum(e["restored"] for e in epochs)
    restored_later = sum(e["restored"] for e in later)
    ms = [e["ms"] for e in epochs]
    return (
        f"{system} {backend} events_per_s={events / median['window_s']:.0f} "
        f"epochs={len(median['epochs'])} "
        f"restored_fraction={restored / (len(epochs) * subtasks):.3f} "
        f"restored_fraction_after_first={_fraction(restored_later, len(later) * subtasks)} "
        f"epoch_ms_p50={percentile(ms, 0.5):.1f} epoch_ms_p90={percentile(ms, 0.9):.1f} "
        f"restored_subtask_epochs={restored}/{len(epochs) * subtasks} "
        f"execute_events_per_s={events / median['wall_s']:.0f} runs={len(runs)} "
        f"empty_two_stage_job_ms={figures['empty_two_stage_job_ms']:.1f}"
    )


def _fraction(part: int, whole: int) -> str:
    return f"{part / whole:.3f}" if whole else "nan"


def state_line(backend: str, keys: int, figures: dict) -> tuple[str, int]:
    epochs = figures["epochs"]
    loads = figures["load_epochs"]
    restored = [e["restored"] for e in epochs]
    steady = sum(restored[STEADY_AFTER:])
    touch = epochs[loads:]
    last = epochs[-1] if epochs else {"state_bytes": 0, "state_entries": 0}
    line = (
        f"cluster_state backend={backend} keys={keys} epochs={len(epochs)} load_epochs={loads} "
        f"load_s={sum(e['ms'] for e in epochs[:loads]) / 1000:.1f} "
        f"restored_per_epoch={restored} steady_restores={steady} "
        f"state_bytes={last['state_bytes']} state_entries={last['state_entries']} "
        f"checkpoint_bytes={figures['checkpoint_bytes']} "
        f"touch_epoch_ms_p50={percentile([e['ms'] for e in touch], 0.5):.1f} "
        f"epoch_ms={[round(e['ms']) for e in epochs]} wall_s={figures['wall_s']:.1f}"
    )
    return line, steady


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--driver", help=argparse.SUPPRESS)  # a driver process's spec
    keyed_count.add_job_arguments(parser)
    keyed_count.add_backend_argument(parser)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per system (default 3)")
    parser.add_argument("--big-keys", type=int, default=10_000_000, help="keys of the state runs")
    parser.add_argument(
        "--big-backends",
        default=",".join(keyed_count.BACKENDS),
        help="comma-separated backends of the state runs (default hashmap,rocksdb)",
    )
    parser.add_argument(
        "--load-records-per-split",
        type=int,
        default=2_500_000,
        help="records per source split and epoch while the state runs load their keys",
    )
    parser.add_argument("--touch-epochs", type=int, default=8)
    parser.add_argument("--touch-keys", type=int, default=10_000)
    parser.add_argument("--skip-big", action="store_true", help="no state runs")
    parser.add_argument("--skip-local", action="store_true", help="no local[2] run")
    args = parser.parse_args(argv)
    if args.master != "local[2]":
        parser.error("--master: this script runs its own cluster and local[2]")
    for backend in args.big_backends.split(","):
        if backend not in keyed_count.BACKENDS:
            parser.error(f"--big-backends: unknown backend {backend!r}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.driver:
        driver(json.loads(args.driver))
        return
    started = time.monotonic()
    print(f"cores={os.cpu_count()} python={sys.version.split()[0]}", flush=True)
    job = {
        key: getattr(args, key)
        for key in ("events", "keys", "parallelism", "source_parallelism", "backend")
    }
    job["max_records_per_split"] = args.max_records_per_split
    subtasks = args.parallelism + args.source_parallelism
    steady_violations = 0
    with tempfile.TemporaryDirectory(prefix="lockgate-cluster-bench-") as tmp:
        base = Path(tmp)
        cluster = start_cluster(base)
        drivers = Drivers(base, cluster)
        try:
            print(
                f"config events={args.events} keys={args.keys} parallelism={args.parallelism} "
                f"source_parallelism={args.source_parallelism} "
                f"max_records_per_split={args.max_records_per_split} runs={args.runs} "
                f"subtasks_per_epoch={subtasks}",
                flush=True,
            )
            print(
                "restored_fraction = restored subtask-epochs / all subtask-epochs over the timed "
                "runs (a subtask-epoch: one subtask's part in one epoch; restored: rebuilt from "
                "the previous epoch's state files, not found live in its host); "
                "restored_fraction_after_first: the same without each run's first epoch, "
                "which builds every subtask",
                flush=True,
            )
            systems = [("cluster", cluster.url)]
            if not args.skip_local:
                systems.append(("local[2]", "local[2]"))
            for system, master in systems:
                spec = {
                    "kind": "keyed_count",
                    "name": f"keyed-count {system}",
                    "master": master,
                    "tmp": tmp,
                    "runs": args.runs,
                    "job": job,
                }
                figures = drivers.run(spec)
                line = keyed_count_line(system, args.backend, args.events, figures, subtasks)
                print(line, flush=True)
            if not args.skip_big:
                for backend in args.big_backends.split(","):
                    spec = {
                        "kind": "state",
                        "name": f"state {backend}",
                        "master": cluster.url,
                        "tmp": tmp,
                        "job": {
                            "backend": backend,
                            "keys": args.big_keys,
                            "touch_epochs": args.touch_epochs,
                            "touch_keys": min(args.touch_keys, args.big_keys),
                            "parallelism": args.parallelism,
                            "load_records_per_split": args.load_records_per_split,
                        },
                    }
                    line, steady = state_line(backend, args.big_keys, drivers.run(spec))
                    print(line, flush=True)
                    steady_violations += steady
        finally:
            drivers.kill()
            cluster.stop()
    print(f"cluster wall_s={time.monotonic() - started:.1f}", flush=True)
    if steady_violations:
        print(f"steady state restored {steady_violations} subtasks: expected none")
        sys.exit(1)


if __name__ == "__main__":
    main()
