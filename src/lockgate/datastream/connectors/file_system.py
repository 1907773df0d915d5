"""``FileSource`` and ``StreamFormat`` at PyFlink's path (file sinks arrive with checkpoints)."""

from __future__ import annotations

from lockgate.common.time import Duration
from lockgate.connectors.file_source import TextLineFileSource


class StreamFormat:
    """How a file is read record by record; lockgate reads text lines."""

    def __init__(self, charset_name: str):
        self.charset_name = charset_name

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> StreamFormat:
        return StreamFormat(charset_name)


class FileSource(TextLineFileSource):
    """Reads text lines from files and directories; bounded unless monitoring."""

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat, *paths: str) -> FileSourceBuilder:
        return FileSourceBuilder(stream_format, list(paths))


class FileSourceBuilder:
    def __init__(self, stream_format: StreamFormat, paths: list[str]):
        self._format = stream_format
        self._paths = paths
        self._monitor_interval_ms: int | None = None

    def monitor_continuously(self, discovery_interval: Duration) -> FileSourceBuilder:
        """Keep watching the paths for new files; the job then runs until cancelled."""
        self._monitor_interval_ms = discovery_interval.to_milliseconds()
        return self

    def process_static_file_set(self) -> FileSourceBuilder:
        self._monitor_interval_ms = None
        return self

    def build(self) -> FileSource:
        return FileSource(self._paths, self._format.charset_name, self._monitor_interval_ms)


__all__ = ["FileSource", "FileSourceBuilder", "StreamFormat"]
