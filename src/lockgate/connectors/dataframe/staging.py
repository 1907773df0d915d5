"""A DataFrame's partitions, staged once per run as Arrow IPC files by Spark's own tasks.

Why stage: a DataFrame partition can only be read from its start, and an epoch reads a
bounded range of it; reading it anew every epoch would cost the square of its length. A
staged partition is a file of fixed-size record batches, so an epoch seeks to the batch
that holds its start. The staging also pins the rows a run reads: a failover inside the run
reads the same files again, whatever the DataFrame would compute now.

Who writes and who deletes: every task attempt writes a file of its own (named by Spark's
task attempt id, unique in the application, even across resubmitted stages whose attempt
numbers start again), and the driver takes the file of the attempt whose result Spark kept;
the files live in the job's work directory, which the job removes when it ends. A new run (a
resume from a checkpoint or a savepoint) stages the DataFrame again, and the enumerator
compares its partitions' sizes and contents (a digest of the staged batches) with the
checkpoint's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any

import pyarrow as pa
from fsspec.core import url_to_fs

from lockgate.common.records import Minimum, Record, RecordFormatError
from lockgate.core.source import SourceError

BATCH_ROWS = 8192  # rows per record batch of a staged file: the step an epoch seeks by

#: what each task reports, in Arrow and as Spark's DDL (mapInArrow's types must match exactly)
_SUMMARY = pa.schema(
    [
        ("partition", pa.int32()),
        ("file", pa.string()),
        ("rows", pa.int64()),
        ("digest", pa.string()),
    ]
)
_SUMMARY_DDL = "partition int, file string, rows long, digest string"


@dataclass(frozen=True)
class StagedPartition(Record):
    """One staged partition: its file (a URL), its number of rows, and a digest of its
    batches (equal for equal rows in equal order)."""

    file: str
    rows: Annotated[int, Minimum(0, "a row count")]
    digest: str
    batch_rows: Annotated[int, Minimum(1)] = BATCH_ROWS


def stage_dataframe(df: Any, directory: str, where: str) -> list[StagedPartition]:
    """Write every partition of ``df`` under ``directory`` (a URL) in Spark tasks; the
    staged partitions in partition order."""
    writer = _PartitionWriter(directory.rstrip("/"))
    try:
        summary = df.mapInArrow(writer, _SUMMARY_DDL).collect()
    except Exception as exc:  # Spark's errors come in many classes: say which step failed
        message = f"{where}: Spark could not stage the DataFrame's partitions: {exc}"
        raise SourceError(message) from exc
    staged = {
        int(row["partition"]): StagedPartition(row["file"], row["rows"], row["digest"])
        for row in summary
    }
    if sorted(staged) != list(range(len(staged))):  # one summary per partition, even empty
        raise RecordFormatError(f"{where}: Spark staged partitions {sorted(staged)}")
    return [staged[p] for p in range(len(staged))]


class _PartitionWriter:
    """The function Spark maps over the DataFrame's partitions (pickled to the tasks)."""

    def __init__(self, directory: str):
        self.directory = directory

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        assert context is not None, "a DataFrame is staged inside Spark tasks"
        partition = context.partitionId()
        url = f"{self.directory}/part-{partition}-{context.taskAttemptId()}.arrow"
        fs, path = url_to_fs(url)
        fs.makedirs(url_to_fs(self.directory)[1], exist_ok=True)
        digest = hashlib.blake2b(digest_size=16)
        rows = 0
        writer: Any = None  # opened with the first batch's schema
        pending: list[pa.RecordBatch] = []
        pending_rows = 0

        def write(table: pa.Table) -> None:
            batch = table.combine_chunks().to_batches()[0]
            digest.update(batch.serialize())
            writer.write_batch(batch)

        with fs.open(path, "wb") as sink:
            for batch in batches:
                if writer is None:
                    writer = pa.ipc.new_file(sink, batch.schema)
                pending.append(batch)
                pending_rows += batch.num_rows
                while pending_rows >= BATCH_ROWS:
                    table = pa.Table.from_batches(pending)
                    write(table.slice(0, BATCH_ROWS))
                    rest = table.slice(BATCH_ROWS)
                    pending, pending_rows = rest.to_batches(), rest.num_rows
                    rows += BATCH_ROWS
            if writer is None:  # an empty partition: Spark gave no batch, hence no schema
                writer = pa.ipc.new_file(sink, pa.schema([]))
            if pending_rows:
                write(pa.Table.from_batches(pending))
                rows += pending_rows
            writer.close()
        summary = {
            "partition": partition,
            "file": fs.unstrip_protocol(path),
            "rows": rows,
            "digest": digest.hexdigest(),
        }
        yield pa.RecordBatch.from_pylist([summary], schema=_SUMMARY)
