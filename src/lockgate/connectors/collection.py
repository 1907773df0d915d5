"""``from_collection``: a bounded source over a Python collection held by the driver.

As in Flink the source is non-parallel by default; each epoch ships only the slice its
subtask reads (as the assignment's payload), and the records themselves are read (and
processed) inside Spark tasks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from lockgate.connectors.offset_splits import ContiguousSplitEnumerator
from lockgate.core.source import Source, SplitAssignment, SplitProgress


class CollectionSource(Source):
    default_parallelism = 1

    def __init__(self, collection: Sequence[Any]):
        self.collection = list(collection)

    def __getstate__(self) -> dict[str, Any]:
        # Tasks receive their slices with their assignments, never the whole collection.
        return {"collection": None}

    def create_enumerator(self, parallelism: int) -> CollectionEnumerator:
        return CollectionEnumerator(self.collection, parallelism)

    def read(
        self, assignment: SplitAssignment, payload: Any, progress: dict[str, SplitProgress]
    ) -> Iterator[Any]:
        yield from payload
        end = assignment.start + len(payload)
        progress[assignment.split] = SplitProgress(end, assignment.last)


class CollectionEnumerator(ContiguousSplitEnumerator):
    """Split i is the i-th of as many contiguous chunks of the collection as the source had
    subtasks when it started; its position is an offset."""

    source_name = "collection"

    def __init__(self, collection: list[Any], parallelism: int):
        self.collection = collection
        super().__init__(len(collection), parallelism)

    def payload(self, assignment: SplitAssignment) -> list[Any]:
        return self.collection[assignment.start : assignment.start + assignment.max_records]
