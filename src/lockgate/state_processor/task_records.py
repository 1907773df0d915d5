"""What the driver hands the state processor's Spark tasks, and what they hand back: typed,
versioned JSON records (never pickle), one per task or partition.

- ``SubtaskFiles``: the keyed state of one subtask of an operator, as its ``_metadata``
  names it (a manifest of any backend, the key-group range, the max parallelism);
- ``ReadTask``: rows of one state (or of the timers) of a ``SubtaskFiles``;
- ``OperatorStateReadTask``: rows of one operator state (list, union list or broadcast) of
  one subtask's operator-state file;
- ``EntriesTask``: the canonical entries of a ``SubtaskFiles``, of the states kept, into the
  key groups of a max parallelism (a rewrite);
- ``BootstrapTask``: the canonical entries of DataFrame rows (a key column and a column per
  state);
- ``WriteTask``: where and how a partition of entries becomes one subtask's canonical file;
- ``WrittenSubtask``: what that task wrote;
- ``CountedPartition``: the rows of one Spark partition of a DataFrame, counted to cut its
  elements into the chunks of list state;
- ``OperatorStateBootstrapTask``: the elements of one operator state from DataFrame rows,
  and the subtasks they go to;
- ``OperatorStateWriteTask``: where a partition of elements becomes one subtask's
  operator-state file;
- ``WrittenOperatorState``: what that task wrote.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar, Self

from lockgate.common.records import Record, RecordFormatError
from lockgate.state.key_groups import KeyGroupRange
from lockgate.state.manifests import CanonicalManifest, HeapManifest, KeyedStateManifest
from lockgate.state.operator_state_handle import (
    BROADCAST,
    MODES,
    OperatorStateHandle,
    OperatorStatePart,
)
from lockgate.state.snapshot import GroupHandle

FORMAT = "lockgate-state-processor-task"
VERSION = 1

KEYED = "keyed"  # ReadTask.mode: rows of one keyed state
TIMERS = "timers"  # ReadTask.mode: rows of the operator's timers


def dump(record: Record) -> str:
    """The JSON text of a record of this module (what a task or its result carries)."""
    return json.dumps(record.to_json(), separators=(",", ":"))


@dataclass(frozen=True)
class _TaskRecord(Record, format=FORMAT, version=VERSION, tag="record"):
    """One format for all, the field "record" says which one."""

    record: ClassVar[str]

    @classmethod
    def load(cls, text: str) -> Self:
        return cls.decode(text, f"state processor {cls.record} record")


@dataclass(frozen=True)
class SubtaskFiles(Record):
    uid: str
    name: str
    subtask: int
    max_parallelism: int
    key_groups: KeyGroupRange
    manifest: KeyedStateManifest

    def describe(self) -> str:
        return f"operator '{self.name}' (uid '{self.uid}') subtask {self.subtask}"


@dataclass(frozen=True)
class ReadTask(_TaskRecord):
    record: ClassVar[str] = "read"
    files: SubtaskFiles
    mode: str  # KEYED or TIMERS
    state: str  # the state's name (KEYED), "" for TIMERS
    kind: str  # the state's kind as stored (KEYED), "timers" for TIMERS
    ttl_timestamps: bool  # add each value's last access time (a TTL state)

    def validate(self, where: str) -> None:
        if self.mode not in (KEYED, TIMERS):
            raise RecordFormatError(f"{where}: unknown mode {self.mode!r}")


@dataclass(frozen=True)
class OperatorStateReadTask(_TaskRecord):
    record: ClassVar[str] = "operator-state-read"
    subtask: int  # whose file
    state: str  # the state's name
    part: OperatorStatePart  # the state's elements in the subtask's file

    def validate(self, where: str) -> None:
        if set(self.part.ranges) != {self.state}:
            raise RecordFormatError(f"{where}: its part is not of state {self.state!r} alone")


@dataclass(frozen=True)
class EntriesTask(_TaskRecord):
    record: ClassVar[str] = "entries"
    files: SubtaskFiles
    states: tuple[str, ...]  # the states whose entries are kept
    max_parallelism: int  # whose key groups the entries go to


@dataclass(frozen=True)
class BootstrapTask(_TaskRecord):
    record: ClassVar[str] = "bootstrap"
    uid: str
    key_column: str  # the first column of the rows
    states: tuple[tuple[str, str], ...]  # (name, kind as stored) of the next columns, in order
    max_parallelism: int
    now_ms: int  # the last access time of the values of TTL states


@dataclass(frozen=True)
class WriteTask(_TaskRecord):
    record: ClassVar[str] = "write"
    uid: str
    directory: str  # URL of the new savepoint's directory
    prefix: str  # the operator's directory in it (relative)
    kinds: dict[str, str]  # every state of the operator
    digests: bool  # handles carry digests: the savepoint is signed


@dataclass(frozen=True)
class WrittenSubtask(_TaskRecord):
    record: ClassVar[str] = "written"
    subtask: int
    groups: dict[int, GroupHandle]  # key group -> blob in the file (relative path)
    entries: int


@dataclass(frozen=True)
class CountedPartition(_TaskRecord):
    record: ClassVar[str] = "counted"
    partition: int  # its index in the DataFrame's RDD
    rows: int


@dataclass(frozen=True)
class OperatorStateBootstrapTask(_TaskRecord):
    record: ClassVar[str] = "operator-state-bootstrap"
    uid: str
    state: str
    mode: str  # SPLIT_DISTRIBUTE, UNION or BROADCAST
    key_column: str  # the first column of the rows (broadcast state); "" for list states
    value_column: str  # the next column
    by_subtask: bool  # a last column gives each element's subtask (list, union list)
    parallelism: int
    # (Spark partition, subtask, first, end): the subtask of the partition's rows [first,
    # end), when the elements are cut into chunks (list, union list state without subtasks)
    chunks: tuple[tuple[int, int, int, int], ...]

    def validate(self, where: str) -> None:
        if self.mode not in MODES:
            raise RecordFormatError(f"{where}: unknown mode {self.mode!r}")


@dataclass(frozen=True)
class OperatorStateWriteTask(_TaskRecord):
    record: ClassVar[str] = "operator-state-write"
    uid: str
    directory: str  # URL of the new savepoint's directory
    prefix: str  # the operator's directory in it (relative)
    modes: dict[str, str]  # every operator state of the operator: name -> mode
    key_columns: dict[str, str]  # broadcast states from DataFrames: name -> key column
    digests: bool  # handles carry digests: the savepoint is signed

    def validate(self, where: str) -> None:
        if not set(self.modes.values()) <= set(MODES):
            raise RecordFormatError(f"{where}: field 'modes' names an unknown mode")
        if any(self.modes.get(name) != BROADCAST for name in self.key_columns):
            raise RecordFormatError(f"{where}: a key column is not of a broadcast state")


@dataclass(frozen=True)
class WrittenOperatorState(_TaskRecord):
    record: ClassVar[str] = "operator-state-written"
    subtask: int
    handle: OperatorStateHandle  # its file by relative path


def split_by_file(files: SubtaskFiles) -> list[SubtaskFiles]:
    """One part per state file of a key-groups manifest (a heap checkpoint names many; a
    savepoint one per subtask), so each file is read by a task of its own; a RocksDB
    instance is one part."""
    manifest = files.manifest
    if not isinstance(manifest, HeapManifest | CanonicalManifest):
        return [files]
    by_file: dict[str, list[int]] = {}
    for key_group, handle in sorted(manifest.groups.items()):
        by_file.setdefault(handle.file, []).append(key_group)
    return [
        SubtaskFiles(
            files.uid,
            files.name,
            files.subtask,
            files.max_parallelism,
            files.key_groups,
            type(manifest)(manifest.kinds, {kg: manifest.groups[kg] for kg in key_groups}),
        )
        for key_groups in by_file.values()
    ]
