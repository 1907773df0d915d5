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
from typing import Annotated, Any

from lockgate.common.records import Minimum, Record
from lockgate.core.fs.storage import Storage

ASSIGNMENT_FORMAT = "lockgate-split-assignment"
ASSIGNMENT_VERSION = 1

#: A position in a split: an offset (records, bytes), never negative
Position = Annotated[int, Minimum(0, "a position")]


class SourceError(RuntimeError):
    """A source cannot read its input: a missing, unreadable or undecodable file."""


class SourceUnavailableError(OSError):
    """The system a source reads from does not answer (a broker down, a network partition):
    the job fails over and retries, by its restart strategy."""


@dataclass(frozen=True)
class SplitAssignment(Record, format=ASSIGNMENT_FORMAT, version=ASSIGNMENT_VERSION):
    """What one source subtask reads of one split in one epoch (Flink: a source split)."""

    split: str
    start: Position  # position to read from
    max_records: Annotated[int, Minimum(1)]  # read at most this many records
    last: bool  # the range reaches the split's end (False where the end is not known)


@dataclass(frozen=True)
class SplitProgress(Record):
    """Where a reader stopped in one split. It travels inside a subtask's acknowledgement,
    whose format version covers it."""

    position: Position  # the next position to read
    finished: bool  # the split is read to its end


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

    def close(self) -> None:
        """Release what the enumerator holds (a client's connections): the job ended, or a
        restore replaced it."""

    def notify_checkpoint_complete(self, snapshot: Any) -> None:
        """A checkpoint holding this enumerator's ``snapshot`` completed (Kafka commits its
        offsets to the consumer group then); after the checkpoint's sinks committed."""


class Source(ABC):
    """A source of a job: plans on the driver, reads in tasks."""

    bounded: bool = True
    #: parallelism the source runs at unless set on the stream (None: the job's parallelism)
    default_parallelism: int | None = None
    #: ``read`` yields ``(record, timestamp)`` pairs: the timestamp (ms) the record has in
    #: the system it comes from (Kafka's), which a WatermarkStrategy's assigner receives
    timestamped: bool = False
    #: the type information of the records ``read`` yields, which a stream read without a
    #: ``type_info`` declares (Flink's ``getProducedType``): the records have it already
    #: (rows built from typed columns), so the subtask hands them on without converting
    #: each. None: the records are whatever the source reads.
    produced_type: Any = None

    def prepare(self, directory: Storage) -> None:
        """On the driver, before the source's first enumerator is created: stage what the
        readers need (a DataFrame's partitions, written by Spark tasks) under ``directory``,
        the source's own in the job's work directory, which the job removes when it ends."""

    @abstractmethod
    def create_enumerator(self, parallelism: int) -> SplitEnumerator: ...

    @abstractmethod
    def read(
        self, assignment: SplitAssignment, payload: Any, progress: dict[str, SplitProgress]
    ) -> Iterator[Any]:
        """Yield the assignment's records (with their timestamps if ``timestamped``); record
        the split's end in ``progress``. ``payload`` is what the enumerator sent beside the
        assignment."""

    def validate(self) -> None:
        """Check the source's configuration on the driver, before the job starts."""

    def close(self) -> None:
        """Release what reading held in this process (a client's connections): the subtask
        that read is done."""
