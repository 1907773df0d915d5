"""Reading a staged DataFrame partition's planned range inside a subtask host: the batch
that holds the range's start is found by arithmetic (batches have a fixed size), then
batches are sliced and turned into Rows column by column."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa
from fsspec.core import url_to_fs

from lockgate.common.types import Row
from lockgate.connectors.dataframe.staging import StagedPartition
from lockgate.core.source import SourceError, SplitAssignment, SplitProgress


def read_partition(
    assignment: SplitAssignment,
    staged: StagedPartition,
    rows_of: Callable[[pa.RecordBatch], list[Row]],
    progress: dict[str, SplitProgress],
) -> Iterator[Row]:
    position = assignment.start
    stop = min(staged.rows, position + assignment.max_records)
    index, offset = divmod(position, staged.batch_rows)
    try:
        fs, path = url_to_fs(staged.file)
        with fs.open(path, "rb") as handle:
            reader = pa.ipc.open_file(handle)
            while position < stop:
                batch = reader.get_batch(index).slice(offset, stop - position)
                yield from rows_of(batch)
                position += batch.num_rows
                index, offset = index + 1, 0
    except (OSError, pa.ArrowInvalid, IndexError) as exc:
        raise SourceError(
            f"DataFrame partition {assignment.split}: its staged file {staged.file} cannot be "
            f"read at row {position}: {exc}"
        ) from None
    progress[assignment.split] = SplitProgress(position, position >= staged.rows)
