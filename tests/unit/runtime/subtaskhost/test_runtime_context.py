"""What a function's RuntimeContext answers outside keyed state."""

from __future__ import annotations

import pytest

from lockgate.common.unsupported import NotSupportedYetError
from lockgate.runtime.subtaskhost.context import SubtaskRuntimeContext


def context() -> SubtaskRuntimeContext:
    return SubtaskRuntimeContext("Map", 1, 3, 128, 2, {"region": "eu"}, None)


def test_task_facts_and_job_parameters():
    ctx = context()
    assert ctx.get_task_name() == "Map"
    assert ctx.get_index_of_this_subtask() == 1
    assert ctx.get_number_of_parallel_subtasks() == 3
    assert ctx.get_max_number_of_parallel_subtasks() == 128
    assert ctx.get_attempt_number() == 2
    assert ctx.get_job_parameter("region", "us") == "eu"
    assert ctx.get_job_parameter("zone", "a") == "a"


def test_metrics_are_not_supported_yet_and_say_what_to_use():
    # None would fail later, at the first counter, with an AttributeError
    with pytest.raises(NotSupportedYetError, match=r"get_metrics_group .* use lockgate\.progress"):
        context().get_metrics_group()
