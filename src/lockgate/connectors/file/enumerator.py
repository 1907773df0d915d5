"""The file source's split enumerator, on the driver: which files exist, who reads each of
their splits, and how far. The source is bounded over files and directories, or monitors
them.

A split is one file (positions are byte offsets: text lines, CSV, JSON lines) or one part of
a file that its format reads on its own (a Parquet row group: positions are row offsets in
it), so a re-run of an epoch reads exactly the same records: the plan fixes the start
position and the record count, and files are immutable once they are visible (write them
elsewhere and move them in, as with Flink). A file's parts are listed once, when a listing
first shows the file (a Parquet footer is read then, on the driver); the file is finished
when all its parts are.
Names starting with '.' or '_' are hidden and skipped, as in Flink, and a path is a file's
identity, as in Flink.

What the enumerator keeps, since a continuous job may run for months: the splits it is
reading (subtask and position each; an epoch plans only these), and the paths of
finished files (read to their end) for as long as a listing still shows them. A finished
file that a listing no longer shows was deleted and is forgotten, so the state follows
what the directories hold, not their history; a checkpoint stores the finished paths
sorted and front-coded (each entry only the tail in which it differs from the previous
path). After a restore, a listed file is new exactly when it is neither being read nor
finished, so nothing is read twice and nothing that came meanwhile is missed.

Why not a watermark ("everything modified before t is done"), which would be smaller: a
file moved into a directory keeps its modification time, so a file can appear below the
watermark long after it passed and would be skipped. The rule needs a listing to show every
visible file (object stores list consistently today), and a name that is deleted and
written again between two listings counts as read. A listing (every monitor interval; once
for a bounded source) costs one pass over what it lists.
"""

from __future__ import annotations

import heapq
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Annotated, Any

from fsspec.core import url_to_fs

from lockgate.common.records import ADDED, Custom, Record, RecordFormatError
from lockgate.connectors.file.format import FileFormat, split_id
from lockgate.core.source import (
    Position,
    SourceError,
    SplitAssignment,
    SplitEnumerator,
    SplitProgress,
)

STATE_FORMAT = "lockgate-file-source-splits"
STATE_VERSION = 1


def _is_hidden(path: str, root: str) -> bool:
    relative = path[len(root) :].lstrip("/")
    return any(part.startswith((".", "_")) for part in relative.split("/") if part)


def list_visible_files(paths: list[str]) -> list[str]:
    """Visible files under ``paths``, as URLs, in a stable order."""
    found: list[str] = []
    for path in paths:
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


@dataclass(frozen=True)
class FileSplit(Record):
    """A split being read: the file, the subtask that reads it and the position it reached;
    ``part`` is the part of the file (a Parquet row group), None for the whole file."""

    path: str
    subtask: int
    position: Position
    part: Annotated[int | None, ADDED] = None  # added with formats that split files

    @property
    def id(self) -> str:
        return split_id(self.path, self.part)


def _front_code(paths: Iterable[str]) -> list[list[Any]]:
    """Paths in order, each as ``[length of the prefix shared with the previous path, the
    rest]``."""
    coded: list[list[Any]] = []
    previous = ""
    for path in sorted(paths):
        shared = len(os.path.commonprefix((previous, path)))  # noqa: RUF071 (by character)
        coded.append([shared, path[shared:]])
        previous = path
    return coded


def _front_decode(coded: Any, where: str) -> tuple[str, ...]:
    if not isinstance(coded, list):
        raise RecordFormatError(f"{where} is {type(coded).__name__} {coded!r:.80}, not a list")
    paths: list[str] = []
    previous = ""
    for number, entry in enumerate(coded):
        if not (
            isinstance(entry, list)
            and len(entry) == 2
            and type(entry[0]) is int
            and isinstance(entry[1], str)
            and 0 <= entry[0] <= len(previous)
        ):
            raise RecordFormatError(
                f"{where}: entry {number} is {entry!r:.80}, not [length of the prefix shared "
                "with the previous path, rest of the path]"
            )
        path = previous[: entry[0]] + entry[1]
        if path <= previous:  # sorted and unique, so that a damaged list does not pass
            raise RecordFormatError(
                f"{where}: entry {number} ({path!r:.80}) does not sort after the path before it"
            )
        paths.append(path)
        previous = path
    return tuple(paths)


@dataclass(frozen=True)
class FileEnumeratorState(Record, format=STATE_FORMAT, version=STATE_VERSION):
    """The checkpoint state of a ``FileEnumerator``."""

    reading: tuple[FileSplit, ...]  # splits not read to their end, by path and part
    # files read to their end that the last listing showed, sorted (front-coded in JSON)
    finished: Annotated[tuple[str, ...], Custom(_front_code, _front_decode)]
    # the parallelism the splits were assigned at (None: a checkpoint from before it was kept)
    parallelism: Annotated[int | None, ADDED] = None

    def validate(self, where: str) -> None:
        splits = Counter(split.id for split in self.reading)
        for split, count in splits.items():
            if count > 1:
                raise RecordFormatError(f"{where}: {split} is in 'reading' {count} times")
        both = {split.path for split in self.reading} & set(self.finished)
        if both:
            raise RecordFormatError(f"{where}: {min(both)} is both being read and finished")


def _split_order(split: FileSplit) -> tuple[str, int]:
    return split.path, -1 if split.part is None else split.part


def _balanced(splits: tuple[FileSplit, ...], parallelism: int) -> tuple[FileSplit, ...]:
    """``splits`` spread over ``parallelism`` subtasks, after a restore at another
    parallelism: a split stays on its subtask while that subtask holds no more than an
    equal share, the others go to the subtasks reading the fewest (new subtasks of a higher
    parallelism among them). A split goes on from its position wherever it is read."""
    share = -(-len(splits) // parallelism)
    kept: Counter[int] = Counter()
    placed: list[FileSplit] = []
    moved: list[FileSplit] = []
    for split in splits:
        if split.subtask < parallelism and kept[split.subtask] < share:
            kept[split.subtask] += 1
            placed.append(split)
        else:
            moved.append(split)
    least_busy = [(kept[subtask], subtask) for subtask in range(parallelism)]
    heapq.heapify(least_busy)
    for split in moved:
        count, subtask = least_busy[0]
        heapq.heapreplace(least_busy, (count + 1, subtask))
        placed.append(replace(split, subtask=subtask))
    return tuple(placed)


class FileEnumerator(SplitEnumerator):
    """Discovers files, lists their splits, gives each new split to the subtask reading the
    fewest, and tracks its position until it is read to its end (see the module docstring
    for what it keeps)."""

    def __init__(
        self,
        list_files: Callable[[], list[str]],
        monitor_interval_ms: int | None,
        parallelism: int,
        file_format: FileFormat,
    ):
        self.list_files = list_files  # the source's listing of its visible files
        self.file_format = file_format  # its parts of a file (split_file; None: whole file)
        self.monitor_interval_ms = monitor_interval_ms
        self.bounded = monitor_interval_ms is None
        self.parallelism = parallelism
        self.reading: dict[str, FileSplit] = {}  # by split id
        self.open_splits: Counter[str] = Counter()  # splits being read, by file
        self.finished: set[str] = set()
        # monotonic time of the next listing; None once a bounded source has listed its files
        self.next_listing: float | None = 0.0

    def _list(self) -> None:
        listed = self.list_files()
        self.finished.intersection_update(listed)  # the others were deleted
        reading = Counter(split.subtask for split in self.reading.values())
        least_busy = [(reading[subtask], subtask) for subtask in range(self.parallelism)]
        heapq.heapify(least_busy)
        for path in listed:
            if path in self.open_splits or path in self.finished:
                continue
            parts = self.file_format.split_file(path)
            if parts == []:  # nothing to read (a Parquet file without row groups)
                self.finished.add(path)
            for part in [None] if parts is None else parts:
                count, subtask = least_busy[0]
                heapq.heapreplace(least_busy, (count + 1, subtask))
                self._add(FileSplit(path, subtask, 0, part))
        interval = self.monitor_interval_ms
        self.next_listing = None if interval is None else time.monotonic() + interval / 1000

    def _add(self, split: FileSplit) -> None:
        self.reading[split.id] = split
        self.open_splits[split.path] += 1

    def plan(self, max_records_per_split: int) -> dict[int, list[SplitAssignment]]:
        if self.next_listing is not None and time.monotonic() >= self.next_listing:
            self._list()
        assignments: dict[int, list[SplitAssignment]] = {}
        for key, split in self.reading.items():
            assignments.setdefault(split.subtask, []).append(
                SplitAssignment(key, split.position, max_records_per_split, False)
            )
        return assignments

    def acknowledge(self, progress: dict[str, SplitProgress]) -> None:
        for key, report in progress.items():
            split = self.reading[key]
            if report.finished:
                del self.reading[key]
                self.open_splits[split.path] -= 1
                if not self.open_splits[split.path]:
                    del self.open_splits[split.path]
                    self.finished.add(split.path)
            else:
                self.reading[key] = replace(split, position=report.position)

    def is_finished(self) -> bool:
        return self.bounded and self.next_listing is None and not self.reading

    def snapshot(self) -> dict[str, Any]:
        if self.bounded and self.next_listing is not None:
            # A bounded source reads the files of its one listing: a checkpoint holds them,
            # even one taken before the first epoch was planned.
            self._list()
        reading = tuple(sorted(self.reading.values(), key=_split_order))
        finished = tuple(sorted(self.finished))
        state: dict[str, Any] = FileEnumeratorState(reading, finished, self.parallelism).to_json()
        return state

    def restore(self, snapshot: Any, where: str) -> None:
        state = FileEnumeratorState.from_json(snapshot, where)
        for split in state.reading:
            if split.subtask < 0:
                raise RecordFormatError(f"{where}: {split.id} is read by subtask {split.subtask}")
            if (split.part is not None) != self.file_format.splits_files:
                kind = "a part of a file" if split.part is not None else "a whole file"
                raise RecordFormatError(
                    f"{where}: the split {split.id} is {kind}, which {self.file_format.name} does "
                    "not read: the source with this uid read another format when it was "
                    "checkpointed (give a source of another format another uid)"
                )
        self.reading = {}
        self.open_splits = Counter()
        splits = state.reading
        if state.parallelism != self.parallelism:
            splits = _balanced(splits, self.parallelism)
        for split in splits:
            self._add(split)
        self.finished = set(state.finished)
        # A bounded source's files are those of the checkpoint; a continuous one lists at
        # once, since files may have come and gone after the checkpoint.
        self.next_listing = None if self.bounded else 0.0
