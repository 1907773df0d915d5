"""How a ``FileSource`` reads its files: one source and one enumerator for every format, and
a ``FileFormat`` that knows the format's splits and records.

A format answers two questions. On the driver, once per file, when a listing first shows it:
which parts of the file are splits of their own (a Parquet file's row groups, each read by
row offset), or whether the whole file is one split read by byte offset (text lines, CSV,
JSON lines). Inside a subtask host: the records of one split from a planned position, at
most a planned number, and the position after the last one. A position always lies at a
record's start, so a re-run of an epoch reads exactly the same records.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any

from lockgate.core.source import SplitProgress


def split_id(path: str, part: int | None) -> str:
    """The split of a whole file is named by its path; a part of a file by the path and
    ``#<part>`` (a format with parts reads its ids back with ``split_path``)."""
    return path if part is None else f"{path}#{part}"


def split_path(split: str) -> tuple[str, int]:
    """The file and part of a split id of a format with parts (``<path>#<part>``): the
    suffix is always there, so a '#' inside the path does not confuse it."""
    path, _, part = split.rpartition("#")
    return path, int(part)


class FileFormat(ABC):
    """Reads one format's files for ``FileSource`` (see the module docstring)."""

    #: names the format in errors ("CsvReaderFormat cannot read ...")
    name: str = "FileSource"
    #: the row type of the records it reads (``Source.produced_type``); None for text lines
    produced_type: Any = None
    #: its splits are parts of files (``split_file`` gives them), not whole files
    splits_files: bool = False

    def validate(self, list_files: Callable[[], list[str]]) -> None:
        """Check, on the driver before the first epoch, what can be checked of the files
        before reading them (a Parquet footer's columns); raises ``SourceError``."""

    def split_file(self, path: str) -> list[int] | None:
        """On the driver, when a listing first shows ``path``: the numbers of the parts read
        as splits of their own, or None when the file is one split read by byte offset. A
        file this format cannot read raises ``SourceError`` naming it."""
        return None

    @abstractmethod
    def read(
        self, split: str, start: int, max_records: int, progress: dict[str, SplitProgress]
    ) -> Iterator[Any]:
        """At most ``max_records`` records of ``split`` from position ``start``; records in
        ``progress[split]`` the position after the last one and whether the split is read
        to its end."""
