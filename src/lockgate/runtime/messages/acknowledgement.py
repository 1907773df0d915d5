"""A subtask's acknowledgement of an epoch: what the driver needs to move the job forward.

One file per task attempt, created exclusively under the epoch's directory and named by
the attempt, so two live attempts of one subtask (a speculative copy, a zombie of a
resubmitted stage) never overwrite each other. The driver accepts the attempt whose output
the epoch consumed: a result-stage attempt that the Spark job returned, and upstream the
attempts whose shuffle output the accepted receivers read (``consumed``).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from lockgate.common.records import Record, RecordFormatError
from lockgate.core.source import SplitProgress
from lockgate.runtime.messages.metric_value import MetricValue
from lockgate.state.manifests import CanonicalManifest, KeyedStateSnapshot
from lockgate.state.operator_state_handle import OperatorStateHandle

FORMAT = "lockgate-subtask-ack"
VERSION = 8


def ack_name(ack_dir: str, vertex: int, subtask: int, attempt: str) -> str:
    return f"{ack_dir}/{vertex}-{subtask}-{attempt}.json"


def channel_name(edge: int, sender: int) -> str:
    return f"{edge}/{sender}"


@dataclass(frozen=True)
class SubtaskAck(Record, format=FORMAT, version=VERSION):
    vertex: int
    subtask: int
    epoch: int
    run: str  # job id and restart generation
    attempt: str  # names the attempt's files and the subtask version it leaves behind
    records_in: int
    source_progress: dict[str, SplitProgress]  # split -> where reading stopped (source subtasks)
    state: KeyedStateSnapshot | None  # keyed subtasks
    # keyed subtasks in a savepoint's epoch (keyword-only: declared here for the JSON order)
    savepoint: CanonicalManifest | None = dataclass_field(default=None, kw_only=True)
    # why its state could not go into the savepoint
    savepoint_error: str | None = dataclass_field(default=None, kw_only=True)
    operators: dict[str, Any]  # operator uid -> operator state
    watermarks: dict[str, int]  # operator uid -> its watermark at the end of the epoch
    # in how long, by the subtask's own clock, it next needs an epoch: its earliest
    # processing-time timer, or an input of it becoming idle. A delay, not a time: the
    # driver's clock may differ from the executor's.
    next_timer_in_ms: int | None
    restored: bool  # rebuilt from files rather than found live in its host
    location: str  # the Spark host of the subtask's host ("" in local mode)
    duration_ms: float
    consumed: dict[str, str]  # input channel (edge/sender) -> attempt whose output it read
    # operator uid -> metric name -> its value at the end of the epoch (a gauge without one
    # is left out)
    metrics: dict[str, dict[str, MetricValue]]
    # operator uid -> the operator state of its function: the live one, the savepoint's
    managed: dict[str, OperatorStateHandle] = dataclass_field(default_factory=dict)
    savepoint_managed: dict[str, OperatorStateHandle] = dataclass_field(default_factory=dict)

    def check(self, vertex: int, subtask: int, epoch: int, run: str, where: str) -> None:
        """The ack must be the one the driver asked for (not another job's, run's or epoch's)."""
        expected = (vertex, subtask, epoch, run)
        found = (self.vertex, self.subtask, self.epoch, self.run)
        if found != expected:
            raise RecordFormatError(
                f"{where} acknowledges vertex {found[0]} subtask {found[1]} epoch {found[2]} "
                f"of run {found[3]}, not vertex {vertex} subtask {subtask} epoch {epoch} of "
                f"run {run}"
            )
