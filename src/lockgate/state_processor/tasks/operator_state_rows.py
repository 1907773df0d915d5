"""Inside a Spark task: the rows of one operator state in one subtask's operator-state file
(an ``OperatorStateReadTask``), read with the state layer's reader (``read_part``).

- list and union list state: ``(subtask, element)``, one row per element, in order;
- broadcast state: ``(key, value)``, one row per entry.

Elements are as the subtask's state held them (pickled with the file).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lockgate.state.operator_state_handle import BROADCAST, read_part
from lockgate.state_processor.task_records import OperatorStateReadTask
from lockgate.state_processor.tasks.spark_values import to_spark


def read_operator_state_rows(task_text: str) -> Iterator[tuple[Any, ...]]:
    """The rows an ``OperatorStateReadTask`` (its JSON text) asks for."""
    task = OperatorStateReadTask.load(task_text)
    for _name, mode, elements in read_part(task.part):
        for element in elements:
            if mode == BROADCAST:
                key, value = element
                yield to_spark(key), to_spark(value)
            else:
                yield task.subtask, to_spark(element)
