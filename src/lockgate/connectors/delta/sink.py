"""The Delta sink as the job graph holds it: the table, the Parquet writer settings, and its
checks before the job."""

from __future__ import annotations

from dataclasses import dataclass

from lockgate.connectors.delta.committer import DeltaCommitter
from lockgate.connectors.delta.table import DeltaTableSpec
from lockgate.connectors.delta.writer import delta_sink_writer
from lockgate.connectors.parquet.settings import ParquetWriterSettings
from lockgate.graph.operator_spec import OperatorKind, OperatorSpec


@dataclass(frozen=True)
class DeltaSinkSettings:
    table: DeltaTableSpec
    parquet: ParquetWriterSettings

    def operator_spec(self) -> OperatorSpec:
        return OperatorSpec(
            OperatorKind.FACTORY,
            delta_sink_writer(self.table, self.parquet),
            validator=self.table.check,
            committer=DeltaCommitter(self.table),
        )
