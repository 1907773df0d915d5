"""File source and sink at PyFlink's path (``pyflink.datastream.connectors.file_system``)."""

from __future__ import annotations

from typing import Any, NoReturn

from lockgate.common.serialization import BulkWriterFactory, Encoder
from lockgate.common.time import Duration
from lockgate.common.unsupported import not_supported, unsupported
from lockgate.connectors.file.committer import FileCommitter
from lockgate.connectors.file.format import FileFormat
from lockgate.connectors.file.part_format import BulkPartFormat, PartFormat, RowPartFormat
from lockgate.connectors.file.reader import TextLineFormat
from lockgate.connectors.file.sink import BucketAssigner as SinkBuckets
from lockgate.connectors.file.sink import FileSinkSettings
from lockgate.connectors.file.source import AbstractFileSource
from lockgate.connectors.file.writer import file_sink_writer
from lockgate.graph.operator_spec import OperatorKind, OperatorSpec


class StreamFormat:
    """How a file is read record by record, from a byte offset: text lines here, CSV
    (``lockgate.datastream.formats.csv.CsvReaderFormat``) and JSON lines
    (``lockgate.datastream.formats.json.JsonLinesReaderFormat``)."""

    def __init__(self, file_format: FileFormat):
        self._file_format = file_format

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> StreamFormat:
        return StreamFormat(TextLineFormat(charset_name))


class BulkFormat:
    """How a file is read in batches of records, in splits of its own: Parquet
    (``lockgate.datastream.formats.parquet.ParquetColumnarRowInputFormat``)."""

    def __init__(self, file_format: FileFormat):
        self._file_format = file_format


class FileSource(AbstractFileSource):
    """Reads files and directories in a stream or bulk format; bounded unless monitoring."""

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat, *paths: str) -> FileSourceBuilder:
        if not isinstance(stream_format, StreamFormat):
            raise TypeError(
                "FileSource.for_record_stream_format needs a StreamFormat (such as "
                f"StreamFormat.text_line_format() or CsvReaderFormat), got {stream_format!r}"
            )
        return FileSourceBuilder(stream_format._file_format, list(paths))

    @staticmethod
    def for_bulk_file_format(bulk_format: BulkFormat, *paths: str) -> FileSourceBuilder:
        if not isinstance(bulk_format, BulkFormat):
            raise TypeError(
                "FileSource.for_bulk_file_format needs a BulkFormat (such as "
                f"ParquetColumnarRowInputFormat), got {bulk_format!r}"
            )
        return FileSourceBuilder(bulk_format._file_format, list(paths))


class FileSourceBuilder:
    def __init__(self, file_format: FileFormat, paths: list[str]):
        self._format = file_format
        self._paths = paths
        self._monitor_interval_ms: int | None = None

    def monitor_continuously(self, discovery_interval: Duration) -> FileSourceBuilder:
        """Keep watching the paths for new files; the job then runs until cancelled."""
        self._monitor_interval_ms = discovery_interval.to_milliseconds()
        return self

    def process_static_file_set(self) -> FileSourceBuilder:
        self._monitor_interval_ms = None
        return self

    def set_file_enumerator(self, file_enumerator: Any) -> NoReturn:
        not_supported(
            "FileSourceBuilder.set_file_enumerator",
            "FileSource's own enumeration: every file under the paths, hidden ones left out",
        )

    def set_split_assigner(self, split_assigner: Any) -> NoReturn:
        not_supported("FileSourceBuilder.set_split_assigner", "FileSource's own split assignment")

    def build(self) -> FileSource:
        return FileSource(self._paths, self._format, self._monitor_interval_ms)


class OutputFileConfig:
    """Part file name prefix and suffix (``<prefix>-<uid>-<subtask>-<n><suffix>``)."""

    def __init__(self, part_prefix: str = "part", part_suffix: str = ""):
        self.part_prefix = part_prefix
        self.part_suffix = part_suffix

    def get_part_prefix(self) -> str:
        return self.part_prefix

    def get_part_suffix(self) -> str:
        return self.part_suffix

    @staticmethod
    def builder() -> OutputFileConfig.OutputFileConfigBuilder:
        return OutputFileConfig.OutputFileConfigBuilder()

    class OutputFileConfigBuilder:
        def __init__(self) -> None:
            self._prefix = "part"
            self._suffix = ""

        def with_part_prefix(self, prefix: str) -> OutputFileConfig.OutputFileConfigBuilder:
            self._prefix = prefix
            return self

        def with_part_suffix(self, suffix: str) -> OutputFileConfig.OutputFileConfigBuilder:
            self._suffix = suffix
            return self

        def build(self) -> OutputFileConfig:
            return OutputFileConfig(self._prefix, self._suffix)


class RollingPolicy:
    """When a part file is closed. Every epoch end closes all part files as well.

    Rolling at every epoch (Flink: at every checkpoint) is what makes output visible
    promptly; ``part_size`` additionally rolls large files within an epoch. The time-based
    intervals of Flink's default policy are accepted; epochs are shorter than them.
    """

    def __init__(self, part_size: int, rollover_interval: int, inactivity_interval: int):
        self.part_size = part_size
        self.rollover_interval = rollover_interval
        self.inactivity_interval = inactivity_interval

    @staticmethod
    def default_rolling_policy(
        part_size: int = 1024 * 1024 * 128,
        rollover_interval: int = 60 * 1000,
        inactivity_interval: int = 60 * 1000,
    ) -> DefaultRollingPolicy:
        return DefaultRollingPolicy(part_size, rollover_interval, inactivity_interval)

    @staticmethod
    def on_checkpoint_rolling_policy() -> OnCheckpointRollingPolicy:
        return OnCheckpointRollingPolicy(1 << 62, 1 << 62, 1 << 62)


class DefaultRollingPolicy(RollingPolicy):
    """Rolls at every epoch end and when a part file reaches ``part_size``."""


class OnCheckpointRollingPolicy(RollingPolicy):
    """Rolls only at the end of each epoch (Flink: on every checkpoint); the only policy of
    bulk formats, whose files are complete only when closed."""


class BucketAssigner:
    """Which directory under the base path a record is written to."""

    def __init__(self, assigner: SinkBuckets):
        self._assigner = assigner

    @staticmethod
    def base_path_bucket_assigner() -> BucketAssigner:
        return BucketAssigner(SinkBuckets(None))

    @staticmethod
    def date_time_bucket_assigner(
        format_str: str = "yyyy-MM-dd--HH", timezone_id: str | None = None
    ) -> BucketAssigner:
        return BucketAssigner(SinkBuckets(format_str, timezone_id))


class FileSink:
    """Writes records to part files under a base path: as lines of an ``Encoder``
    (``for_row_format``) or in a bulk format such as Parquet (``for_bulk_format``)."""

    name = "FileSink"

    def __init__(self, settings: FileSinkSettings):
        self._settings = settings

    def operator_spec(self) -> OperatorSpec:
        return OperatorSpec(
            OperatorKind.FACTORY,
            file_sink_writer(self._settings),
            validator=self._settings.validate,
            committer=FileCommitter(self._settings.base_path),
        )

    @staticmethod
    def for_row_format(base_path: str, encoder: Encoder) -> FileSink.RowFormatBuilder:
        return FileSink.RowFormatBuilder(str(base_path), encoder)

    @staticmethod
    def for_bulk_format(
        base_path: str, writer_factory: BulkWriterFactory
    ) -> FileSink.BulkFormatBuilder:
        """Part files of a bulk format (``ParquetBulkWriters.for_row_type(...)``), rolled at
        every epoch end; named ``<prefix>-<writer>-<n><suffix>`` with the factory's suffix
        (``.parquet`` for Parquet) unless an ``OutputFileConfig`` says otherwise."""
        if not isinstance(writer_factory, BulkWriterFactory):
            raise TypeError(
                "FileSink.for_bulk_format needs a BulkWriterFactory (such as "
                f"ParquetBulkWriters.for_row_type(...)), got {writer_factory!r}"
            )
        return FileSink.BulkFormatBuilder(str(base_path), writer_factory)

    def get_transformer(self) -> None:
        """None: lockgate's FileSink transforms no stream before it (PyFlink's turns Rows
        into Java's RowData for bulk formats; lockgate's Parquet writer takes the Rows)."""
        return None

    class RowFormatBuilder:
        def __init__(self, base_path: str, encoder: Encoder):
            self._base_path = base_path
            self._encoder = encoder
            self._output = OutputFileConfig()
            self._rolling: RollingPolicy = RollingPolicy.default_rolling_policy()
            self._buckets = BucketAssigner.date_time_bucket_assigner()

        def with_output_file_config(self, config: OutputFileConfig) -> FileSink.RowFormatBuilder:
            self._output = config
            return self

        def with_rolling_policy(self, policy: RollingPolicy) -> FileSink.RowFormatBuilder:
            self._rolling = policy
            return self

        def with_bucket_assigner(self, assigner: BucketAssigner) -> FileSink.RowFormatBuilder:
            self._buckets = assigner
            return self

        def with_bucket_check_interval(self, interval: int) -> FileSink.RowFormatBuilder:
            return self

        def build(self) -> FileSink:
            return _file_sink(
                self._base_path,
                RowPartFormat(self._encoder),
                self._output,
                self._rolling,
                self._buckets,
            )

    class BulkFormatBuilder:
        def __init__(self, base_path: str, writer_factory: BulkWriterFactory):
            self._base_path = base_path
            self._factory = writer_factory
            self._output = OutputFileConfig(part_suffix=writer_factory.default_part_suffix)
            self._buckets = BucketAssigner.date_time_bucket_assigner()

        def with_output_file_config(self, config: OutputFileConfig) -> FileSink.BulkFormatBuilder:
            self._output = config
            return self

        def with_rolling_policy(
            self, policy: OnCheckpointRollingPolicy
        ) -> FileSink.BulkFormatBuilder:
            """Only the on-checkpoint policy, as in Flink: a bulk part file is complete only
            when closed, so it rolls at every epoch end and nowhere else."""
            if not isinstance(policy, OnCheckpointRollingPolicy):
                raise ValueError(
                    f"a bulk-format FileSink rolls its part files on checkpoints only, as "
                    f"Flink's: rolling_policy must be RollingPolicy.on_checkpoint_rolling_policy()"
                    f", got {policy!r}"
                )
            return self

        def with_bucket_assigner(self, assigner: BucketAssigner) -> FileSink.BulkFormatBuilder:
            self._buckets = assigner
            return self

        def with_bucket_check_interval(self, interval: int) -> FileSink.BulkFormatBuilder:
            """Accepted: a part file of an old bucket closes at the epoch end anyway."""
            return self

        def build(self) -> FileSink:
            return _file_sink(
                self._base_path,
                BulkPartFormat(self._factory),
                self._output,
                RollingPolicy.on_checkpoint_rolling_policy(),
                self._buckets,
            )


def _file_sink(
    base_path: str,
    part_format: PartFormat,
    output: OutputFileConfig,
    rolling: RollingPolicy,
    buckets: BucketAssigner,
) -> FileSink:
    return FileSink(
        FileSinkSettings(
            base_path,
            part_format,
            output.part_prefix,
            output.part_suffix,
            rolling.part_size,
            buckets._assigner,
        )
    )


FileCompactor = unsupported(
    "FileCompactor", "FileSink with a RollingPolicy (no compaction)", __name__
)
FileCompactStrategy = unsupported(
    "FileCompactStrategy", "FileSink with a RollingPolicy (no compaction)", __name__
)
StreamingFileSink = unsupported("StreamingFileSink", "FileSink.for_row_format", __name__)
FileEnumeratorProvider = unsupported(
    "FileEnumeratorProvider", "FileSource's own file enumeration", __name__
)
FileSplitAssignerProvider = unsupported(
    "FileSplitAssignerProvider", "FileSource's own split assignment", __name__
)


__all__ = [
    "BucketAssigner",
    "BulkFormat",
    "FileCompactStrategy",
    "FileCompactor",
    "FileEnumeratorProvider",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "FileSplitAssignerProvider",
    "OutputFileConfig",
    "RollingPolicy",
    "StreamFormat",
    "StreamingFileSink",
]
