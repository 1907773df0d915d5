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
from typing import Any

from lockgate.common.records import RecordFormatError, envelope, field, open_envelope
from lockgate.state.key_groups import KeyGroupRange
from lockgate.state.manifests import (
    CanonicalManifest,
    HeapManifest,
    KeyedStateManifest,
    manifest_from_json,
)
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


def _range(raw: dict[str, Any], name: str, where: str) -> KeyGroupRange:
    bounds = field(raw, name, list, where)
    if len(bounds) != 2 or not all(type(b) is int for b in bounds):
        raise RecordFormatError(f"{where}: field '{name}' is not [start, end]")
    return KeyGroupRange(bounds[0], bounds[1])


def _strings(raw: dict[str, Any], name: str, where: str) -> tuple[str, ...]:
    values = field(raw, name, list, where)
    if not all(isinstance(v, str) for v in values):
        raise RecordFormatError(f"{where}: field '{name}' is not a list of strings")
    return tuple(values)


def _state_map(raw: dict[str, Any], name: str, where: str) -> dict[str, str]:
    kinds = field(raw, name, dict, where)
    if not all(isinstance(v, str) for v in kinds.values()):
        raise RecordFormatError(f"{where}: field '{name}' must map state names to strings")
    return kinds


def dump(record: Any) -> str:
    """The JSON text of a record (``to_json`` of one of this module's classes)."""
    return json.dumps(record.to_json(), separators=(",", ":"))


def _open(text: str, kind: str) -> dict[str, Any]:
    where = f"state processor {kind} record"
    try:
        raw = json.loads(text)
    except ValueError:
        raise RecordFormatError(f"{where} is not JSON ({len(text)} characters)") from None
    body = open_envelope(raw, FORMAT, VERSION, where)
    if body.get("record") != kind:
        raise RecordFormatError(f"{where}: it is a {body.get('record')!r} record")
    return body


@dataclass(frozen=True)
class SubtaskFiles:
    uid: str
    name: str
    subtask: int
    max_parallelism: int
    key_groups: KeyGroupRange
    manifest: KeyedStateManifest

    def describe(self) -> str:
        return f"operator '{self.name}' (uid '{self.uid}') subtask {self.subtask}"

    def to_json(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "name": self.name,
            "subtask": self.subtask,
            "max_parallelism": self.max_parallelism,
            "key_groups": [self.key_groups.start, self.key_groups.end],
            "manifest": self.manifest.to_json(),
        }

    @staticmethod
    def from_json(raw: Any, where: str) -> SubtaskFiles:
        if not isinstance(raw, dict):
            raise RecordFormatError(f"{where}: the subtask's files are not an object")
        return SubtaskFiles(
            field(raw, "uid", str, where),
            field(raw, "name", str, where),
            field(raw, "subtask", int, where),
            field(raw, "max_parallelism", int, where),
            _range(raw, "key_groups", where),
            manifest_from_json(field(raw, "manifest", dict, where), where),
        )


@dataclass(frozen=True)
class ReadTask:
    files: SubtaskFiles
    mode: str  # KEYED or TIMERS
    state: str  # the state's name (KEYED), "" for TIMERS
    kind: str  # the state's kind as stored (KEYED), "timers" for TIMERS
    ttl_timestamps: bool  # add each value's last access time (a TTL state)

    def to_json(self) -> dict[str, Any]:
        return envelope(
            FORMAT,
            VERSION,
            {
                "record": "read",
                "files": self.files.to_json(),
                "mode": self.mode,
                "state": self.state,
                "kind": self.kind,
                "ttl_timestamps": self.ttl_timestamps,
            },
        )

    @staticmethod
    def load(text: str) -> ReadTask:
        raw = _open(text, "read")
        where = "state processor read record"
        mode = field(raw, "mode", str, where)
        if mode not in (KEYED, TIMERS):
            raise RecordFormatError(f"{where}: unknown mode {mode!r}")
        return ReadTask(
            SubtaskFiles.from_json(raw.get("files"), where),
            mode,
            field(raw, "state", str, where),
            field(raw, "kind", str, where),
            field(raw, "ttl_timestamps", bool, where),
        )


@dataclass(frozen=True)
class OperatorStateReadTask:
    subtask: int  # whose file
    state: str  # the state's name
    part: OperatorStatePart  # the state's elements in the subtask's file

    def to_json(self) -> dict[str, Any]:
        return envelope(
            FORMAT,
            VERSION,
            {
                "record": "operator-state-read",
                "subtask": self.subtask,
                "state": self.state,
                "part": self.part.to_json(),
            },
        )

    @staticmethod
    def load(text: str) -> OperatorStateReadTask:
        raw = _open(text, "operator-state-read")
        where = "state processor operator-state-read record"
        state = field(raw, "state", str, where)
        part = OperatorStatePart.from_json(raw.get("part"), where)
        if set(part.ranges) != {state}:
            raise RecordFormatError(f"{where}: its part is not of state {state!r} alone")
        return OperatorStateReadTask(field(raw, "subtask", int, where), state, part)


@dataclass(frozen=True)
class EntriesTask:
    files: SubtaskFiles
    states: tuple[str, ...]  # the states whose entries are kept
    max_parallelism: int  # whose key groups the entries go to

    def to_json(self) -> dict[str, Any]:
        return envelope(
            FORMAT,
            VERSION,
            {
                "record": "entries",
                "files": self.files.to_json(),
                "states": list(self.states),
                "max_parallelism": self.max_parallelism,
            },
        )

    @staticmethod
    def load(text: str) -> EntriesTask:
        raw = _open(text, "entries")
        where = "state processor entries record"
        return EntriesTask(
            SubtaskFiles.from_json(raw.get("files"), where),
            _strings(raw, "states", where),
            field(raw, "max_parallelism", int, where),
        )


@dataclass(frozen=True)
class BootstrapTask:
    uid: str
    key_column: str  # the first column of the rows
    states: tuple[tuple[str, str], ...]  # (name, kind as stored) of the next columns, in order
    max_parallelism: int
    now_ms: int  # the last access time of the values of TTL states

    def to_json(self) -> dict[str, Any]:
        return envelope(
            FORMAT,
            VERSION,
            {
                "record": "bootstrap",
                "uid": self.uid,
                "key_column": self.key_column,
                "states": [list(state) for state in self.states],
                "max_parallelism": self.max_parallelism,
                "now_ms": self.now_ms,
            },
        )

    @staticmethod
    def load(text: str) -> BootstrapTask:
        raw = _open(text, "bootstrap")
        where = "state processor bootstrap record"
        states = field(raw, "states", list, where)
        if not all(
            isinstance(s, list) and len(s) == 2 and all(isinstance(p, str) for p in s)
            for s in states
        ):
            raise RecordFormatError(f"{where}: field 'states' is not a list of [name, kind]")
        return BootstrapTask(
            field(raw, "uid", str, where),
            field(raw, "key_column", str, where),
            tuple((name, kind) for name, kind in states),
            field(raw, "max_parallelism", int, where),
            field(raw, "now_ms", int, where),
        )


@dataclass(frozen=True)
class WriteTask:
    uid: str
    directory: str  # URL of the new savepoint's directory
    prefix: str  # the operator's directory in it (relative)
    kinds: dict[str, str]  # every state of the operator

    def to_json(self) -> dict[str, Any]:
        return envelope(
            FORMAT,
            VERSION,
            {
                "record": "write",
                "uid": self.uid,
                "directory": self.directory,
                "prefix": self.prefix,
                "kinds": self.kinds,
            },
        )

    @staticmethod
    def load(text: str) -> WriteTask:
        raw = _open(text, "write")
        where = "state processor write record"
        return WriteTask(
            field(raw, "uid", str, where),
            field(raw, "directory", str, where),
            field(raw, "prefix", str, where),
            _state_map(raw, "kinds", where),
        )


@dataclass(frozen=True)
class WrittenSubtask:
    subtask: int
    groups: dict[int, GroupHandle]  # key group -> blob in the file (relative path)
    entries: int

    def to_json(self) -> dict[str, Any]:
        return envelope(
            FORMAT,
            VERSION,
            {
                "record": "written",
                "subtask": self.subtask,
                "groups": {str(kg): h.to_json() for kg, h in self.groups.items()},
                "entries": self.entries,
            },
        )

    @staticmethod
    def load(text: str) -> WrittenSubtask:
        raw = _open(text, "written")
        where = "state processor written record"
        groups: dict[int, GroupHandle] = {}
        for key, handle in field(raw, "groups", dict, where).items():
            if not key.isdigit():
                raise RecordFormatError(f"{where}: key group {key!r} is not a number")
            groups[int(key)] = GroupHandle.from_json(handle, f"{where}, key group {key}")
        return WrittenSubtask(
            field(raw, "subtask", int, where), groups, field(raw, "entries", int, where)
        )


@dataclass(frozen=True)
class CountedPartition:
    partition: int  # its index in the DataFrame's RDD
    rows: int

    def to_json(self) -> dict[str, Any]:
        return envelope(
            FORMAT,
            VERSION,
            {"record": "counted", "partition": self.partition, "rows": self.rows},
        )

    @staticmethod
    def load(text: str) -> CountedPartition:
        raw = _open(text, "counted")
        where = "state processor counted record"
        return CountedPartition(field(raw, "partition", int, where), field(raw, "rows", int, where))


@dataclass(frozen=True)
class OperatorStateBootstrapTask:
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

    def to_json(self) -> dict[str, Any]:
        return envelope(
            FORMAT,
            VERSION,
            {
                "record": "operator-state-bootstrap",
                "uid": self.uid,
                "state": self.state,
                "mode": self.mode,
                "key_column": self.key_column,
                "value_column": self.value_column,
                "by_subtask": self.by_subtask,
                "parallelism": self.parallelism,
                "chunks": [list(chunk) for chunk in self.chunks],
            },
        )

    @staticmethod
    def load(text: str) -> OperatorStateBootstrapTask:
        raw = _open(text, "operator-state-bootstrap")
        where = "state processor operator-state-bootstrap record"
        mode = field(raw, "mode", str, where)
        if mode not in MODES:
            raise RecordFormatError(f"{where}: unknown mode {mode!r}")
        chunks = field(raw, "chunks", list, where)
        if not all(
            isinstance(c, list) and len(c) == 4 and all(type(n) is int for n in c) for c in chunks
        ):
            raise RecordFormatError(
                f"{where}: field 'chunks' is not a list of [partition, subtask, first, end]"
            )
        return OperatorStateBootstrapTask(
            field(raw, "uid", str, where),
            field(raw, "state", str, where),
            mode,
            field(raw, "key_column", str, where),
            field(raw, "value_column", str, where),
            field(raw, "by_subtask", bool, where),
            field(raw, "parallelism", int, where),
            tuple((p, s, first, end) for p, s, first, end in chunks),
        )


@dataclass(frozen=True)
class OperatorStateWriteTask:
    uid: str
    directory: str  # URL of the new savepoint's directory
    prefix: str  # the operator's directory in it (relative)
    modes: dict[str, str]  # every operator state of the operator: name -> mode
    key_columns: dict[str, str]  # broadcast states from DataFrames: name -> key column

    def to_json(self) -> dict[str, Any]:
        return envelope(
            FORMAT,
            VERSION,
            {
                "record": "operator-state-write",
                "uid": self.uid,
                "directory": self.directory,
                "prefix": self.prefix,
                "modes": self.modes,
                "key_columns": self.key_columns,
            },
        )

    @staticmethod
    def load(text: str) -> OperatorStateWriteTask:
        raw = _open(text, "operator-state-write")
        where = "state processor operator-state-write record"
        modes = _state_map(raw, "modes", where)
        if not set(modes.values()) <= set(MODES):
            raise RecordFormatError(f"{where}: field 'modes' names an unknown mode")
        key_columns = _state_map(raw, "key_columns", where)
        if any(modes.get(name) != BROADCAST for name in key_columns):
            raise RecordFormatError(f"{where}: a key column is not of a broadcast state")
        return OperatorStateWriteTask(
            field(raw, "uid", str, where),
            field(raw, "directory", str, where),
            field(raw, "prefix", str, where),
            modes,
            key_columns,
        )


@dataclass(frozen=True)
class WrittenOperatorState:
    subtask: int
    handle: OperatorStateHandle  # its file by relative path

    def to_json(self) -> dict[str, Any]:
        return envelope(
            FORMAT,
            VERSION,
            {
                "record": "operator-state-written",
                "subtask": self.subtask,
                "handle": self.handle.to_json(),
            },
        )

    @staticmethod
    def load(text: str) -> WrittenOperatorState:
        raw = _open(text, "operator-state-written")
        where = "state processor operator-state-written record"
        return WrittenOperatorState(
            field(raw, "subtask", int, where),
            OperatorStateHandle.from_json(field(raw, "handle", dict, where), where),
        )


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
