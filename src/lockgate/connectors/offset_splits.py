"""Sources whose splits are offset ranges with a known end (collections, files read once):
one enumerator that plans, acknowledges and checkpoints them."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from lockgate.common.records import Record, RecordFormatError
from lockgate.core.source import Position, SplitAssignment, SplitEnumerator, SplitProgress

OFFSET_STATE_FORMAT = "lockgate-offset-splits"
OFFSET_STATE_VERSION = 1


@dataclass(frozen=True)
class OffsetSplitsState(Record, format=OFFSET_STATE_FORMAT, version=OFFSET_STATE_VERSION):
    """The checkpoint state of an ``OffsetSplitEnumerator``: every split's position."""

    positions: dict[str, Position]


class OffsetSplitEnumerator(SplitEnumerator):
    """Splits whose positions are offsets from a start to a known end: the planning,
    acknowledging and checkpointing of sources that can read any offset range again.
    Split ``str(i)`` is read by subtask ``i % parallelism``: after a restore at another
    parallelism, the splits (and their positions) are spread over the new subtasks."""

    source_name = "source"  # in error messages

    def __init__(self, starts: dict[str, int], ends: dict[str, int], parallelism: int):
        self.starts = starts
        self.ends = ends
        self.parallelism = parallelism
        self.positions = dict(starts)
        self._planned: dict[int, list[SplitAssignment]] = {}

    def stop(self, split: str, start: int, max_records: int) -> int:
        """Where an epoch that starts at ``start`` ends reading ``split``."""
        return min(self.ends[split], start + max_records)

    def plan(self, max_records_per_split: int) -> dict[int, list[SplitAssignment]]:
        assignments: dict[int, list[SplitAssignment]] = {}
        for split, end in self.ends.items():
            start = self.positions[split]
            if start < end:
                stop = self.stop(split, start, max_records_per_split)
                assignments.setdefault(int(split) % self.parallelism, []).append(
                    SplitAssignment(split, start, stop - start, stop == end)
                )
        self._planned = assignments
        return assignments

    def will_finish(self) -> bool:
        last = {a.split for planned in self._planned.values() for a in planned if a.last}
        return all(
            self.positions[split] >= end or split in last for split, end in self.ends.items()
        )

    def ahead(self) -> OffsetSplitEnumerator:
        # A reader of an offset range reads it whole: the planned stop is where it stops.
        twin = copy.copy(self)  # shares the immutable starts, ends and a collection's records
        twin.positions = dict(self.positions)
        for assignments in self._planned.values():
            for assignment in assignments:
                twin.positions[assignment.split] = assignment.start + assignment.max_records
        twin._planned = {}
        return twin

    def acknowledge(self, progress: dict[str, SplitProgress]) -> None:
        for split, report in progress.items():
            self.positions[split] = report.position

    def is_finished(self) -> bool:
        return all(self.positions[split] >= end for split, end in self.ends.items())

    def snapshot(self) -> dict[str, Any]:
        state: dict[str, Any] = OffsetSplitsState(dict(self.positions)).to_json()
        return state

    def restore(self, snapshot: Any, where: str) -> None:
        positions = OffsetSplitsState.from_json(snapshot, where).positions
        starts, ends = self.splits_for(len(positions))
        if positions.keys() != ends.keys():
            raise RecordFormatError(
                f"{where}: the {self.source_name} source was checkpointed with splits "
                f"{sorted(positions)}, but now has {sorted(ends)}"
            )
        for split, position in positions.items():
            if not starts[split] <= position <= ends[split]:
                raise RecordFormatError(
                    f"{where}: position {position} of split '{split}' is outside its range "
                    f"[{starts[split]}, {ends[split]}] (the {self.source_name} "
                    "source has other input than when it was checkpointed)"
                )
        self.starts, self.ends, self.positions = starts, ends, positions

    def splits_for(self, count: int) -> tuple[dict[str, int], dict[str, int]]:
        """The splits (starts, ends) a snapshot of ``count`` splits restores into."""
        return self.starts, self.ends


class ContiguousSplitEnumerator(OffsetSplitEnumerator):
    """Split i is the i-th of as many contiguous ranges of ``size`` records (indexes or
    offsets) as the source had subtasks when it started; its position is an offset."""

    def __init__(self, size: int, parallelism: int):
        self.size = size
        super().__init__(*contiguous_chunks(size, parallelism), parallelism)

    def splits_for(self, count: int) -> tuple[dict[str, int], dict[str, int]]:
        # A snapshot of another parallelism has that many ranges: read on from them
        if 0 < count != len(self.ends):
            return contiguous_chunks(self.size, count)
        return self.starts, self.ends


def contiguous_chunks(size: int, count: int) -> tuple[dict[str, int], dict[str, int]]:
    """Starts and ends of ``count`` contiguous chunks of ``size`` records, by split id."""
    bounds = [size * i // count for i in range(count + 1)]
    return {str(i): bounds[i] for i in range(count)}, {str(i): bounds[i + 1] for i in range(count)}
