"""``ParquetBulkWriters``: the ``BulkWriterFactory`` of Parquet part files for
``FileSink.for_bulk_format`` (public at ``lockgate.datastream.formats.parquet``).

PyFlink's ``for_row_type`` takes a Table API ``RowType`` (``DataTypes.ROW``); lockgate has no
Table API, so its row type is ``Types.ROW_NAMED([...], [...])``: the field names are the
columns, the field types their Parquet types (``common.arrow_rows``), and records are
``Row``s of it.
"""

from __future__ import annotations

from typing import Any

from lockgate.common.arrow_rows import ArrowTypeError
from lockgate.common.configuration import Configuration
from lockgate.common.serialization import BulkWriter, BulkWriterFactory
from lockgate.common.typeinfo import RowTypeInfo
from lockgate.connectors.parquet.file_writer import (
    ParquetFileWriter,
    ParquetRows,
    check_row_type,
    file_schema,
)
from lockgate.connectors.parquet.footers import check_existing_files
from lockgate.connectors.parquet.settings import ParquetWriterSettings

_WHERE = "ParquetBulkWriters.for_row_type"


class ParquetBulkWriter(BulkWriter):
    """Writes one Parquet part file."""

    def __init__(self, writer: ParquetFileWriter):
        self._writer = writer

    def add_element(self, element: Any) -> None:
        self._writer.write(element)

    def finish(self) -> None:
        self._writer.close()


class ParquetBulkWriterFactory(BulkWriterFactory):
    """Parquet part files of one row type and writer settings. The settings are checked
    when it is made; what rows become (converters, schema) is built once in each process
    that writes."""

    default_part_suffix = ".parquet"

    def __init__(self, row_type: RowTypeInfo, settings: ParquetWriterSettings):
        self._row_type = check_row_type(row_type, settings, _WHERE)
        self._settings = settings
        self._rows: ParquetRows | None = None

    def get_row_type(self) -> RowTypeInfo:
        return self._row_type

    def create(self, stream: Any) -> ParquetBulkWriter:
        if self._rows is None:
            self._rows = ParquetRows(self._row_type, self._settings, _WHERE)
        return ParquetBulkWriter(ParquetFileWriter(stream, self._rows))

    def check_output(self, base_path: str, part_suffix: str) -> None:
        check_existing_files(base_path, part_suffix, file_schema(self._row_type, _WHERE))

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_rows": None}  # built again where it writes


class ParquetBulkWriters:
    """Creates ``BulkWriterFactory``s that write ``Row``s of a row type as Parquet files."""

    @staticmethod
    def for_row_type(
        row_type: RowTypeInfo,
        hadoop_config: Configuration | None = None,
        utc_timestamp: bool = False,
    ) -> BulkWriterFactory:
        """Parquet files of the rows of ``row_type`` (``Types.ROW_NAMED``).

        :param hadoop_config: Parquet's writer keys (``parquet.compression``,
            ``parquet.block.size``, ...); a key lockgate does not honour is refused.
        :param utc_timestamp: SQL_TIMESTAMP values are UTC (True) or the local time of the
            writing process (False); either way the file holds the instant.
        """
        if not isinstance(row_type, RowTypeInfo):
            raise ArrowTypeError(
                f"{_WHERE}: the row type is a Types.ROW_NAMED([...], [...]) (lockgate has no "
                f"Table API DataTypes), got {row_type!r}"
            )
        if hadoop_config is not None and not isinstance(hadoop_config, Configuration):
            raise TypeError(
                f"{_WHERE}: hadoop_config must be a Configuration, got {hadoop_config!r}"
            )
        entries = hadoop_config.to_dict() if hadoop_config is not None else {}
        settings = ParquetWriterSettings.from_hadoop_config(entries, utc_timestamp)
        return ParquetBulkWriterFactory(row_type, settings)
