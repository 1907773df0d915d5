"""``from_collection``: a bounded source over a Python collection held by the driver.

As in Flink the source is non-parallel by default; each epoch ships only the slice its
subtask reads, and the records themselves are read (and processed) inside Spark tasks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from lockgate.connectors.base import Assignment, Progress, Source, SplitEnumerator


class CollectionSource(Source):
    default_parallelism = 1

    def __init__(self, collection: Sequence[Any]):
        self.collection = list(collection)

    def __getstate__(self) -> dict[str, Any]:
        # Tasks receive their slices in the epoch plan, never the whole collection.
        return {"collection": None}

    def create_enumerator(self, parallelism: int) -> CollectionEnumerator:
        return CollectionEnumerator(self.collection, parallelism)

    def read(self, assignment: Assignment, progress: dict[str, Progress]) -> Iterator[Any]:
        records = assignment["records"]
        yield from records
        end = assignment["start"] + len(records)
        progress[assignment["split"]] = {"position": end, "finished": assignment["last"]}


class CollectionEnumerator(SplitEnumerator):
    """Split i is the i-th contiguous chunk of the collection; its position is an offset."""

    def __init__(self, collection: list[Any], parallelism: int):
        self.collection = collection
        size = len(collection)
        bounds = [size * i // parallelism for i in range(parallelism + 1)]
        self.splits = {str(i): (bounds[i], bounds[i + 1]) for i in range(parallelism)}
        self.positions = {split: start for split, (start, _) in self.splits.items()}
        self._planned: dict[int, list[Assignment]] = {}

    def plan(self, max_records_per_split: int) -> dict[int, list[Assignment]]:
        assignments: dict[int, list[Assignment]] = {}
        for split, (_, end) in self.splits.items():
            start = self.positions[split]
            if start >= end:
                continue
            stop = min(end, start + max_records_per_split)
            assignments[int(split)] = [
                {
                    "split": split,
                    "start": start,
                    "max_records": stop - start,
                    "last": stop == end,
                    "records": self.collection[start:stop],
                }
            ]
        self._planned = assignments
        return assignments

    def will_finish(self) -> bool:
        return all(
            self.positions[split] >= end
            or any(a["last"] for a in self._planned.get(int(split), ()))
            for split, (_, end) in self.splits.items()
        )

    def acknowledge(self, progress: dict[str, Progress]) -> None:
        for split, report in progress.items():
            self.positions[split] = int(report["position"])

    def is_finished(self) -> bool:
        return all(self.positions[split] >= end for split, (_, end) in self.splits.items())

    def snapshot(self) -> dict[str, Any]:
        return {"positions": dict(self.positions)}

    def restore(self, snapshot: dict[str, Any]) -> None:
        positions = {split: int(pos) for split, pos in snapshot["positions"].items()}
        if positions.keys() != self.positions.keys():
            raise ValueError(
                f"the collection source was checkpointed with splits {sorted(positions)}, "
                f"but now has {sorted(self.positions)}"
            )
        self.positions = positions
