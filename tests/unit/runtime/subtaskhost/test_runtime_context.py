"""What a function's RuntimeContext answers outside keyed state."""

from __future__ import annotations

from lockgate.metrics import MetricGroup
from lockgate.runtime.messages.metric_value import CounterValue
from lockgate.runtime.subtaskhost.context import SubtaskRuntimeContext
from lockgate.runtime.subtaskhost.metrics import OperatorMetrics


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


def test_the_metric_group_is_the_operators():
    metrics = OperatorMetrics("operator 'Map'", lambda: 0.0)
    ctx = SubtaskRuntimeContext("Map", 0, 1, 128, 0, {}, None, metrics.group())
    group = ctx.get_metrics_group()
    assert isinstance(group, MetricGroup)
    group.counter("seen").inc(2)
    assert metrics.report() == {"seen": CounterValue(2)}
