"""The contract between sources and the runtime (in the spirit of Flink's FLIP-27).

On the driver, a ``SplitEnumerator`` plans each epoch: for every source subtask, which
splits to read, from which position, and how many records at most. Inside a Spark task,
the source's reader reads exactly that and reports where each split stopped. Positions are
JSON values so that they can go into plans, acknowledgements and checkpoints as they are.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any


class SourceError(RuntimeError):
    """A source cannot read its input: a missing, unreadable or undecodable file."""


# One unit of reading work: {"split": id, "start": position, "max_records": n, ...}
Assignment = dict[str, Any]
# What a reader reports per split: {"position": position, "finished": bool}
Progress = dict[str, Any]


class SplitEnumerator(ABC):
    @abstractmethod
    def plan(self, max_records_per_split: int) -> dict[int, list[Assignment]]:
        """Assignments per source subtask for the next epoch; empty when nothing to read."""

    def will_finish(self) -> bool:
        """Whether the epoch just planned reads everything that is left, as far as known."""
        return False

    @abstractmethod
    def acknowledge(self, progress: dict[str, Progress]) -> None:
        """Positions the readers reached in the epoch that completed."""

    @abstractmethod
    def is_finished(self) -> bool:
        """A bounded source that has nothing more to read."""

    @abstractmethod
    def snapshot(self) -> dict[str, Any]:
        """The enumerator's positions and pending splits, as JSON."""

    @abstractmethod
    def restore(self, snapshot: dict[str, Any]) -> None:
        """Go back to the positions of a ``snapshot`` (from a checkpoint)."""


class OffsetSplitEnumerator(SplitEnumerator):
    """Splits whose positions are offsets from a start to a known end: the planning,
    acknowledging and checkpointing of sources that can read any offset range again."""

    source_name = "source"  # in error messages

    def __init__(self, starts: dict[str, int], ends: dict[str, int]):
        self.ends = ends
        self.positions = dict(starts)
        self._planned: dict[int, list[Assignment]] = {}

    def stop(self, split: str, start: int, max_records: int) -> int:
        """Where an epoch that starts at ``start`` ends reading ``split``."""
        return min(self.ends[split], start + max_records)

    def assignment(self, split: str, start: int, stop: int) -> Assignment:
        """The assignment for one split's range; subclasses add what readers need."""
        return {
            "split": split,
            "start": start,
            "max_records": stop - start,
            "last": stop == self.ends[split],
        }

    def plan(self, max_records_per_split: int) -> dict[int, list[Assignment]]:
        assignments: dict[int, list[Assignment]] = {}
        for split, end in self.ends.items():
            start = self.positions[split]
            if start < end:
                stop = self.stop(split, start, max_records_per_split)
                assignments[int(split)] = [self.assignment(split, start, stop)]
        self._planned = assignments
        return assignments

    def will_finish(self) -> bool:
        return all(
            self.positions[split] >= end
            or any(a["last"] for a in self._planned.get(int(split), ()))
            for split, end in self.ends.items()
        )

    def acknowledge(self, progress: dict[str, Progress]) -> None:
        for split, report in progress.items():
            self.positions[split] = int(report["position"])

    def is_finished(self) -> bool:
        return all(self.positions[split] >= end for split, end in self.ends.items())

    def snapshot(self) -> dict[str, Any]:
        return {"positions": dict(self.positions)}

    def restore(self, snapshot: dict[str, Any]) -> None:
        positions = {split: int(pos) for split, pos in snapshot["positions"].items()}
        if positions.keys() != self.positions.keys():
            raise ValueError(
                f"the {self.source_name} source was checkpointed with splits "
                f"{sorted(positions)}, but now has {sorted(self.positions)}"
            )
        self.positions = positions


class Source(ABC):
    """A source of a job: plans on the driver, reads in tasks."""

    bounded: bool = True
    #: parallelism the source runs at unless set on the stream (None: the job's parallelism)
    default_parallelism: int | None = None

    @abstractmethod
    def create_enumerator(self, parallelism: int) -> SplitEnumerator: ...

    @abstractmethod
    def read(self, assignment: Assignment, progress: dict[str, Progress]) -> Iterator[Any]:
        """Yield the assignment's records; record the split's end in ``progress``."""

    def validate(self) -> None:
        """Check the source's configuration on the driver, before the job starts."""
