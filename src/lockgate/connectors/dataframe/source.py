"""The DataFrame source as the job graph holds it: the DataFrame (on the driver only), the
row type its records have, and the partitions a run staged."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lockgate.common.arrow_rows import (
    ArrowTypeError,
    RowsFromArrow,
    arrow_schema,
    check_columns,
    conform,
    row_type_of,
)
from lockgate.common.typeinfo import RowTypeInfo
from lockgate.common.types import Row
from lockgate.connectors.dataframe.enumerator import DataFrameEnumerator
from lockgate.connectors.dataframe.reader import read_partition
from lockgate.connectors.dataframe.staging import StagedPartition, stage_dataframe
from lockgate.core.fs.storage import Storage
from lockgate.core.source import Source, SourceError, SplitAssignment, SplitProgress


class DataFrameSource(Source):
    """Reads a bounded DataFrame; partition i is a split, read by subtask i % parallelism."""

    def __init__(self, df: Any, type_info: Any):
        from pyspark.sql import DataFrame
        from pyspark.sql.pandas.types import to_arrow_schema

        if not isinstance(df, DataFrame):
            raise TypeError(f"from_dataframe needs a pyspark.sql.DataFrame, got {df!r:.80}")
        if df.isStreaming:
            raise SourceError(
                "from_dataframe reads a bounded DataFrame, not a streaming one (readStream): "
                "read it with spark.read, or read its source with a lockgate connector"
            )
        if not df.columns:
            raise SourceError(
                "from_dataframe: the DataFrame has no columns, so its rows would be lost "
                "(Spark hands no row without columns to Arrow): select at least one column"
            )
        if not df._jdf.queryExecution().analyzed().deterministic():
            raise SourceError(
                "from_dataframe needs a deterministic DataFrame, and this one's plan computes "
                "other rows each time (rand(), uuid(), shuffle(), ...): a restore would read "
                "other rows at the checkpoint's positions. Write it to files first "
                "(df.write.parquet(path)) and read those with spark.read.parquet(path)"
            )
        try:
            # as Spark hands the partitions to mapInArrow: timestamps in the session's zone
            zone = df.sparkSession.conf.get("spark.sql.session.timeZone")
            columns = to_arrow_schema(df.schema, timezone=zone)
            found = row_type_of(columns, "from_dataframe")
            if type_info is None:
                self.row_type = found
                self.conform_to = None
            else:
                if not isinstance(type_info, RowTypeInfo):
                    raise ArrowTypeError(
                        f"from_dataframe: type_info must be a row type (Types.ROW_NAMED), "
                        f"got {type_info!r}"
                    )
                self.row_type = type_info
                self.conform_to = arrow_schema(type_info, "from_dataframe's type_info")
                check_columns(columns, self.conform_to, "from_dataframe's type_info")
            self.rows_of = RowsFromArrow(self.row_type, "from_dataframe")
            self.produced_type = self.row_type
        except ArrowTypeError as exc:
            raise SourceError(f"{exc} (DataFrame schema: {df.schema.simpleString()})") from None
        self.df = df
        self.partitions: list[StagedPartition] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Tasks get their partition's file with their assignment; the DataFrame stays here.
        return {**self.__dict__, "df": None, "partitions": None}

    def prepare(self, directory: Storage) -> None:
        if self.partitions is None:  # once per run: a failover reads the same files
            self.partitions = stage_dataframe(self.df, directory.url, "from_dataframe")

    def create_enumerator(self, parallelism: int) -> DataFrameEnumerator:
        if self.partitions is None:
            raise RuntimeError("a DataFrame source is planned before it was staged (prepare)")
        return DataFrameEnumerator(self.partitions, parallelism)

    def read(
        self, assignment: SplitAssignment, payload: Any, progress: dict[str, SplitProgress]
    ) -> Iterator[Row]:
        staged = StagedPartition.from_json(payload, f"DataFrame partition {assignment.split}")
        return read_partition(assignment, staged, self._rows, progress)

    def _rows(self, batch: Any) -> list[Row]:
        if self.conform_to is not None:
            batch = conform(batch, self.conform_to, "from_dataframe")
        return self.rows_of.rows(batch)
