"""Inside Spark tasks: operator state as elements on their way into a new savepoint.

An element is ``((subtask, state name, order), pickled element)``: the subtask whose file
gets it, and what orders it there. Elements come from an existing savepoint's operator
state (``existing_elements``, in their order) or from DataFrame rows
(``bootstrap_elements``); ``write_operator_state_subtask`` writes a partition of them,
sorted, as one subtask's operator-state file with the state layer's encoder.

- list and union list state: a row's element goes to the subtask in its ``subtask`` column,
  or to the subtask of the chunk its position falls in (``CountedPartition`` counts each
  Spark partition's rows first, and the chunks are cut as a restore cuts list state); it is
  ordered by its Spark partition and its position there: the DataFrame's partition order;
- broadcast state: a row's ``(key, value)`` entry goes to every subtask, ordered by its
  key's canonical bytes (``encode_key``: equal keys, equal bytes), so that two rows of one
  key meet in the write and fail it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import Any

from pyspark import TaskContext

from lockgate.core.fs.storage import Storage
from lockgate.state.key_codec import decode_key, encode_key
from lockgate.state.operator_state_handle import (
    BROADCAST,
    KINDS,
    OperatorStateHandle,
    encode_pickled,
    pickled,
    read_pickled_part,
)
from lockgate.state_processor.errors import StateProcessorError
from lockgate.state_processor.task_records import (
    CountedPartition,
    OperatorStateBootstrapTask,
    OperatorStateReadTask,
    OperatorStateWriteTask,
    WrittenOperatorState,
    dump,
)
from lockgate.state_processor.tasks.spark_values import from_spark

Element = tuple[tuple[int, str, bytes], bytes]

_ORDER = struct.Struct(">IQ")  # Spark partition, position in it


def count_rows(partition: int, rows: Iterable[Any]) -> Iterator[str]:
    """How many rows a Spark partition has, as a ``CountedPartition`` record (JSON text)."""
    yield dump(CountedPartition(partition, sum(1 for _ in rows)))


def existing_elements(task_text: str) -> Iterator[Element]:
    """The elements an ``OperatorStateReadTask`` names, for the same subtask, as they are."""
    task = OperatorStateReadTask.load(task_text)
    for name, _mode, blobs in read_pickled_part(task.part):
        for position, blob in enumerate(blobs):
            yield (task.subtask, name, _ORDER.pack(0, position)), blob


def bootstrap_elements(task_text: str, partition: int, rows: Iterable[Any]) -> Iterator[Element]:
    """The elements of Spark partition ``partition``'s rows: ``(value[, subtask])`` for list
    and union list state, ``(key, value)`` for broadcast state."""
    task = OperatorStateBootstrapTask.load(task_text)
    where = f"operator {task.uid!r}, {KINDS[task.mode]} state {task.state!r}"
    if task.mode == BROADCAST:
        yield from _entries(task, rows, where)
        return
    chunks = [(first, end, subtask) for p, subtask, first, end in task.chunks if p == partition]
    counted = sum(end - first for first, end, _ in chunks)
    position = -1
    for position, row in enumerate(rows):
        element = from_spark(row[0])
        if element is None:
            raise StateProcessorError(
                f"{where}: column {task.value_column!r} is null in a row (list state holds no "
                "nulls)"
            )
        if task.by_subtask:
            subtask = row[1]
            if subtask is None or not 0 <= subtask < task.parallelism:
                raise StateProcessorError(
                    f"{where}: column 'subtask' has {subtask!r}, not a subtask of the "
                    f"operator's {task.parallelism} (drop the column to spread the elements "
                    "over the subtasks)"
                )
        else:
            subtask = _chunk_of(chunks, position, partition, where)
        yield (subtask, task.state, _ORDER.pack(partition, position)), pickled(element)
    if not task.by_subtask and position + 1 != counted:
        raise _recomputed(partition, where)


def _chunk_of(chunks: list[tuple[int, int, int]], position: int, partition: int, where: str) -> int:
    for first, end, subtask in chunks:
        if first <= position < end:
            return subtask
    raise _recomputed(partition, where)


def _recomputed(partition: int, where: str) -> StateProcessorError:
    return StateProcessorError(
        f"{where}: Spark partition {partition} of the DataFrame has other rows than when they "
        "were counted to cut the elements into chunks: the DataFrame must give the same rows "
        "each time Spark computes it (cache it, or read it from files)"
    )


def _entries(
    task: OperatorStateBootstrapTask, rows: Iterable[Any], where: str
) -> Iterator[Element]:
    for row in rows:
        key = from_spark(row[0])
        try:
            hash(key)
        except TypeError:
            raise StateProcessorError(
                f"{where}: the key {key!r:.80} in column {task.key_column!r} is not hashable "
                "(broadcast state is a map)"
            ) from None
        order = encode_key(key)
        blob = pickled((key, from_spark(row[1])))
        for subtask in range(task.parallelism):
            yield (subtask, task.state, order), blob


def write_operator_state_subtask(
    task_text: str, index: int, elements: Iterable[Element]
) -> Iterator[str]:
    """Write subtask ``index``'s elements (sorted) as its operator-state file in the new
    savepoint, with every state of the operator (one without elements here too); yields
    what was written as a ``WrittenOperatorState`` record (JSON text). A key with two
    entries of one broadcast state fails the task."""
    task = OperatorStateWriteTask.load(task_text)
    states: dict[str, tuple[str, list[bytes]]] = {
        name: (mode, []) for name, mode in task.modes.items()
    }
    last: tuple[str, bytes] | None = None
    for (_, name, order), blob in elements:
        if name in task.key_columns and last == (name, order):
            raise StateProcessorError(
                f"operator {task.uid!r}, broadcast state {name!r}: the key "
                f"{decode_key(order)!r:.80} is in more than one row (column "
                f"{task.key_columns[name]!r})"
            )
        last = (name, order)
        states[name][1].append(blob)
    data, metas = encode_pickled(states)
    # Named by the attempt's id, as canonical files are (write_subtask): two attempts never
    # write one file, and complete_savepoint removes the losers' files
    context = TaskContext.get()
    attempt = context.taskAttemptId() if context is not None else 0
    relative = f"{task.prefix}/{index}-{attempt}.lgos"
    Storage(task.directory).create(relative, data)
    handle = OperatorStateHandle.of(relative, data, metas, task.digests)
    yield dump(WrittenOperatorState(index, handle))
