"""Reading Parquet files (``ParquetColumnarRowInputFormat``): the columns of a row type, as
``Row``s, row group by row group.

A split is one row group (``<file>#<row group>``) and a position the row offset in it, so
the row groups of one file are read in parallel, and an epoch's range is the same rows
however often it is read. Only the driver reads footers: when a listing first shows a file
(and, before the first epoch, every file the source starts with), it lists the row groups
and checks the file's columns against the row type, so a file that cannot be read fails the
job naming the file and the column before any of its rows are read.

Reading is columnar: pyarrow decodes a row group in batches of ``batch_size`` rows, and
``arrow_rows`` widens the columns to the row type and turns them into ``Row``s column by
column. An epoch that starts inside a row group decodes it from its start (Parquet has no
row offsets inside a row group), but turns only its own rows into ``Row``s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.core import url_to_fs

from lockgate.common.arrow_rows import ArrowTypeError, RowsFromArrow, arrow_schema, conform
from lockgate.common.typeinfo import RowTypeInfo, TimestampTypeInfo
from lockgate.common.types import Row
from lockgate.connectors.file.format import FileFormat, split_path
from lockgate.core.source import SourceError, SplitProgress


class ParquetFormat(FileFormat):
    name = "ParquetColumnarRowInputFormat"
    splits_files = True

    def __init__(
        self,
        row_type: RowTypeInfo,
        batch_size: int,
        is_utc_timestamp: bool,
        is_case_sensitive: bool,
    ):
        where = "ParquetColumnarRowInputFormat"
        try:
            self.schema = arrow_schema(row_type, where)
        except ArrowTypeError as exc:
            raise TypeError(str(exc)) from None
        if type(batch_size) is not int or batch_size < 1:
            raise ValueError(f"{where}: batch_size must be a positive int, got {batch_size!r}")
        self.row_type = row_type
        self.produced_type = row_type
        self.batch_size = batch_size
        self.is_utc_timestamp = is_utc_timestamp
        self.is_case_sensitive = is_case_sensitive
        self._rows = RowsFromArrow(row_type, where)
        # row groups of the files validate read, until the first listing takes them
        self._row_groups: dict[str, list[int]] = {}
        # SQL timestamps (no zone) that a column with a zone is read into
        self._timestamps = {
            name
            for name, t in zip(row_type.get_field_names(), row_type.get_field_types(), strict=True)
            if isinstance(t, TimestampTypeInfo)
        }

    def validate(self, list_files: Callable[[], list[str]]) -> None:
        """Check every file's footer; the row groups found are kept for the enumerator's
        first listing, which runs on the driver next, so no footer is read twice."""
        self._row_groups = {path: self._read_row_groups(path) for path in list_files()}

    def split_file(self, path: str) -> list[int]:
        found = self._row_groups.pop(path, None)
        return self._read_row_groups(path) if found is None else found

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_row_groups": {}}  # the driver's alone

    def _read_row_groups(self, path: str) -> list[int]:
        with _open(path) as parquet:
            self._conform(_empty(parquet.schema_arrow), path, _int96_columns(parquet))
            return list(range(parquet.metadata.num_row_groups))

    def read(
        self, split: str, start: int, max_records: int, progress: dict[str, SplitProgress]
    ) -> Iterator[Row]:
        path, group = split_path(split)
        position = start
        with _open(path) as parquet:
            groups = parquet.metadata.num_row_groups
            total = parquet.metadata.row_group(group).num_rows if group < groups else -1
            if total < start:
                held = f"{groups} row groups" if total < 0 else f"{total} rows in row group {group}"
                raise SourceError(
                    f"ParquetColumnarRowInputFormat cannot read {path}: the file changed since "
                    f"it was listed: it has {held}, but row group {group} was read to row "
                    f"{start} already (files must not change once visible: write them "
                    "elsewhere and move them in)"
                )
            int96 = _int96_columns(parquet)
            skip = start
            batches = parquet.iter_batches(
                self.batch_size, [group], self._columns(parquet.schema_arrow, path)
            )
            for batch in batches:
                if position >= total or position - start >= max_records:
                    break
                if skip >= batch.num_rows:
                    skip -= batch.num_rows
                    continue
                batch = batch.slice(skip, max_records - (position - start))
                skip = 0
                try:
                    rows = self._rows.rows(self._conform(batch, path, int96))
                except ArrowTypeError as exc:
                    raise SourceError(f"{self.name} cannot read {path}: {exc}") from None
                yield from rows
                position += batch.num_rows
        progress[split] = SplitProgress(position, position >= total)

    def _columns(self, file_schema: pa.Schema, path: str) -> list[str]:
        """The file's column of each field of the row type, by name (in any case unless
        case-sensitive); a missing or ambiguous one is a ``SourceError`` naming both."""
        names = file_schema.names
        if self.is_case_sensitive:
            by_name = {name: [name] for name in names}
        else:
            by_name = {}
            for name in names:
                by_name.setdefault(name.lower(), []).append(name)
        columns = []
        for field in self.schema.names:
            found = by_name.get(field if self.is_case_sensitive else field.lower(), [])
            if len(found) != 1:
                problem = (
                    f"has no column '{field}'"
                    if not found
                    else f"has the columns {', '.join(found)}, which all match '{field}' "
                    "without case (is_case_sensitive=False)"
                )
                raise SourceError(
                    f"ParquetColumnarRowInputFormat cannot read {path}: the file {problem} "
                    f"(its columns: {', '.join(names)})"
                )
            columns.append(found[0])
        return columns

    def _conform(self, batch: pa.RecordBatch, path: str, int96: set[str]) -> pa.RecordBatch:
        """The batch's columns as the row type's (renamed, widened); instants (zoned
        timestamps, and the ``INT96`` timestamps of Spark and Hive, which are UTC instants
        that pyarrow reads without a zone) read into SQL timestamps as their wall clock in
        UTC or in the local zone."""
        columns = self._columns(batch.schema, path)
        where = f"ParquetColumnarRowInputFormat cannot read {path}"
        try:
            arrays = []
            for name, column in zip(self.schema.names, columns, strict=True):
                array = batch.column(column)
                if name in self._timestamps and pa.types.is_timestamp(array.type):
                    if column in int96:
                        array = array.cast(pa.timestamp(array.type.unit, tz="UTC"))
                    if array.type.tz:
                        array = self._wall_clock(array, self.schema.field(name).type)
                arrays.append(array)
            renamed = pa.RecordBatch.from_arrays(arrays, names=self.schema.names)
            return conform(renamed, self.schema, where)
        except ArrowTypeError as exc:
            raise SourceError(str(exc)) from None
        except pa.ArrowInvalid as exc:
            raise SourceError(f"{where}: {exc}") from None

    def _wall_clock(self, array: pa.Array, naive: pa.DataType) -> pa.Array:
        """The wall clock of an array of instants, as ``naive`` (the row type's SQL
        timestamp); a value finer than ``naive`` fails (ArrowInvalid) rather than being cut."""
        array = array.cast(pa.timestamp(naive.unit, tz="UTC"))
        if self.is_utc_timestamp:
            return array.cast(naive)  # the UTC instant's own fields
        values = [
            None if v is None else v.astimezone().replace(tzinfo=None) for v in array.to_pylist()
        ]
        return pa.array(values, type=naive)


@contextmanager
def _open(path: str) -> Iterator[pq.ParquetFile]:
    """The Parquet file at ``path`` (its footer read), closed with its handle after use."""
    fs, local = url_to_fs(path)
    try:
        handle = fs.open(local, "rb")
    except FileNotFoundError:
        raise SourceError(f"FileSource input file disappeared: {path}") from None
    with handle:
        try:
            parquet = pq.ParquetFile(handle)
        except (pa.ArrowInvalid, OSError) as exc:
            raise SourceError(f"ParquetColumnarRowInputFormat cannot read {path}: {exc}") from None
        with parquet:
            yield parquet


def _int96_columns(parquet: pq.ParquetFile) -> set[str]:
    """The top-level columns stored as ``INT96`` timestamps."""
    schema = parquet.schema
    return {
        column.path
        for column in (schema.column(i) for i in range(len(schema)))
        if column.physical_type == "INT96" and "." not in column.path
    }


def _empty(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)
