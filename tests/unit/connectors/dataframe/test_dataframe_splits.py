"""A staged DataFrame partition read in ranges across batch boundaries, and the enumerator
that refuses a checkpoint of other partitions."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lockgate.common import Types
from lockgate.common.arrow_rows import RowsFromArrow
from lockgate.common.records import RecordFormatError
from lockgate.connectors.dataframe.enumerator import DataFrameEnumerator
from lockgate.connectors.dataframe.reader import read_partition
from lockgate.connectors.dataframe.staging import StagedPartition
from lockgate.core.source import SourceError, SplitAssignment, SplitProgress

ROW_TYPE = Types.ROW_NAMED(["id"], [Types.LONG()])


def staged_file(tmp_path, rows: int, batch_rows: int) -> StagedPartition:
    path = tmp_path / "part-0-0.arrow"
    schema = pa.schema([("id", pa.int64())])
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
        for start in range(0, rows, batch_rows):
            ids = list(range(start, min(rows, start + batch_rows)))
            writer.write_batch(pa.RecordBatch.from_pydict({"id": ids}, schema=schema))
    return StagedPartition(f"file://{path}", rows, "d", batch_rows)


def test_ranges_across_batches_read_each_row_once(tmp_path) -> None:
    staged = staged_file(tmp_path, rows=25, batch_rows=4)
    rows_of = RowsFromArrow(ROW_TYPE, "test").rows
    seen: list[int] = []
    position = 0
    for size in (3, 6, 1, 9, 100):
        progress: dict[str, SplitProgress] = {}
        assignment = SplitAssignment("0", position, size, False)
        seen += [row.id for row in read_partition(assignment, staged, rows_of, progress)]
        position = progress["0"].position
        assert progress["0"].finished == (position == 25)
    assert seen == list(range(25))


def test_a_staged_file_that_is_gone_names_the_partition(tmp_path) -> None:
    staged = StagedPartition(f"file://{tmp_path}/gone.arrow", 5, "d")
    rows_of = RowsFromArrow(ROW_TYPE, "test").rows
    with pytest.raises(SourceError, match=r"DataFrame partition 0: its staged file .*gone"):
        list(read_partition(SplitAssignment("0", 0, 5, True), staged, rows_of, {}))


def test_restore_refuses_a_checkpoint_of_other_partitions() -> None:
    parts = [StagedPartition("file:///a", 10, "d0"), StagedPartition("file:///b", 7, "d1")]
    first = DataFrameEnumerator(parts, 2)
    first.acknowledge({"0": SplitProgress(4, False)})
    snapshot = first.snapshot()

    again = DataFrameEnumerator(parts, 3)  # another parallelism reads on from the positions
    again.restore(snapshot, "chk-1")
    assert again.positions == {"0": 4, "1": 0}
    assert again.plan(100) == {
        0: [SplitAssignment("0", 4, 6, True)],
        1: [SplitAssignment("1", 0, 7, True)],
    }

    changed = DataFrameEnumerator([parts[0], StagedPartition("file:///b", 8, "d1")], 2)
    with pytest.raises(RecordFormatError, match=r"chk-1: .*partition 1: 7 rows then, 8 now"):
        changed.restore(snapshot, "chk-1")
    reordered = DataFrameEnumerator([parts[0], StagedPartition("file:///b", 7, "other")], 2)
    with pytest.raises(RecordFormatError, match=r"partition 1 .* not in the same order"):
        reordered.restore(snapshot, "chk-1")
