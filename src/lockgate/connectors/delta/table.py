"""What the writers and the committer of a Delta sink know of its table: where it is, the
schema its rows have, how rows are partitioned, and where a partition's files go.

The table is checked on the driver before the job (``DeltaTableSpec.check``): a table that
exists must have the row type's schema and partition columns; a directory that is not
empty and holds no Delta table is refused; a table that does not exist yet is created by the
first commit, with the row type's schema.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lockgate.common.arrow_rows import ArrowTypeError, arrow_schema
from lockgate.common.typeinfo import BasicType, BasicTypeInfo, DateTypeInfo, RowTypeInfo
from lockgate.connectors.file.sink import SinkError

#: partition values stand in directory names; these characters are escaped there (%XX), as
#: Hive and Spark escape them
_ESCAPED = frozenset("\"#%'*/:=?\\{[]^\x7f") | frozenset(chr(c) for c in range(1, 32))
#: the directory of rows whose partition value is null, as Hive and Spark name it
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_PARTITION_TYPES = (
    BasicType.STRING,
    BasicType.BOOLEAN,
    BasicType.BYTE,
    BasicType.SHORT,
    BasicType.INT,
    BasicType.LONG,
)


class DeltaTableError(SinkError):
    """The Delta table cannot take the sink's rows (another schema, not a Delta table)."""


@dataclass(frozen=True)
class DeltaTableSpec:
    location: str  # an absolute local path
    row_type: RowTypeInfo
    partition_columns: tuple[str, ...]

    @staticmethod
    def of(path: str, row_type: Any, partition_columns: tuple[str, ...]) -> DeltaTableSpec:
        """The spec of a table at ``path`` (a local path or ``file://`` URL); refuses a row
        type without column types and partition columns it cannot partition by."""
        location = str(path)
        if "://" in location:
            scheme, _, rest = location.partition("://")
            if scheme != "file":
                raise DeltaTableError(
                    f"Delta sink: {location} is on {scheme}://, but the sink writes tables on "
                    "file system paths (local, or mounted on every machine) only"
                )
            location = rest
        try:
            schema = arrow_schema(row_type, "Delta sink row type")
        except ArrowTypeError as exc:
            raise DeltaTableError(str(exc)) from None
        assert isinstance(row_type, RowTypeInfo)
        for field in schema:
            if _holds_time(field.type):
                raise DeltaTableError(
                    f"Delta sink row type, field '{field.name}': Delta tables have no time of "
                    "day type (SQL_TIME): hold it as a STRING or a LONG"
                )
        types = dict(zip(row_type.get_field_names(), row_type.get_field_types(), strict=True))
        if len(set(partition_columns)) != len(partition_columns):
            raise DeltaTableError(
                f"Delta sink: a partition column is named twice in {partition_columns}"
            )
        for column in partition_columns:
            if column not in types:
                raise DeltaTableError(
                    f"Delta sink: partition column '{column}' is not a field of the row type "
                    f"({', '.join(schema.names)})"
                )
            if not _partitionable(types[column]):
                raise DeltaTableError(
                    f"Delta sink: partition column '{column}' is {types[column]!r}; partition "
                    "by a STRING, BOOLEAN, integral or SQL_DATE field"
                )
        if partition_columns and len(partition_columns) == len(schema):
            raise DeltaTableError("Delta sink: every column is a partition column")
        return DeltaTableSpec(os.path.abspath(location), row_type, tuple(partition_columns))

    @property
    def schema(self) -> pa.Schema:
        return arrow_schema(self.row_type, "Delta sink row type")

    @property
    def data_schema(self) -> pa.Schema:
        """The columns of the data files: partition values live in the log, not the files."""
        schema = self.schema
        return pa.schema([f for f in schema if f.name not in self.partition_columns])

    def check(self) -> None:
        """Refuse, before the job, a location the sink cannot append its rows to."""
        from deltalake import DeltaTable

        if DeltaTable.is_deltatable(self.location):
            table = DeltaTable(self.location)
            self._check_schema(pa.schema(table.schema().to_arrow()))
            partitioned = tuple(table.metadata().partition_columns)
            if partitioned != self.partition_columns:
                raise DeltaTableError(
                    f"Delta table {self.location} is partitioned by {list(partitioned)}, the "
                    f"sink by {list(self.partition_columns)}"
                )
        elif os.path.isdir(self.location) and os.listdir(self.location):
            raise DeltaTableError(
                f"Delta sink: {self.location} exists and is not a Delta table (no _delta_log): "
                "give the path of a Delta table, of an empty directory, or of none"
            )
        elif os.path.exists(self.location) and not os.path.isdir(self.location):
            raise DeltaTableError(f"Delta sink: {self.location} is a file, not a directory")

    def _check_schema(self, have: pa.Schema) -> None:
        want = self.schema
        if have.names != want.names:
            raise DeltaTableError(
                f"Delta table {self.location} has the columns {have.names}, the sink's row "
                f"type {want.names}"
            )
        for theirs, ours in zip(have, want, strict=True):
            if theirs.type != ours.type:
                raise DeltaTableError(
                    f"Delta table {self.location}: column '{ours.name}' is {theirs.type}, the "
                    f"sink's row type makes it {ours.type}"
                )

    def partition_directory(self, values: tuple[Any, ...]) -> tuple[str, dict[str, str | None]]:
        """The directory (relative to the table) of rows with the partition ``values`` (in
        ``partition_columns``' order), and the values as Delta's log writes them."""
        parts = []
        logged: dict[str, str | None] = {}
        for column, value in zip(self.partition_columns, values, strict=True):
            text = _partition_text(value)
            logged[column] = text
            parts.append(f"{_escape(column)}={NULL_PARTITION if text is None else _escape(text)}")
        return "/".join(parts), logged


def _holds_time(data_type: pa.DataType) -> bool:
    t = pa.types
    if t.is_time(data_type):
        return True
    if t.is_struct(data_type):
        return any(_holds_time(data_type.field(i).type) for i in range(data_type.num_fields))
    if t.is_list(data_type):
        return _holds_time(data_type.value_type)
    if t.is_map(data_type):
        return _holds_time(data_type.key_type) or _holds_time(data_type.item_type)
    return False


def _partitionable(type_info: Any) -> bool:
    if isinstance(type_info, DateTypeInfo):
        return True
    return isinstance(type_info, BasicTypeInfo) and type_info._basic_type in _PARTITION_TYPES


def _partition_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.date):
        return value.isoformat()
    return str(value)


def _escape(text: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)
