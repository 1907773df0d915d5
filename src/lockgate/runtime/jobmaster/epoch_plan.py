"""What one epoch reads and what each of its Spark tasks is handed (see EpochPlanner)."""

from __future__ import annotations

from dataclasses import dataclass

from lockgate.core.source import SplitAssignment
from lockgate.runtime.sparktask.epoch_task import EpochTask


@dataclass(frozen=True)
class EpochPlan:
    epoch: int
    generation: int  # of restores: the job's first run is 0, each failover adds one
    run: str  # the job execution and restore generation the tasks belong to
    tag: str  # names the epoch's files; unique per run and try
    ack_dir: str  # in the work directory: one acknowledgement per subtask attempt
    end_of_input: bool  # the sources are read to their end after this epoch
    sources_ending: frozenset[int]  # the source tasks read to their end after this epoch
    savepoint_url: str | None  # the epoch ends with a savepoint: its directory
    checkpoint: bool  # the epoch ends with a checkpoint
    inject_failure: bool  # tests: every subtask fails after its snapshot, before its ack
    tasks: dict[int, EpochTask]  # per task (vertex id)
    assignments: dict[int, dict[int, list[SplitAssignment]]]  # source task -> subtask -> input
    # source task -> each subtask's encoded SubtaskRestore (other tasks hold their own)
    source_restores: dict[int, list[bytes]]
