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
#: table settings of writer duties the sink does not take on (a CHECK constraint, row ids)
_REFUSED_SETTINGS = ("delta.constraints.", "delta.enableRowTracking")
#: a column's metadata keys of the same kind (generated and identity columns, invariants)
_FIELD_RULES = (b"delta.generationExpression", b"delta.identity.", b"delta.invariants")
#: writer features whose tables a plain append of add actions keeps valid
_WRITER_FEATURES = frozenset(
    (
        "appendOnly",
        "timestampNtz",
        "deletionVectors",
        "changeDataFeed",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "domainMetadata",
        "checkpointProtection",
    )
)
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
            if column.startswith(("_", ".")):
                raise DeltaTableError(
                    f"Delta sink: partition column '{column}' starts with '{column[0]}': "
                    "readers skip such directories (and _delta_log is the table's log)"
                )
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
        """Before the job: refuse a location the sink cannot append its rows to, and create
        the table if there is none, so that every commit appends (subtasks that commit
        themselves would race to create it) and a failure before the first commit leaves a
        table, not a directory of stray files."""
        from deltalake import DeltaTable, Schema

        if os.path.exists(self.location) and not os.path.isdir(self.location):
            raise DeltaTableError(f"Delta sink: {self.location} is a file, not a directory")
        if not DeltaTable.is_deltatable(self.location):
            if _holds_files(self.location):
                raise DeltaTableError(
                    f"Delta sink: {self.location} holds files and is not a Delta table (no "
                    "_delta_log): give the path of a Delta table, of an empty directory, or "
                    "of none"
                )
            # "ignore": a table another job created meanwhile is checked below like any
            DeltaTable.create(
                self.location,
                Schema.from_arrow(self.schema),
                mode="ignore",
                partition_by=list(self.partition_columns) or None,
            )
        self.check_table(DeltaTable(self.location))

    def check_table(self, table: Any) -> None:
        """Refuse a table (a ``DeltaTable``) whose schema, partitioning or writer features
        the sink's appends would not honour. Also at every commit: another writer may have
        replaced the table since the job started."""
        self._check_schema(pa.schema(table.schema().to_arrow()))
        partitioned = tuple(table.metadata().partition_columns)
        if partitioned != self.partition_columns:
            raise DeltaTableError(
                f"Delta table {self.location} is partitioned by {list(partitioned)}, the "
                f"sink by {list(self.partition_columns)}"
            )
        configuration = table.metadata().configuration
        refused = [key for key in configuration if key.startswith(_REFUSED_SETTINGS)]
        mapping = configuration.get("delta.columnMapping.mode", "none")
        if mapping != "none":
            refused.append(f"delta.columnMapping.mode={mapping}")
        features = table.protocol().writer_features or []
        refused += [f"writer feature {f}" for f in features if f not in _WRITER_FEATURES]
        if refused:
            raise DeltaTableError(
                f"Delta table {self.location} asks its writers for what the sink does not do "
                f"({', '.join(refused)}): the sink appends plain rows only"
            )

    def _check_schema(self, have: pa.Schema) -> None:
        want = self.schema
        if have.names != want.names:
            raise DeltaTableError(
                f"Delta table {self.location} has the columns {have.names}, the sink's row "
                f"type {want.names}"
            )
        for theirs, ours in zip(have, want, strict=True):
            if not theirs.nullable or theirs.type != ours.type:
                nullable = "" if theirs.nullable else "NOT NULL "
                raise DeltaTableError(
                    f"Delta table {self.location}: column '{ours.name}' is {nullable}"
                    f"{theirs.type}, the sink writes it as {ours.type} (nullable, as every "
                    "column and nested field of the row type)"
                )
            if theirs.metadata and any(k.startswith(_FIELD_RULES) for k in theirs.metadata):
                raise DeltaTableError(
                    f"Delta table {self.location}: column '{ours.name}' is generated, an "
                    "identity column or has an invariant, which the sink does not honour"
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


def _holds_files(directory: str) -> bool:
    """Whether ``directory`` holds a file, in it or below: empty directories (a partition's,
    left by an aborted file) do not make it something else than a table-to-be."""
    return any(files for _, _, files in os.walk(directory))


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
