"""The contract between sources and the runtime (in the spirit of Flink's FLIP-27).

Connectors implement it (``lockgate.connectors``); the runtime depends only on it.

On the driver, a ``SplitEnumerator`` plans each epoch: for every source subtask, which
splits to read, from which position, and how many records at most (``SplitAssignment``).
Inside a Spark task, the source's reader reads exactly that and reports where each split
stopped (``SplitProgress``). Positions are non-negative integer offsets (records, bytes).

Assignments, progress reports and the enumerator's checkpoint state are control records:
frozen dataclasses with a JSON form, checked field by field when read, so that a damaged
one fails naming what is wrong and where. Records that a source holds on the driver (a
collection's) are data, not control: they travel beside their assignment as its
*payload*, pickled by Spark like any record, and never enter acknowledgements or
checkpoints.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from lockgate.common.records import RecordFormatError, envelope, field, open_envelope

ASSIGNMENT_FORMAT = "lockgate-split-assignment"
ASSIGNMENT_VERSION = 1


class SourceError(RuntimeError):
    """A source cannot read its input: a missing, unreadable or undecodable file."""


def position_field(raw: dict[str, Any], name: str, where: str) -> int:
    """``raw[name]``, which must be a position: an int, not negative."""
    value = field(raw, name, int, where)
    if value < 0:
        raise RecordFormatError(f"{where}: field '{name}' is {value}, not a position (>= 0)")
    return value


@dataclass(frozen=True)
class SplitAssignment:
    """What one source subtask reads of one split in one epoch (Flink: a source split)."""

    split: str
    start: int  # position to read from
    max_records: int  # read at most this many records
    last: bool  # the range reaches the split's end (False where the end is not known)

    def to_json(self) -> dict[str, Any]:
        return envelope(
            ASSIGNMENT_FORMAT,
            ASSIGNMENT_VERSION,
            {
                "split": self.split,
                "start": self.start,
                "max_records": self.max_records,
                "last": self.last,
            },
        )

    @staticmethod
    def from_json(raw: Any, where: str) -> SplitAssignment:
        body = open_envelope(raw, ASSIGNMENT_FORMAT, ASSIGNMENT_VERSION, where)
        max_records = field(body, "max_records", int, where)
        if max_records < 1:
            raise RecordFormatError(f"{where}: field 'max_records' is {max_records}, not >= 1")
        return SplitAssignment(
            field(body, "split", str, where),
            position_field(body, "start", where),
            max_records,
            field(body, "last", bool, where),
        )


@dataclass(frozen=True)
class SplitProgress:
    """Where a reader stopped in one split. It travels inside a subtask's acknowledgement,
    whose format version covers it."""

    position: int  # the next position to read
    finished: bool  # the split is read to its end

    def to_json(self) -> dict[str, Any]:
        return {"position": self.position, "finished": self.finished}

    @staticmethod
    def from_json(raw: Any, where: str) -> SplitProgress:
        if not isinstance(raw, dict):
            raise RecordFormatError(f"{where} is not an object")
        return SplitProgress(
            position_field(raw, "position", where), field(raw, "finished", bool, where)
        )


class SplitEnumerator(ABC):
    @abstractmethod
    def plan(self, max_records_per_split: int) -> dict[int, list[SplitAssignment]]:
        """Assignments per source subtask for the next epoch; empty when nothing to read."""

    def payload(self, assignment: SplitAssignment) -> Any:
        """What travels to the reader beside ``assignment``: data the driver holds (a
        collection's records). None for sources whose readers fetch their input."""
        return None

    def will_finish(self) -> bool:
        """Whether the epoch just planned reads everything that is left, as far as known."""
        return False

    def ahead(self) -> SplitEnumerator | None:
        """A copy of this enumerator where the epoch just planned will leave it, to plan the
        epoch after it before this one completes; None when a reader's stop is not known in
        advance (a file's lines, a socket). The copy stands in for this enumerator only if
        the epoch's acknowledgements bring this one to the same ``snapshot()``."""
        return None

    @abstractmethod
    def acknowledge(self, progress: dict[str, SplitProgress]) -> None:
        """Positions the readers reached in the epoch that completed."""

    @abstractmethod
    def is_finished(self) -> bool:
        """A bounded source that has nothing more to read."""

    @abstractmethod
    def snapshot(self) -> dict[str, Any]:
        """The enumerator's positions and pending splits: a JSON record with its format name
        and version (a checkpoint's ``coordinator_state``)."""

    @abstractmethod
    def restore(self, snapshot: Any, where: str) -> None:
        """Go back to the state of a ``snapshot`` (from a checkpoint). A damaged, foreign or
        incompatible one raises ``RecordFormatError`` naming ``where``, and leaves the
        enumerator as it was."""


class Source(ABC):
    """A source of a job: plans on the driver, reads in tasks."""

    bounded: bool = True
    #: parallelism the source runs at unless set on the stream (None: the job's parallelism)
    default_parallelism: int | None = None

    @abstractmethod
    def create_enumerator(self, parallelism: int) -> SplitEnumerator: ...

    @abstractmethod
    def read(
        self, assignment: SplitAssignment, payload: Any, progress: dict[str, SplitProgress]
    ) -> Iterator[Any]:
        """Yield the assignment's records; record the split's end in ``progress``.
        ``payload`` is what the enumerator sent beside the assignment."""

    def validate(self) -> None:
        """Check the source's configuration on the driver, before the job starts."""
