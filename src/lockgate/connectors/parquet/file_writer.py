"""Rows of a row type written as one Parquet file: each row validated against the type as it
arrives, rows converted to Arrow column by column in batches (``common.arrow_rows``), batches
written as row groups of the configured size in bytes, the file complete when closed.

``ParquetRows`` is what a row type and the writer settings make of rows, built once per
process; ``ParquetFileWriter`` writes one file with it. Both run in tasks: the driver only
checks settings and existing files' footers (``footers.py``).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from lockgate.common.arrow_rows import ArrowTypeError, RowsToArrow, arrow_schema, decimal_check
from lockgate.common.type_conversion import record_converter
from lockgate.common.typeinfo import RowTypeInfo
from lockgate.common.types import Row
from lockgate.connectors.parquet.settings import ParquetWriterSettings

#: rows converted to Arrow at once: large enough that the per-column work dominates, small
#: enough that the rows waiting as Python objects stay few
BATCH_ROWS = 4096

_LOCAL_TIMESTAMP = pa.timestamp("us")
_INSTANT = pa.timestamp("us", tz="UTC")
_UTC = datetime.UTC


def file_schema(row_type: RowTypeInfo, where: str) -> pa.Schema:
    """The schema of the Parquet files of ``row_type``'s rows: its Arrow schema, with
    SQL_TIMESTAMP columns as instants (Parquet's TIMESTAMP adjusted to UTC), since Flink's
    Parquet writer turns a timestamp into an instant too, by UTC or by the local time zone
    (``utc_timestamp``)."""
    schema = arrow_schema(row_type, where)
    return pa.schema([field.with_type(_as_instants(field.type)) for field in schema])


def _as_instants(data_type: pa.DataType) -> pa.DataType:
    t = pa.types
    if data_type == _LOCAL_TIMESTAMP:
        return _INSTANT
    if t.is_struct(data_type):
        fields = [data_type.field(i) for i in range(data_type.num_fields)]
        return pa.struct([field.with_type(_as_instants(field.type)) for field in fields])
    if t.is_list(data_type):
        return pa.list_(_as_instants(data_type.value_type))
    if t.is_map(data_type):
        return pa.map_(_as_instants(data_type.key_type), _as_instants(data_type.item_type))
    return data_type


def check_row_type(row_type: Any, settings: ParquetWriterSettings, where: str) -> RowTypeInfo:
    """``row_type`` if Parquet files of its rows can be written with ``settings``; an
    ``ArrowTypeError`` naming the field otherwise (a field of PICKLED_BYTE_ARRAY has no
    column type)."""
    schema = arrow_schema(row_type, where)
    if not settings.utc_timestamp:
        for field in schema:
            if field.type != _LOCAL_TIMESTAMP and _as_instants(field.type) != field.type:
                raise ArrowTypeError(
                    f"{where}, field '{field.name}': a SQL_TIMESTAMP inside a nested type is "
                    "written as UTC only: pass utc_timestamp=True, or make it a field of the row"
                )
    record_converter(row_type)
    assert isinstance(row_type, RowTypeInfo)
    return row_type


def row_converter(row_type: RowTypeInfo) -> Callable[[Any], Row]:
    """A record as a ``Row`` of ``row_type`` (``record_converter``), checked also for what
    its Arrow columns hold fewer of (``arrow_rows.decimal_check``), so that each record
    fails on its own before it waits in a batch."""
    converter = record_converter(row_type)
    assert converter is not None
    check = decimal_check(row_type)
    if check is None:
        return converter

    def convert(record: Any) -> Row:
        row: Row = converter(record)
        check(row)
        return row

    return convert


class ParquetRows:
    """What the rows of one row type become in Parquet files written with one setting."""

    def __init__(self, row_type: RowTypeInfo, settings: ParquetWriterSettings, where: str):
        self.settings = settings
        self.convert = row_converter(check_row_type(row_type, settings, where))
        self.to_arrow = RowsToArrow(row_type, where)
        self.schema = file_schema(row_type, where)
        self._local_columns = [
            index
            for index, field in enumerate(self.to_arrow.schema)
            if field.type == _LOCAL_TIMESTAMP and not settings.utc_timestamp
        ]

    def batch(self, rows: Sequence[Row]) -> pa.RecordBatch:
        """``rows`` (converted by ``convert``) as a batch of the file schema."""
        try:
            batch = self.to_arrow.batch(rows)
        except ArrowTypeError as exc:
            raise ArrowTypeError(f"{exc} ({self._culprit(rows)})") from None
        columns = batch.columns
        for index in self._local_columns:  # local time to instants, by the local time zone
            columns[index] = pa.array(
                [None if v is None else v.astimezone(_UTC) for v in columns[index].to_pylist()],
                type=_INSTANT,
            )
        # the other timestamps are UTC already: the cast only marks them so
        return pa.RecordBatch.from_arrays(columns, names=self.schema.names).cast(self.schema)

    def _culprit(self, rows: Sequence[Row]) -> str:
        for row in rows:
            try:
                self.to_arrow.batch([row])
            except ArrowTypeError:
                return f"row {row!r:.200}"
        return "a row of the batch"


class RowBatches(Protocol):
    """What a ``ParquetFileWriter`` makes of rows: ``ParquetRows``, or a Delta table's rows
    without their partition columns."""

    settings: ParquetWriterSettings
    schema: pa.Schema

    def convert(self, row: Any) -> Row: ...

    def batch(self, rows: Sequence[Row]) -> pa.RecordBatch: ...


class ParquetFileWriter:
    """Writes one Parquet file into a binary stream; the file is complete once ``close``
    returns (Parquet writes its footer last). The stream stays open: its owner closes it."""

    def __init__(self, stream: Any, rows: RowBatches):
        self._rows = rows
        self._convert = rows.convert
        self._pending: list[Row] = []
        self._batches: list[pa.RecordBatch] = []
        self._batched_bytes = 0
        self._row_group_bytes = rows.settings.block_size
        self._writer = pq.ParquetWriter(stream, rows.schema, **rows.settings.writer_options())

    def write(self, row: Any) -> None:
        """Validate ``row`` against the row type (a ``RecordTypeError`` naming the field) and
        buffer it."""
        pending = self._pending
        pending.append(self._convert(row))
        if len(pending) >= BATCH_ROWS:
            self._batch()

    def _batch(self) -> None:
        if self._pending:
            batch = self._rows.batch(self._pending)
            self._pending.clear()
            self._batches.append(batch)
            self._batched_bytes += batch.nbytes
            if self._batched_bytes >= self._row_group_bytes:
                self._write_row_group()

    def _write_row_group(self) -> None:
        """One row group of the buffered batches. Its size is their Arrow size in memory
        (Parquet's own writer measures its encoded buffers instead: close to it before
        compression)."""
        if self._batches:
            table = pa.Table.from_batches(self._batches, self._rows.schema)
            self._writer.write_table(table, row_group_size=table.num_rows)
            self._batches.clear()
            self._batched_bytes = 0

    def close(self) -> None:
        """Write what is buffered and the footer."""
        self._batch()
        self._write_row_group()
        self._writer.close()
