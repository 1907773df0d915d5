"""Reading a text-line file split inside a subtask host: from the planned byte offset, at most
the planned number of lines, with Java's line ends ("\\n", "\\r\\n", a lone "\\r").
"""

from __future__ import annotations

from collections.abc import Iterator

from fsspec.core import url_to_fs

from lockgate.core.source import SourceError, SplitAssignment, SplitProgress


def read_lines(
    assignment: SplitAssignment, charset: str, progress: dict[str, SplitProgress]
) -> Iterator[str]:
    """The lines of one split's planned range; records where it stopped in ``progress``."""
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
                    yield _decode(charset, raw[:-1] if raw.endswith(b"\n") else raw, path, offset)
                    offset += len(raw)
                    count += 1
                else:
                    for line, consumed in _split_carriage_returns(raw):
                        yield _decode(charset, line, path, offset)
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


def _decode(charset: str, line: bytes, path: str, offset: int) -> str:
    try:
        return line.decode(charset)
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"FileSource cannot decode {path} as {charset} at byte offset {offset}: {exc.reason}"
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
