"""Inside Spark tasks: keyed state as canonical entries on their way into a new savepoint.

An entry is ``(key group, state name, kind, key, sub, value)``, the bytes of the canonical
form (``canonical_snapshot``): a portable key, what addresses the entry below the key, and
the value as the state serializer (pickle) writes it. Entries come from an existing
savepoint's state (``existing_entries``) or from DataFrame rows (``bootstrap_entries``);
``write_subtask`` writes a partition of entries, sorted by key group, as one subtask's
canonical file.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pickle import HIGHEST_PROTOCOL, dumps
from typing import Any

from pyspark import TaskContext

from lockgate.core.fs.storage import Storage
from lockgate.state.canonical_snapshot import GroupWriter, decode_sub, read_entries, shape
from lockgate.state.key_codec import (
    NonPortableKeyError,
    decode_key,
    encode_key,
    encode_portable_key,
)
from lockgate.state.key_groups import key_group_for_hash
from lockgate.state.key_hash import stable_key_hash
from lockgate.state.savepoint_state import write_canonical_file
from lockgate.state.ttl import is_ttl_kind, raw_kind
from lockgate.state_processor.errors import StateProcessorError
from lockgate.state_processor.task_records import (
    BootstrapTask,
    EntriesTask,
    WriteTask,
    WrittenSubtask,
    dump,
)
from lockgate.state_processor.tasks.spark_values import from_spark
from lockgate.state_processor.tasks.state_files import canonical_groups

Entry = tuple[int, str, str, bytes, bytes, bytes]


def existing_entries(task_text: str) -> Iterator[Entry]:
    """The entries of the kept states of one part of a subtask's state files, in the key
    groups of the task's max parallelism (keys hashed again when it changed)."""
    task = EntriesTask.load(task_text)
    keep = set(task.states)
    max_parallelism = task.max_parallelism
    regroup = max_parallelism != task.files.max_parallelism
    for key_group, blob in canonical_groups(task.files):
        for name, kind, key, sub, value in read_entries(blob):
            if name not in keep:
                continue
            group = (
                key_group_for_hash(stable_key_hash(decode_key(key)), max_parallelism)
                if regroup
                else key_group
            )
            yield group, name, kind, key, sub, value


def bootstrap_entries(task_text: str, rows: Iterable[Any]) -> Iterator[Entry]:
    """The entries of DataFrame rows: the key, then one column per state; a null (or empty
    list or map) column leaves the key without that state."""
    task = BootstrapTask.load(task_text)
    where = f"operator {task.uid!r}"
    shapes = [(name, kind, raw_kind(kind), is_ttl_kind(kind)) for name, kind in task.states]
    now = task.now_ms
    for row in rows:
        key = from_spark(row[0])
        if key is None:
            raise StateProcessorError(f"{where}: a row's key column {task.key_column!r} is null")
        try:
            key_bytes = encode_portable_key(key)
            group = key_group_for_hash(stable_key_hash(key), task.max_parallelism)
        except (NonPortableKeyError, TypeError, ValueError) as exc:
            raise StateProcessorError(
                f"{where}, key column {task.key_column!r}: the key {key!r:.80} cannot go into "
                f"a savepoint: {exc}"
            ) from None
        for index, (name, kind, raw, ttl) in enumerate(shapes, start=1):
            value = from_spark(row[index])
            if value is None:
                continue
            if raw == "map":
                for map_key, map_value in value.items():
                    stored = (map_value, now) if ttl else map_value
                    yield group, name, kind, key_bytes, encode_key(map_key), _pickled(stored)
            elif raw == "list":
                if value:
                    stored = [(element, now) for element in value] if ttl else list(value)
                    yield group, name, kind, key_bytes, b"", _pickled(stored)
            else:
                yield group, name, kind, key_bytes, b"", _pickled((value, now) if ttl else value)


def _pickled(value: Any) -> bytes:
    return dumps(value, HIGHEST_PROTOCOL)


def write_subtask(
    task_text: str, index: int, entries: Iterable[tuple[int, tuple[str, str, bytes, bytes, bytes]]]
) -> Iterator[str]:
    """Write subtask ``index``'s entries (sorted by key group) as one canonical file in the
    new savepoint; yields what was written as a ``WrittenSubtask`` record (JSON text). A key
    with two entries of one state (two rows of the same key) fails the task."""
    task = WriteTask.load(task_text)
    blobs: dict[int, bytes] = {}
    count = 0
    current = -1
    writer = GroupWriter()
    seen: set[tuple[str, bytes, bytes]] = set()
    for key_group, (name, kind, key, sub, value) in entries:
        if key_group != current:
            if current >= 0:
                blobs[current] = writer.finish()
            current, writer, seen = key_group, GroupWriter(), set()
        entry = (name, key, sub)
        if entry in seen:
            form = shape(kind)
            below = f", map key {decode_sub(form, sub)[-1]!r}" if form.is_map else ""
            raise StateProcessorError(
                f"operator {task.uid!r}, state {name!r}: the key {decode_key(key)!r}{below} "
                "has more than one value (two rows with the same key?)"
            )
        seen.add(entry)
        writer.add(writer.state(name, kind), key, sub, value)
        count += 1
    if current >= 0:
        blobs[current] = writer.finish()
    # Named by the attempt's id, unique in the application (attempt numbers start again
    # when Spark resubmits a stage): two attempts never write one file. complete_savepoint
    # removes the losers' files.
    context = TaskContext.get()
    attempt = context.taskAttemptId() if context is not None else 0
    relative = f"{task.prefix}/{index}-{attempt}.lgcs"
    manifest = write_canonical_file(
        Storage(task.directory), relative, task.kinds, sorted(blobs.items()), task.digests
    )
    yield dump(WrittenSubtask(index, dict(manifest.groups), count))
