"""What the JobMaster hands a Spark task for one epoch (Flink: the task deployment descriptor
and the task's restore), as typed JSON records.

The descriptor is the same for every subtask of a task and travels with the task's
function. A source subtask's ``SubtaskRestore`` travels as its partition's data; the
restores of a task after a shuffle travel together with its function (see ``EpochTask``);
either way a task decodes only its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lockgate.common.records import RecordFormatError, envelope, field, open_envelope
from lockgate.runtime.messages.acknowledgement import watermarks_field
from lockgate.state.backend_settings import KeyedStateSettings
from lockgate.state.manifests import KeyedStateManifest, manifest_from_json
from lockgate.state.operator_state_handle import OperatorStatePart
from lockgate.state.rocksdb import RocksDBSettings

DESCRIPTOR_FORMAT = "lockgate-task-deployment"
RESTORE_FORMAT = "lockgate-subtask-restore"
DESCRIPTOR_VERSION = 4
RESTORE_VERSION = 3


def _load(data: bytes, where: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        raise RecordFormatError(f"{where} is not JSON ({len(data)} bytes)") from None


def _keyed_state_to_json(settings: KeyedStateSettings) -> dict[str, Any]:
    rocksdb = settings.rocksdb
    return {
        "backend": settings.backend,
        "job_id": settings.job_id,
        "incremental": settings.incremental,
        "local_dirs": list(settings.local_dirs),
        "rocksdb": {
            "write_buffer_bytes": rocksdb.write_buffer_bytes,
            "block_cache_bytes": rocksdb.block_cache_bytes,
            "cache_entries": rocksdb.cache_entries,
            "background_jobs": rocksdb.background_jobs,
            "compaction_style": rocksdb.compaction_style,
        },
    }


def _keyed_state_from_json(raw: Any, where: str) -> KeyedStateSettings:
    where = f"{where}, keyed state settings"
    if not isinstance(raw, dict):
        raise RecordFormatError(f"{where} are not an object")
    rocksdb = field(raw, "rocksdb", dict, where)
    local_dirs = field(raw, "local_dirs", list, where)
    if not all(isinstance(d, str) for d in local_dirs):
        raise RecordFormatError(f"{where}: field 'local_dirs' must list directories")
    return KeyedStateSettings(
        backend=field(raw, "backend", str, where),
        job_id=field(raw, "job_id", str, where),
        incremental=field(raw, "incremental", bool, where),
        local_dirs=tuple(local_dirs),
        rocksdb=RocksDBSettings(
            write_buffer_bytes=field(rocksdb, "write_buffer_bytes", int, where),
            block_cache_bytes=field(rocksdb, "block_cache_bytes", int, where),
            cache_entries=field(rocksdb, "cache_entries", int, where),
            background_jobs=field(rocksdb, "background_jobs", int, where),
            compaction_style=field(rocksdb, "compaction_style", str, where),
        ),
    )


def run_id(job_id: str, generation: int) -> str:
    """A run of a job: its subtasks from one restore (or the start) to the next."""
    return f"{job_id}#{generation}"


@dataclass(frozen=True)
class BatchBounds:
    """Most records, and most bytes of pickled records, in one batch; a record larger than
    ``bytes`` travels alone (a record cannot be split)."""

    records: int
    bytes: int


@dataclass(frozen=True)
class TaskDeploymentDescriptor:
    """One task's instructions for one epoch, the same for all its subtasks."""

    vertex: int
    source: bool  # the task reads a source (its partitions carry split assignments)
    run: str  # job id and restart generation (run_id): hosted subtasks belong to one run
    epoch: int
    end_of_input: bool  # every source is read to its end after this epoch
    source_ends: bool  # this source task's input is read to its end after this epoch
    savepoint_url: str | None  # the epoch ends with a savepoint: its directory
    tag: str  # names this epoch's state files; unique per run and try
    checkpoint: bool  # this epoch ends with a checkpoint
    ack_dir: str  # relative to the work directory
    committed_epoch: int  # sinks may forget what checkpoints up to this epoch committed
    commit_on_checkpoint: bool  # exactly-once sinks wait for checkpoints to publish
    reports_attempt: bool  # the task's output reaches the driver (a result stage)
    inject_failure: bool  # fail after the snapshot, before the ack (tests)
    work_url: str  # acknowledgements go here
    state_url: str  # keyed-state files go here
    staging_url: str  # staging records (files created outside the job's directories)
    keyed_state: KeyedStateSettings
    batch_bounds: BatchBounds  # of the shuffle batches the subtask's channel writers send

    def encode(self) -> bytes:
        body = {
            "vertex": self.vertex,
            "source": self.source,
            "run": self.run,
            "epoch": self.epoch,
            "end_of_input": self.end_of_input,
            "source_ends": self.source_ends,
            "savepoint_url": self.savepoint_url,
            "tag": self.tag,
            "checkpoint": self.checkpoint,
            "ack_dir": self.ack_dir,
            "committed_epoch": self.committed_epoch,
            "commit_on_checkpoint": self.commit_on_checkpoint,
            "reports_attempt": self.reports_attempt,
            "inject_failure": self.inject_failure,
            "work_url": self.work_url,
            "state_url": self.state_url,
            "staging_url": self.staging_url,
            "keyed_state": _keyed_state_to_json(self.keyed_state),
            "batch_records": self.batch_bounds.records,
            "batch_bytes": self.batch_bounds.bytes,
        }
        return json.dumps(envelope(DESCRIPTOR_FORMAT, DESCRIPTOR_VERSION, body)).encode()

    @staticmethod
    def decode(data: bytes) -> TaskDeploymentDescriptor:
        where = "the task deployment descriptor"
        body = open_envelope(_load(data, where), DESCRIPTOR_FORMAT, DESCRIPTOR_VERSION, where)
        where = f"{where} of task {body.get('vertex')!r} epoch {body.get('epoch')!r}"
        return TaskDeploymentDescriptor(
            vertex=field(body, "vertex", int, where),
            source=field(body, "source", bool, where),
            run=field(body, "run", str, where),
            epoch=field(body, "epoch", int, where),
            end_of_input=field(body, "end_of_input", bool, where),
            source_ends=field(body, "source_ends", bool, where),
            savepoint_url=field(body, "savepoint_url", (str, type(None)), where),
            tag=field(body, "tag", str, where),
            checkpoint=field(body, "checkpoint", bool, where),
            ack_dir=field(body, "ack_dir", str, where),
            committed_epoch=field(body, "committed_epoch", int, where),
            commit_on_checkpoint=field(body, "commit_on_checkpoint", bool, where),
            reports_attempt=field(body, "reports_attempt", bool, where),
            inject_failure=field(body, "inject_failure", bool, where),
            work_url=field(body, "work_url", str, where),
            state_url=field(body, "state_url", str, where),
            staging_url=field(body, "staging_url", str, where),
            keyed_state=_keyed_state_from_json(body.get("keyed_state"), where),
            batch_bounds=BatchBounds(
                field(body, "batch_records", int, where), field(body, "batch_bytes", int, where)
            ),
        )


@dataclass(frozen=True)
class SubtaskRestore:
    """What one subtask needs to rebuild itself as of epoch n-1 if its worker lacks it."""

    vertex: int
    subtask: int
    run: str
    attempt: str | None  # accepted for epoch n-1: the one version a worker may reuse
    keyed: KeyedStateManifest | None  # keyed subtasks
    operators: dict[str, Any]  # operator uid -> operator state
    watermarks: dict[str, int]  # operator uid -> watermark
    claimed: bool  # false: the keyed files belong to another job's checkpoint (NO_CLAIM)
    managed: dict[str, list[OperatorStatePart]]  # operator uid -> its operator state
    restored_epoch: int | None  # the epoch the state is of (None: the start of the job)

    def encode(self) -> bytes:
        body = {
            "vertex": self.vertex,
            "subtask": self.subtask,
            "run": self.run,
            "attempt": self.attempt,
            "keyed": self.keyed.to_json() if self.keyed is not None else None,
            "operators": self.operators,
            "watermarks": self.watermarks,
            "claimed": self.claimed,
            "managed": {
                uid: [part.to_json() for part in parts] for uid, parts in self.managed.items()
            },
            "restored_epoch": self.restored_epoch,
        }
        document = envelope(RESTORE_FORMAT, RESTORE_VERSION, body)
        return json.dumps(document, separators=(",", ":")).encode()

    @staticmethod
    def decode(data: bytes, vertex: int, subtask: int, run: str) -> SubtaskRestore:
        """The restore of subtask ``subtask`` of task ``vertex`` in run ``run``; another
        one (a partition routed wrongly, a stale run) is an error."""
        where = f"the restore of subtask {subtask} of task {vertex} (run {run})"
        body = open_envelope(_load(data, where), RESTORE_FORMAT, RESTORE_VERSION, where)
        keyed: dict[str, Any] | None = field(body, "keyed", (dict, type(None)), where)
        restore = SubtaskRestore(
            vertex=field(body, "vertex", int, where),
            subtask=field(body, "subtask", int, where),
            run=field(body, "run", str, where),
            attempt=field(body, "attempt", (str, type(None)), where),
            keyed=manifest_from_json(keyed, where) if keyed is not None else None,
            operators=field(body, "operators", dict, where),
            watermarks=watermarks_field(body, where),
            claimed=field(body, "claimed", bool, where),
            managed={
                uid: [
                    OperatorStatePart.from_json(part, f"{where}, operator state of {uid!r}")
                    for part in parts
                ]
                for uid, parts in field(body, "managed", dict, where).items()
            },
            restored_epoch=field(body, "restored_epoch", (int, type(None)), where),
        )
        if (restore.vertex, restore.subtask, restore.run) != (vertex, subtask, run):
            raise RecordFormatError(
                f"{where} names subtask {restore.subtask} of task {restore.vertex} "
                f"(run {restore.run})"
            )
        return restore
