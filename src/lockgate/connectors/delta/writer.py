"""The Delta sink's writer in a subtask host: rows validated against the row type, routed by
their partition values to one Parquet data file each, written in row groups as they come;
at the end of every epoch the files are closed and become the epoch's committable (the
pre-commit). A data file is invisible to Delta's readers until a commit adds it to the log.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from lockgate.common.arrow_rows import RowsToArrow
from lockgate.common.types import Row
from lockgate.connectors.delta.committable import (
    DeltaCommittable,
    DeltaDataFile,
    commit_files,
)
from lockgate.connectors.delta.table import DeltaTableSpec
from lockgate.connectors.parquet.file_writer import ParquetFileWriter, row_converter
from lockgate.connectors.parquet.settings import CODECS, ParquetWriterSettings
from lockgate.core.two_phase_commit import commit_version, sink_digest
from lockgate.runtime.subtaskhost.operators import Operator, OperatorContext


class DeltaRows:
    """Rows of the table as its data files hold them: the partition columns left out (their
    values are in the log). Rows come validated: ``convert`` passes them on."""

    def __init__(self, spec: DeltaTableSpec, settings: ParquetWriterSettings):
        self.settings = settings
        self.schema = spec.data_schema
        self.to_arrow = RowsToArrow(spec.row_type, "Delta sink")
        self.columns = [spec.schema.get_field_index(name) for name in self.schema.names]

    @staticmethod
    def convert(row: Row) -> Row:
        return row

    def batch(self, rows: Sequence[Row]) -> pa.RecordBatch:
        batch = self.to_arrow.batch(rows)
        return pa.RecordBatch.from_arrays(
            [batch.column(i) for i in self.columns], schema=self.schema
        )


class _DataFile:
    __slots__ = ("partition_values", "records", "relative", "stream", "writer")

    def __init__(
        self, relative: str, partition_values: dict[str, str | None], stream: Any, rows: DeltaRows
    ):
        self.relative = relative
        self.partition_values = partition_values
        self.stream = stream
        self.writer = ParquetFileWriter(stream, rows)
        self.records = 0


class DeltaSinkWriter(Operator):
    def __init__(self, ctx: OperatorContext, spec: DeltaTableSpec, settings: ParquetWriterSettings):
        super().__init__(ctx)
        self.spec = spec
        self.convert = row_converter(spec.row_type)
        self.rows = DeltaRows(spec, settings)
        names = spec.row_type.get_field_names()
        self.partition_fields = [names.index(column) for column in spec.partition_columns]
        self.suffix = f"{CODECS[settings.compression]}.parquet"
        self.writer_id = uuid.uuid4().hex  # new per instance: names never repeat
        self.next_file = 0
        self.open_files: dict[tuple[Any, ...], _DataFile] = {}
        self.pending: list[DeltaCommittable] = []
        self.app_id = f"lockgate-{ctx.job_id}-{sink_digest(ctx.uid)}"

    def snapshot_state(self) -> dict[str, Any]:
        return {"committables": [committable.to_json() for committable in self.pending]}

    def restore_state(self, state: dict[str, Any]) -> None:
        self.pending = [DeltaCommittable.read(raw) for raw in state.get("committables", ())]

    def notify_checkpoint_complete(self, epoch: int) -> None:
        self.pending = [c for c in self.pending if c.epoch > epoch]

    def process(self, value: Any) -> None:
        try:
            row = self.convert(value)
            key = tuple(row._values[i] for i in self.partition_fields)
            data_file = self.open_files.get(key) or self._open(key)
            data_file.writer.write(row)
        except Exception as exc:
            raise self.failure(exc, value, "the Delta sink") from exc
        data_file.records += 1

    def _open(self, key: tuple[Any, ...]) -> _DataFile:
        directory, partition_values = self.spec.partition_directory(key)
        name = f"part-{self.next_file:05d}-{self.writer_id}.{self.suffix}"
        self.next_file += 1
        relative = f"{directory}/{name}" if directory else name
        path = os.path.join(self.spec.location, relative)
        staging = self.ctx.staging
        if staging is None:
            raise RuntimeError("a Delta data file opened outside an epoch (no staging log)")
        staging.stage(f"file://{path}")  # recorded before it exists
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data_file = _DataFile(relative, partition_values, open(path, "wb"), self.rows)  # noqa: SIM115
        self.open_files[key] = data_file
        return data_file

    def end_epoch(self) -> None:
        """Close every data file (pre-commit); commit them now unless exactly-once."""
        files = []
        for data_file in self.open_files.values():
            data_file.writer.close()
            size = data_file.stream.tell()
            data_file.stream.close()
            files.append(
                DeltaDataFile(
                    data_file.relative,
                    size,
                    data_file.partition_values,
                    data_file.records,
                    int(time.time() * 1000),
                )
            )
        self.open_files.clear()
        if not files:
            return
        ctx = self.ctx
        version = commit_version(ctx.generation, ctx.epoch)
        if ctx.commit_on_checkpoint:  # one application: a checkpoint's files commit as one
            self.pending.append(DeltaCommittable(ctx.epoch, self.app_id, version, tuple(files)))
        else:  # each subtask commits its own files, as an application of its own
            app_id = f"{self.app_id}-{ctx.index}"
            committable = DeltaCommittable(ctx.epoch, app_id, version, tuple(files))
            if not commit_files(self.spec, app_id, [committable]):
                # another attempt of this epoch committed its files: these are nobody's
                for written in files:
                    os.remove(os.path.join(self.spec.location, written.path))


def delta_sink_writer(
    spec: DeltaTableSpec, settings: ParquetWriterSettings
) -> Callable[[OperatorContext], DeltaSinkWriter]:
    def create(ctx: OperatorContext) -> DeltaSinkWriter:
        return DeltaSinkWriter(ctx, spec, settings)

    return create
