"""EpochJob's routing of a task's output to its consumers."""

from __future__ import annotations

from lockgate.runtime.jobmaster.epoch_job import _ToConsumer


def test_a_task_with_several_consumers_sends_each_only_its_edges():
    keep = _ToConsumer(frozenset({4}))
    assert keep((0, (4, 0, "a", 0, [1])))
    assert not keep((0, (5, 0, "a", 0, [1])))
    assert not keep((-2, ("collected",)))
