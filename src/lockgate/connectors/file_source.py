"""Text-line file source: bounded over files and directories, or monitoring continuously.

A split is one file and its position a byte offset, so a re-run of an epoch reads exactly
the same lines: the plan fixes the start offset and the record count, and files are
immutable once they are visible (write them elsewhere and move them in, as with Flink).
Names starting with '.' or '_' are hidden and skipped, as in Flink.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from fsspec.core import url_to_fs

from lockgate.connectors.base import (
    Source,
    SourceError,
    SplitAssignment,
    SplitEnumerator,
    SplitProgress,
)


def _is_hidden(path: str, root: str) -> bool:
    relative = path[len(root) :].lstrip("/")
    return any(part.startswith((".", "_")) for part in relative.split("/") if part)


class TextLineFileSource(Source):
    def __init__(
        self, paths: list[str], charset: str = "UTF-8", monitor_interval_ms: int | None = None
    ):
        self.paths = [str(p) for p in paths]
        self.charset = charset
        self.monitor_interval_ms = monitor_interval_ms

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

    def list_files(self) -> list[str]:
        """Visible files under the source's paths, as URLs, in a stable order."""
        found: list[str] = []
        for path in self.paths:
            fs, root = url_to_fs(path)
            if not fs.exists(root):
                raise SourceError(f"FileSource input path does not exist: {path}")
            if fs.isdir(root):
                root = root.rstrip("/")
                for name in sorted(fs.find(root)):
                    if not _is_hidden(name, root):
                        found.append(fs.unstrip_protocol(name) if "://" in path else name)
            else:
                found.append(path)
        return found

    def create_enumerator(self, parallelism: int) -> FileEnumerator:
        return FileEnumerator(self, parallelism)

    def read(
        self, assignment: SplitAssignment, payload: Any, progress: dict[str, SplitProgress]
    ) -> Iterator[str]:
        path = assignment.split
        offset = assignment.start
        limit = assignment.max_records
        count = 0
        try:
            fs, local = url_to_fs(path)
            with fs.open(local, "rb") as handle:
                handle.seek(offset)
                for raw in handle:
                    if b"\r" not in raw:  # the common case: one line ending in "\n" (or EOF)
                        yield self._decode(raw[:-1] if raw.endswith(b"\n") else raw, path, offset)
                        offset += len(raw)
                        count += 1
                    else:
                        for line, consumed in _split_carriage_returns(raw):
                            yield self._decode(line, path, offset)
                            offset += consumed
                            count += 1
                            if count >= limit:
                                break
                        if offset != handle.tell():  # stopped inside a "\r"-separated run
                            break
                    if count >= limit:
                        break
                at_end = offset == handle.tell() and handle.read(1) == b""
                finished = count < limit or at_end
        except FileNotFoundError:
            raise SourceError(f"FileSource input file disappeared: {path}") from None
        progress[path] = SplitProgress(offset, finished)

    def _decode(self, line: bytes, path: str, offset: int) -> str:
        try:
            return line.decode(self.charset)
        except UnicodeDecodeError as exc:
            raise SourceError(
                f"FileSource cannot decode {path} as {self.charset} at byte offset "
                f"{offset}: {exc.reason}"
            ) from None


def _split_carriage_returns(raw: bytes) -> Iterator[tuple[bytes, int]]:
    """Lines of a chunk that ends at "\n" (or EOF) but holds "\r" or "\r\n" line ends too.

    Yields each line without its terminator and the bytes it consumed, so that "\n",
    "\r\n" and a lone "\r" all end a line, as in Java's ``BufferedReader.readLine``.
    """
    start = 0
    end = len(raw)
    while start < end:
        cr = raw.find(b"\r", start)
        lf = raw.find(b"\n", start)
        stops = [i for i in (cr, lf) if i >= 0]
        if not stops:
            yield raw[start:], end - start
            return
        stop = min(stops)
        width = 2 if raw[stop : stop + 2] == b"\r\n" else 1
        yield raw[start:stop], stop + width - start
        start = stop + width


class FileEnumerator(SplitEnumerator):
    """Discovers files, assigns each to one subtask, and tracks its byte offset."""

    def __init__(self, source: TextLineFileSource, parallelism: int):
        self.source = source
        self.parallelism = parallelism
        self.owner: dict[str, int] = {}
        self.positions: dict[str, int] = {}
        self.finished: set[str] = set()
        self.last_discovery = 0.0
        self._discover()

    def _discover(self) -> None:
        for path in self.source.list_files():
            if path not in self.owner:
                self.owner[path] = len(self.owner) % self.parallelism
                self.positions[path] = 0
        self.last_discovery = time.monotonic()

    def plan(self, max_records_per_split: int) -> dict[int, list[SplitAssignment]]:
        interval = self.source.monitor_interval_ms
        if interval is not None and time.monotonic() - self.last_discovery >= interval / 1000:
            self._discover()
        assignments: dict[int, list[SplitAssignment]] = {}
        for path, subtask in self.owner.items():
            if path not in self.finished:
                assignments.setdefault(subtask, []).append(
                    SplitAssignment(path, self.positions[path], max_records_per_split, False)
                )
        return assignments

    def acknowledge(self, progress: dict[str, SplitProgress]) -> None:
        for path, report in progress.items():
            self.positions[path] = report.position
            if report.finished:
                self.finished.add(path)

    def is_finished(self) -> bool:
        return self.source.bounded and len(self.finished) == len(self.owner)

    def snapshot(self) -> dict[str, Any]:
        return {
            "positions": dict(self.positions),
            "owner": dict(self.owner),
            "finished": sorted(self.finished),
        }

    def restore(self, snapshot: Any, where: str) -> None:
        self.owner = {path: int(subtask) for path, subtask in snapshot["owner"].items()}
        self.positions = {path: int(pos) for path, pos in snapshot["positions"].items()}
        self.finished = set(snapshot["finished"])
