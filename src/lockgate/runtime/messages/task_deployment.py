"""What the JobMaster hands a Spark task for one epoch (Flink: the task deployment descriptor
and the task's restore), as typed JSON records.

The descriptor is the same for every subtask of a task and travels with the task's
function. A source subtask's ``SubtaskRestore`` travels as its partition's data; the
restores of a task after a shuffle travel together with its function (see ``EpochTask``);
either way a task decodes only its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from lockgate.common.records import Record, RecordFormatError
from lockgate.state.backend_settings import KeyedStateSettings
from lockgate.state.manifests import KeyedStateManifest
from lockgate.state.operator_state_handle import OperatorStatePart

DESCRIPTOR_FORMAT = "lockgate-task-deployment"
RESTORE_FORMAT = "lockgate-subtask-restore"
DESCRIPTOR_VERSION = 7
RESTORE_VERSION = 3


def run_id(job_id: str, generation: int) -> str:
    """A run of a job: its subtasks from one restore (or the start) to the next."""
    return f"{job_id}#{generation}"


def run_parts(run: str) -> tuple[str, int]:
    """The job id and restore generation of a ``run_id``."""
    job_id, _, generation = run.partition("#")
    return job_id, int(generation)


@dataclass(frozen=True)
class BatchBounds(Record):
    """Most records, and most bytes of pickled records, in one batch; a record larger than
    ``bytes`` travels alone (a record cannot be split), up to ``record_bytes``."""

    records: int
    bytes: int
    record_bytes: int  # the largest record (lockgate.record.max-size)


@dataclass(frozen=True)
class TaskDeploymentDescriptor(Record, format=DESCRIPTOR_FORMAT, version=DESCRIPTOR_VERSION):
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
    sink_files_url: str  # where sinks stage what their commits publish (Kafka's records)
    keyed_state: KeyedStateSettings
    batch_bounds: BatchBounds  # of the shuffle batches the subtask's channel writers send
    state_digests: bool  # state handles carry digests: the job signs its checkpoints

    @classmethod
    def decode(cls, data: bytes | str, where: str = "the task deployment descriptor") -> Self:
        return super().decode(data, where)


@dataclass(frozen=True)
class SubtaskRestore(Record, format=RESTORE_FORMAT, version=RESTORE_VERSION):
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

    @classmethod
    def for_subtask(cls, data: bytes, vertex: int, subtask: int, run: str) -> SubtaskRestore:
        """The restore of subtask ``subtask`` of task ``vertex`` in run ``run``, from its
        JSON ``data``; another one (a partition routed wrongly, a stale run) is an error."""
        where = f"the restore of subtask {subtask} of task {vertex} (run {run})"
        restore = cls.decode(data, where)
        restore.check(vertex, subtask, run, where)
        return restore

    def check(self, vertex: int, subtask: int, run: str, where: str) -> None:
        """It must be the restore of subtask ``subtask`` of task ``vertex`` in run ``run``."""
        if (self.vertex, self.subtask, self.run) != (vertex, subtask, run):
            raise RecordFormatError(
                f"{where} names subtask {self.subtask} of task {self.vertex} (run {self.run})"
            )
