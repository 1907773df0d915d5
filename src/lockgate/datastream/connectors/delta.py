"""A Delta Lake sink (beyond PyFlink, whose Delta connector is Java's: ``DeltaSink.forRowData``),
written with delta-rs (the ``deltalake`` package, ``pip install lockgate[delta]``), with no
JVM: exactly once, each completed checkpoint one Delta commit."""

from __future__ import annotations

from typing import Any

from lockgate.common.configuration import Configuration
from lockgate.connectors.delta.sink import DeltaSinkSettings
from lockgate.connectors.delta.table import DeltaTableSpec
from lockgate.connectors.parquet.settings import ParquetWriterSettings
from lockgate.graph.operator_spec import OperatorSpec


class DeltaSink:
    """Appends a stream's rows to a Delta table. ``DeltaSink.for_row_data(path, row_type)``
    (the shape of the Java connector's ``forRowData``), then ``with_partition_columns`` and
    ``build()``; records are ``Row``s of ``row_type`` (a ``Types.ROW_NAMED``)."""

    name = "DeltaSink"

    def __init__(self, settings: DeltaSinkSettings):
        self._settings = settings

    def operator_spec(self) -> OperatorSpec:
        return self._settings.operator_spec()

    @staticmethod
    def for_row_data(
        base_path: str, row_type: Any, hadoop_config: Configuration | None = None
    ) -> DeltaSink.Builder:
        """The table at ``base_path`` (a file system path); ``hadoop_config`` takes Parquet's
        writer keys for the data files (``parquet.compression``, ``parquet.block.size``, ...,
        as ``ParquetBulkWriters.for_row_type``)."""
        if hadoop_config is not None and not isinstance(hadoop_config, Configuration):
            raise TypeError(
                f"DeltaSink: hadoop_config must be a Configuration, got {hadoop_config!r}"
            )
        entries = hadoop_config.to_dict() if hadoop_config is not None else {}
        parquet = ParquetWriterSettings.from_hadoop_config(entries, utc_timestamp=True)
        return DeltaSink.Builder(str(base_path), row_type, parquet)

    class Builder:
        def __init__(self, base_path: str, row_type: Any, parquet: ParquetWriterSettings):
            self._base_path = base_path
            self._row_type = row_type
            self._parquet = parquet
            self._partition_columns: tuple[str, ...] = ()

        def with_partition_columns(self, *columns: str) -> DeltaSink.Builder:
            """Partition the table by these fields (STRING, BOOLEAN, integral or SQL_DATE),
            in this order: a directory ``<column>=<value>`` each."""
            self._partition_columns = tuple(columns)
            return self

        def build(self) -> DeltaSink:
            table = DeltaTableSpec.of(self._base_path, self._row_type, self._partition_columns)
            return DeltaSink(DeltaSinkSettings(table, self._parquet))


__all__ = ["DeltaSink"]
