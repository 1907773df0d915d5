"""Reading a file split line by line inside a subtask host: from the planned byte offset, at
most the planned number of records, with Java's line ends ("\\n", "\\r\\n", a lone "\\r").
Text lines are one such format, JSON lines another: each turns a line into its record.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from fsspec.core import url_to_fs

from lockgate.connectors.file.format import FileFormat
from lockgate.core.source import SourceError, SplitProgress

#: what a line parser returns for a line that holds no record (a blank line of JSON lines)
SKIP: Any = object()

#: a line's record from its bytes (without the line end), the file and its byte offset
LineParser = Callable[[bytes, str, int], Any]


class TextLineFormat(FileFormat):
    """Each line is a record: a ``str`` decoded with the charset (PyFlink's
    ``StreamFormat.text_line_format``)."""

    def __init__(self, charset: str = "UTF-8"):
        try:
            codec = codecs.lookup(charset)
        except (LookupError, TypeError):
            raise ValueError(f"text_line_format: {charset!r} is not a known charset") from None
        if codec.encode("\r\n")[0] != b"\r\n":
            raise ValueError(
                f"text_line_format: charset {charset!r} writes line ends as other bytes than "
                "ASCII does (as UTF-16 and UTF-32 do); lines are split at the bytes of \\n "
                "and \\r: convert such files to UTF-8"
            )
        self.charset = charset

    def read(
        self, split: str, start: int, max_records: int, progress: dict[str, SplitProgress]
    ) -> Iterator[str]:
        return read_lines(split, start, max_records, self._decode, progress)

    def _decode(self, line: bytes, path: str, offset: int) -> str:
        try:
            return line.decode(self.charset)
        except UnicodeDecodeError as exc:
            raise SourceError(
                f"FileSource cannot decode {path} as {self.charset} at byte offset {offset}: "
                f"{exc.reason}"
            ) from None


def read_lines(
    path: str, offset: int, limit: int, parse: LineParser, progress: dict[str, SplitProgress]
) -> Iterator[Any]:
    """The records of the lines of one split's planned range; records where it stopped in
    ``progress``. A line that ``parse`` turns into ``SKIP`` is consumed but is no record."""
    count = 0
    with open_at(path, offset) as handle:
        for raw in handle:
            if b"\r" not in raw:  # the common case: one line ending in "\n" (or EOF)
                record = parse(raw[:-1] if raw.endswith(b"\n") else raw, path, offset)
                offset += len(raw)
                if record is not SKIP:
                    yield record
                    count += 1
            else:
                for line, consumed in _split_carriage_returns(raw):
                    record = parse(line, path, offset)
                    offset += consumed
                    if record is not SKIP:
                        yield record
                        count += 1
                        if count >= limit:
                            break
                if offset != handle.tell():  # stopped inside a "\r"-separated run
                    break
            if count >= limit:
                break
        at_end = offset == handle.tell() and handle.read(1) == b""
        finished = count < limit or at_end
    progress[path] = SplitProgress(offset, finished)


def open_at(path: str, offset: int) -> BinaryIO:
    """The file at ``path``, open for reading from byte ``offset``, the position a split
    reached. A file shorter than that was replaced since (files must not change once
    visible): reading on would silently end, or read a record from its middle."""
    fs, local = url_to_fs(path)
    try:
        handle: BinaryIO = fs.open(local, "rb")
    except FileNotFoundError:
        raise SourceError(f"FileSource input file disappeared: {path}") from None
    if offset:
        size = handle.seek(0, os.SEEK_END)
        if size < offset:
            handle.close()
            raise SourceError(
                f"FileSource input file {path} changed since it was listed: it has {size} "
                f"bytes, but was read to byte offset {offset} already (files must not "
                "change once visible: write them elsewhere and move them in)"
            )
    handle.seek(offset)
    return handle


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


def line_number(path: str, offset: int) -> int:
    """The 1-based number of the line that starts at byte ``offset`` of ``path``, with Java's
    line ends: counted only when an error names the line, since a split's reader starts
    anywhere in the file."""
    fs, local = url_to_fs(path)
    with fs.open(local, "rb") as handle:
        return 1 + _count_line_ends(handle, offset)


def _count_line_ends(handle: BinaryIO, size: int) -> int:
    ends = 0
    previous = b""
    while size > 0:
        chunk = handle.read(min(size, 1 << 20))
        if not chunk:
            break
        size -= len(chunk)
        # "\n", and a "\r" unless a "\n" follows it (then that "\n" was counted)
        ends += chunk.count(b"\n") + chunk.count(b"\r") - chunk.count(b"\r\n")
        if previous == b"\r" and chunk[:1] == b"\n":
            ends -= 1  # a "\r\n" across two chunks: counted as "\r" and as "\n"
        previous = chunk[-1:]
    return ends
