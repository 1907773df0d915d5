"""``FileSource`` as the job graph holds it: where to read, in which format, whether to
monitor. The driver lists and plans with its enumerator (``enumerator.py``); subtask hosts
read with its format (``format.py``: text lines, CSV, JSON lines, Parquet).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fsspec.core import url_to_fs

from lockgate.connectors.file.enumerator import FileEnumerator, list_visible_files
from lockgate.connectors.file.format import FileFormat
from lockgate.core.source import Source, SourceError, SplitAssignment, SplitProgress


class AbstractFileSource(Source):
    def __init__(
        self, paths: list[str], file_format: FileFormat, monitor_interval_ms: int | None = None
    ):
        self.paths = [str(p) for p in paths]
        self.file_format = file_format
        self.monitor_interval_ms = monitor_interval_ms
        self.produced_type = file_format.produced_type

    @property
    def bounded(self) -> bool:  # type: ignore[override]
        return self.monitor_interval_ms is None

    def validate(self) -> None:
        if not self.paths:
            raise SourceError("FileSource needs at least one input path")
        for path in self.paths:
            fs, local = url_to_fs(path)
            if not fs.exists(local):
                raise SourceError(f"FileSource input path does not exist: {path}")
        self.file_format.validate(self.list_files)

    def list_files(self) -> list[str]:
        """Visible files under the source's paths, as URLs, in a stable order."""
        return list_visible_files(self.paths)

    def create_enumerator(self, parallelism: int) -> FileEnumerator:
        return FileEnumerator(
            self.list_files, self.monitor_interval_ms, parallelism, self.file_format
        )

    def read(
        self, assignment: SplitAssignment, payload: Any, progress: dict[str, SplitProgress]
    ) -> Iterator[Any]:
        return self.file_format.read(
            assignment.split, assignment.start, assignment.max_records, progress
        )
