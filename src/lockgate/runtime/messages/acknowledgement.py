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

from lockgate.common.records import RecordFormatError, envelope, field, open_envelope
from lockgate.core.source import SplitProgress
from lockgate.state.manifests import CanonicalManifest, KeyedStateSnapshot
from lockgate.state.operator_state_handle import OperatorStateHandle

FORMAT = "lockgate-subtask-ack"
VERSION = 7


def watermarks_field(raw: dict[str, Any], where: str) -> dict[str, int]:
    """Field "watermarks" of a record: operator uid -> watermark."""
    watermarks = field(raw, "watermarks", dict, where)
    if not all(type(w) is int for w in watermarks.values()):
        raise RecordFormatError(f"{where}: field 'watermarks' must map operator uids to ints")
    return watermarks


def ack_name(ack_dir: str, vertex: int, subtask: int, attempt: str) -> str:
    return f"{ack_dir}/{vertex}-{subtask}-{attempt}.json"


def channel_name(edge: int, sender: int) -> str:
    return f"{edge}/{sender}"


@dataclass(frozen=True)
class SubtaskAck:
    vertex: int
    subtask: int
    epoch: int
    run: str  # job id and restart generation
    attempt: str  # names the attempt's files and the subtask version it leaves behind
    records_in: int
    source_progress: dict[str, SplitProgress]  # split -> where reading stopped (source subtasks)
    state: KeyedStateSnapshot | None  # keyed subtasks
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
    savepoint: CanonicalManifest | None = None  # keyed subtasks in a savepoint's epoch
    savepoint_error: str | None = None  # why its state could not go into the savepoint
    # operator uid -> the operator state of its function: the live one, the savepoint's
    managed: dict[str, OperatorStateHandle] = dataclass_field(default_factory=dict)
    savepoint_managed: dict[str, OperatorStateHandle] = dataclass_field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return envelope(
            FORMAT,
            VERSION,
            {
                "vertex": self.vertex,
                "subtask": self.subtask,
                "epoch": self.epoch,
                "run": self.run,
                "attempt": self.attempt,
                "records_in": self.records_in,
                "source_progress": {
                    split: progress.to_json() for split, progress in self.source_progress.items()
                },
                "state": self.state.to_json() if self.state is not None else None,
                "savepoint": self.savepoint.to_json() if self.savepoint is not None else None,
                "savepoint_error": self.savepoint_error,
                "operators": self.operators,
                "watermarks": self.watermarks,
                "next_timer_in_ms": self.next_timer_in_ms,
                "restored": self.restored,
                "location": self.location,
                "duration_ms": self.duration_ms,
                "consumed": self.consumed,
                "managed": {uid: h.to_json() for uid, h in self.managed.items()},
                "savepoint_managed": {
                    uid: h.to_json() for uid, h in self.savepoint_managed.items()
                },
            },
        )

    @staticmethod
    def from_json(raw: Any, where: str) -> SubtaskAck:
        body = open_envelope(raw, FORMAT, VERSION, where)
        consumed = field(body, "consumed", dict, where)
        state: dict[str, Any] | None = field(body, "state", (dict, type(None)), where)
        savepoint: dict[str, Any] | None = field(body, "savepoint", (dict, type(None)), where)
        if not all(isinstance(v, str) for v in consumed.values()):
            raise RecordFormatError(f"{where}: field 'consumed' must map channels to attempts")
        source_progress = {
            split: SplitProgress.from_json(progress, f"{where}, progress of split {split!r}")
            for split, progress in field(body, "source_progress", dict, where).items()
        }
        return SubtaskAck(
            vertex=field(body, "vertex", int, where),
            subtask=field(body, "subtask", int, where),
            epoch=field(body, "epoch", int, where),
            run=field(body, "run", str, where),
            attempt=field(body, "attempt", str, where),
            records_in=field(body, "records_in", int, where),
            source_progress=source_progress,
            state=KeyedStateSnapshot.from_json(state, where) if state is not None else None,
            savepoint=(
                CanonicalManifest.from_json(savepoint, f"{where}, savepoint")
                if savepoint is not None
                else None
            ),
            savepoint_error=field(body, "savepoint_error", (str, type(None)), where),
            operators=field(body, "operators", dict, where),
            watermarks=watermarks_field(body, where),
            next_timer_in_ms=field(body, "next_timer_in_ms", (int, type(None)), where),
            restored=field(body, "restored", bool, where),
            location=field(body, "location", str, where),
            duration_ms=float(field(body, "duration_ms", (int, float), where)),
            consumed=consumed,
            managed=_handles(body, "managed", where),
            savepoint_managed=_handles(body, "savepoint_managed", where),
        )

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


def _handles(body: dict[str, Any], name: str, where: str) -> dict[str, OperatorStateHandle]:
    return {
        uid: OperatorStateHandle.from_json(raw, f"{where}, {name} of {uid!r}")
        for uid, raw in field(body, name, dict, where).items()
    }
