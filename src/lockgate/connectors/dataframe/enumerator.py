"""Planning a staged DataFrame's reading on the driver: partition i is split ``str(i)``,
its position a row offset."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lockgate.common.records import Record, RecordFormatError
from lockgate.connectors.dataframe.staging import StagedPartition
from lockgate.connectors.offset_splits import OffsetSplitEnumerator, OffsetSplitsState
from lockgate.core.source import Position, SplitAssignment

SIZES_FORMAT = "lockgate-dataframe-splits"
SIZES_VERSION = 1


@dataclass(frozen=True)
class DataFrameSplitsState(Record, format=SIZES_FORMAT, version=SIZES_VERSION):
    """Every partition's position, size and digest: a run that stages the DataFrame again
    checks that it has the partitions the checkpoint read (a DataFrame that is not
    deterministic would have other rows at the same positions)."""

    positions: dict[str, Position]
    sizes: dict[str, Position]
    digests: dict[str, str]


class DataFrameEnumerator(OffsetSplitEnumerator):
    source_name = "DataFrame"

    def __init__(self, partitions: list[StagedPartition], parallelism: int):
        self.partitions = partitions
        splits = [str(i) for i in range(len(partitions))]
        super().__init__(
            dict.fromkeys(splits, 0),
            {split: part.rows for split, part in zip(splits, partitions, strict=True)},
            parallelism,
        )

    def payload(self, assignment: SplitAssignment) -> Any:
        return self.partitions[int(assignment.split)].to_json()

    def snapshot(self) -> dict[str, Any]:
        digests = {str(i): part.digest for i, part in enumerate(self.partitions)}
        state = DataFrameSplitsState(dict(self.positions), dict(self.ends), digests)
        snapshot: dict[str, Any] = state.to_json()
        return snapshot

    def restore(self, snapshot: Any, where: str) -> None:
        state = DataFrameSplitsState.from_json(snapshot, where)
        if state.sizes != self.ends:
            splits = state.sizes.keys() | self.ends.keys()
            changed = sorted((s for s in splits if state.sizes.get(s) != self.ends.get(s)), key=int)
            raise RecordFormatError(
                f"{where}: the DataFrame has other partitions than when it was checkpointed "
                f"(partition {changed[0]}: {state.sizes.get(changed[0], 'none')} rows then, "
                f"{self.ends.get(changed[0], 'none')} now): from_dataframe needs a DataFrame "
                "that computes the same partitions every time (read from files, not sampled)"
            )
        digests = {str(i): part.digest for i, part in enumerate(self.partitions)}
        changed = sorted((s for s in digests if state.digests.get(s) != digests[s]), key=int)
        if changed:
            raise RecordFormatError(
                f"{where}: partition {changed[0]} of the DataFrame has the rows it had when it "
                "was checkpointed, but not in the same order (or other rows of the same "
                "count): after a shuffle (groupBy, join, repartition) the order within a "
                "partition is not deterministic; sortWithinPartitions on a unique key fixes it"
            )
        super().restore(OffsetSplitsState(state.positions).to_json(), where)
