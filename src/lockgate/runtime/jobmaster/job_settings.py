"""A job's configuration, resolved once before its first Spark job.

``JobSettings.resolve`` reads the validated configuration keys, applies Flink's defaults
(checkpoint storage from the directory, restart strategy from checkpointing) and checks
what can be checked on the driver, so that bad configuration fails before the job starts.
The runtime then sees only typed values, never the configuration dictionary.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from lockgate.checkpoint.coordinator import CheckpointSettings
from lockgate.checkpoint.signing_key import CheckpointSigningKey, SigningKeyError
from lockgate.common import config_options as options
from lockgate.core.fs.private_directory import user_directory
from lockgate.core.fs.storage import is_writable
from lockgate.graph.job_graph import JobGraph
from lockgate.runtime.jobmaster.restart import RestartStrategy, restart_strategy
from lockgate.runtime.jobmaster.spark_session import is_local_master
from lockgate.runtime.messages.task_deployment import BatchBounds
from lockgate.state.backend_settings import KeyedStateSettings
from lockgate.state.manifests import ROCKSDB
from lockgate.state.rocksdb import RocksDBSettings

INJECTION_POINTS = (
    "after-snapshot-before-ack",
    "metadata-write",
    "after-metadata-before-commit",
    "mid-commit",
    "during-restore",
)
DRIVER_KILL_POINTS = ("metadata-write", "after-metadata-before-commit", "mid-commit")


@dataclass(frozen=True)
class JobSettings:
    job_id: str
    job_name: str
    local_spark: bool  # the executors share this machine's disks
    work_dir: str  # the job's own directory for epoch control files
    checkpoint: CheckpointSettings
    checkpoint_dir: str | None  # <checkpoint-dir>/<job-id>; None: checkpoints in memory
    checkpoint_history: int
    epoch_history: int
    max_records_per_split: int
    epoch_target_s: float | None  # None: epochs sized by records only
    idle_poll_s: float
    progress: bool
    restart: RestartStrategy  # counts this job's failures: one per job execution
    recovery_path: str | None
    ignore_unclaimed: bool
    savepoint_dir: str | None  # where savepoints go unless the request names a directory
    injections: frozenset[tuple[str, int]]  # (point, epoch or checkpoint id): tests only
    kills: frozenset[tuple[str, int]]  # (driver point, checkpoint id): tests only
    keyed_state: KeyedStateSettings
    batch_bounds: BatchBounds
    signing_key: CheckpointSigningKey | None  # of checkpoints and savepoints (driver only)
    configuration: Mapping[str, str]  # what the settings were resolved from
    earlier_runs: tuple[str, ...]  # ids of killed runs of this job (the Dispatcher's restarts)

    @staticmethod
    def resolve(
        config: Mapping[str, str],
        job_name: str,
        master: str,
        job_id: str | None = None,
        earlier_runs: tuple[str, ...] = (),
    ) -> JobSettings:
        """Settings for one execution of a job on Spark master ``master`` (with a new id
        unless ``job_id`` names it: 32 lowercase hex digits, as Flink's), whose killed
        ``earlier_runs`` (their ids) may have left staged output."""
        options.validate(config)
        if job_id is None:
            job_id = uuid.uuid4().hex
        for given in (job_id, *earlier_runs):
            if len(given) != 32 or given.strip("0123456789abcdef"):
                raise ValueError(f"job id {given!r} is not 32 lowercase hex digits")
        local = is_local_master(master)
        checkpoint = _checkpoint_settings(config)
        keyed_state = _keyed_state(config, job_id)
        if keyed_state.backend == ROCKSDB and local:
            _check_local_dirs(keyed_state)
        checkpoint_dir = _checkpoint_dir(config, checkpoint)
        return JobSettings(
            job_id=job_id,
            job_name=job_name,
            local_spark=local,
            work_dir=f"{_work_dir(config, master).rstrip('/')}/{job_id}",
            checkpoint=checkpoint,
            checkpoint_dir=f"{checkpoint_dir.rstrip('/')}/{job_id}" if checkpoint_dir else None,
            checkpoint_history=options.CHECKPOINT_HISTORY.read(config),
            epoch_history=options.EPOCH_HISTORY.read(config),
            max_records_per_split=options.EPOCH_MAX_RECORDS_PER_SPLIT.read(config),
            epoch_target_s=(options.EPOCH_TARGET_DURATION.read(config) / 1000) or None,
            idle_poll_s=options.CONTINUOUS_IDLE_POLL.read(config) / 1000,
            progress=options.PROGRESS.read(config),
            restart=restart_strategy(config, checkpoint.enabled),
            recovery_path=options.STATE_RECOVERY_PATH.read(config) or None,
            ignore_unclaimed=options.IGNORE_UNCLAIMED_STATE.read(config),
            savepoint_dir=options.SAVEPOINT_DIR.read(config) or None,
            injections=_injections(config, options.INJECT_FAILURE, INJECTION_POINTS),
            kills=_injections(config, options.KILL_DRIVER, DRIVER_KILL_POINTS),
            keyed_state=keyed_state,
            batch_bounds=BatchBounds(
                options.SHUFFLE_BATCH_MAX_RECORDS.read(config),
                options.SHUFFLE_BATCH_MAX_SIZE.read(config),
                options.RECORD_MAX_SIZE.read(config),
            ),
            signing_key=_signing_key(config),
            configuration=dict(config),
            earlier_runs=earlier_runs,
        )


def _work_dir(config: Mapping[str, str], master: str) -> str:
    work_dir = options.WORK_DIR.read(config)
    if work_dir:
        return work_dir
    if not is_local_master(master):
        raise options.ConfigurationError(
            f"configuration key '{options.WORK_DIR.key}' must be set when Spark runs on a "
            f"cluster (master {master}): allowed values are {options.WORK_DIR.allowed}"
        )
    try:
        return str(user_directory(options.WORK_DIR.key) / "work")
    except PermissionError as exc:
        raise options.ConfigurationError(str(exc)) from None


def _signing_key(config: Mapping[str, str]) -> CheckpointSigningKey | None:
    path = options.CHECKPOINT_SIGNING_KEY_FILE.read(config)
    if not path:
        return None
    try:
        return CheckpointSigningKey.load(path)
    except SigningKeyError as exc:
        raise options.ConfigurationError(
            f"configuration key '{options.CHECKPOINT_SIGNING_KEY_FILE.key}': {exc}"
        ) from None


def _checkpoint_settings(config: Mapping[str, str]) -> CheckpointSettings:
    return CheckpointSettings(
        interval_ms=options.CHECKPOINT_INTERVAL.read(config),
        min_pause_ms=options.MIN_PAUSE.read(config),
        timeout_ms=options.CHECKPOINT_TIMEOUT.read(config),
        tolerable_failures=options.TOLERABLE_FAILURES.read(config),
        num_retained=options.NUM_RETAINED.read(config),
        retention=options.EXTERNALIZED_RETENTION.read(config),
        exactly_once=options.CHECKPOINTING_MODE.read(config) == "EXACTLY_ONCE",
    )


def _checkpoint_dir(config: Mapping[str, str], checkpoint: CheckpointSettings) -> str | None:
    """Where checkpoints go: a directory (FILESYSTEM storage), or None (driver memory)."""
    directory = options.CHECKPOINT_DIR.read(config)
    kind = options.CHECKPOINT_STORAGE.read(config) or ("FILESYSTEM" if directory else "")
    if not checkpoint.enabled or kind != "FILESYSTEM":
        return None
    if not directory:
        raise options.ConfigurationError(
            f"checkpoint storage 'filesystem' needs '{options.CHECKPOINT_DIR.key}': "
            f"allowed values are {options.CHECKPOINT_DIR.allowed}"
        )
    return directory


def _keyed_state(config: Mapping[str, str], job_id: str) -> KeyedStateSettings:
    local = options.ROCKSDB_LOCAL_DIR.read(config)
    return KeyedStateSettings(
        backend=options.STATE_BACKEND.read(config).lower(),
        job_id=job_id,
        incremental=options.INCREMENTAL.read(config),
        local_dirs=tuple(p.strip().removeprefix("file://") for p in local.split(",") if p.strip()),
        rocksdb=RocksDBSettings(
            write_buffer_bytes=options.ROCKSDB_WRITE_BUFFER.read(config),
            block_cache_bytes=options.ROCKSDB_BLOCK_CACHE.read(config),
            cache_entries=options.STATE_CACHE_ENTRIES.read(config),
            compaction_style=options.ROCKSDB_COMPACTION_STYLE.read(config),
        ),
    )


def _check_local_dirs(keyed_state: KeyedStateSettings) -> None:
    """With local Spark the executors' disk is this machine's: RocksDB must be able to
    write where it was told to (on a cluster, a task that cannot open its instance fails
    naming the path)."""
    for directory in keyed_state.local_dirs:
        if not is_writable(directory):
            raise options.ConfigurationError(
                f"RocksDB local directory {directory} (configuration key "
                f"'{options.ROCKSDB_LOCAL_DIR.key}') is not writable"
            )


def _injections(
    config: Mapping[str, str], option: options.ConfigOption[str], points: tuple[str, ...]
) -> frozenset[tuple[str, int]]:
    spec = option.read(config)
    injections = set()
    for item in filter(None, (part.strip() for part in spec.split(","))):
        point, _, number = item.partition("@")
        if point not in points or not number.isdigit():
            raise options.ConfigurationError(
                f"invalid value {spec!r} for configuration key '{option.key}': "
                f"allowed values are {option.allowed}"
            )
        injections.add((point, int(number)))
    return frozenset(injections)


def check_exactly_once_sinks(job: JobGraph, settings: JobSettings) -> None:
    """An exactly-once sink commits only when checkpoints complete in EXACTLY_ONCE mode:
    without them it would never commit, or commit what a failover writes again. And two
    sinks may not commit through one exclusive resource (a transactional id prefix)."""
    claimed: dict[str, str] = {}
    for vertex in job.vertices:
        for node in vertex.nodes:
            sink = f"'{node.name}' (uid '{node.uid}')"
            exclusive = getattr(getattr(node.operator, "committer", None), "exclusive", None)
            if exclusive is not None:
                if exclusive in claimed:
                    raise options.ConfigurationError(
                        f"sinks {claimed[exclusive]} and {sink} both commit with {exclusive}: "
                        "give each its own"
                    )
                claimed[exclusive] = sink
            if settings.checkpoint.commits_on_checkpoint:
                continue
            if getattr(node.operator, "exactly_once", False):
                raise options.ConfigurationError(
                    f"sink {sink} writes exactly once, which needs checkpointing in "
                    "EXACTLY_ONCE mode: call env.enable_checkpointing(ms) (with "
                    "CheckpointingMode.EXACTLY_ONCE, the default) or use its at-least-once sink"
                )
