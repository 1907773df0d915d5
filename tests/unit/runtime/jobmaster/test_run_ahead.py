"""Pipelined epochs: which jobs run their sources ahead, and when a run-ahead is used."""

from __future__ import annotations

from driver_parts import Passthrough, collection_job, file_sink_job, watching_job

from lockgate.datastream import StreamExecutionEnvironment
from lockgate.graph.job_graph import build_job_graph
from lockgate.runtime.jobmaster.epoch_job import SourceStages, pipelines
from lockgate.runtime.jobmaster.epoch_plan import EpochPlan
from lockgate.runtime.jobmaster.job_state import JobState
from lockgate.runtime.jobmaster.run_ahead import RunAhead


def test_jobs_whose_source_tasks_feed_one_task_and_run_no_sink_pipeline(tmp_path):
    assert pipelines(collection_job([1, 2, 3]))
    assert pipelines(file_sink_job(tmp_path))  # its sink is in a task of its own
    assert not pipelines(watching_job(tmp_path))  # prints in its source task
    env = StreamExecutionEnvironment()
    numbers = env.from_collection([1, 2, 3]).uid("numbers")
    numbers.print().uid("printed")  # chained to the source
    numbers.key_by(lambda x: x).process(Passthrough()).uid("counter")
    assert not pipelines(build_job_graph(env._transformations, 1, 128))


def test_a_source_task_with_two_consumers_does_not_pipeline():
    env = StreamExecutionEnvironment()
    numbers = env.from_collection([1, 2, 3]).uid("numbers")
    numbers.key_by(lambda x: x).process(Passthrough()).uid("one")
    numbers.key_by(lambda x: -x).process(Passthrough()).uid("two")
    assert not pipelines(build_job_graph(env._transformations, 2, 128))


def run_ahead_of(job, state: JobState) -> RunAhead:
    """A run-ahead of epoch 2 that assumed source subtask 0 ran attempt "a1" in epoch 1."""
    [source] = job.sources
    enumerator = state.enumerators[source.id]
    enumerator.plan(2)
    twin = enumerator.ahead()
    twin.plan(2)
    plan = EpochPlan(
        2, 0, "job#0", "t", "epochs/t", False, frozenset(), None, False, False, {}, {}, {}
    )
    stages = SourceStages("group", "epoch 2", {}, {}, [])
    return RunAhead(plan, {source.id: twin}, {(source.id, 0): "a1"}, stages)


def test_a_run_ahead_is_used_when_it_rests_on_what_the_epoch_before_turned_out_to_be():
    job = collection_job(list(range(10)))
    [source] = job.sources
    state = JobState(job, "hashmap")
    ahead = run_ahead_of(job, state)
    state.versions[(source.id, 0)] = "a1"  # epoch 1 accepted: the assumed attempt
    state.enumerators[source.id].positions["0"] = 2
    assert ahead.mismatch(state) is None


def test_another_accepted_attempt_of_a_source_subtask_drops_the_run_ahead():
    job = collection_job(list(range(10)))
    [source] = job.sources
    state = JobState(job, "hashmap")
    ahead = run_ahead_of(job, state)
    state.versions[(source.id, 0)] = "a2"  # its stage ran again: another attempt's output
    state.enumerators[source.id].positions["0"] = 2
    assert "attempt a2 of subtask 0" in (ahead.mismatch(state) or "")


def test_a_source_position_other_than_assumed_drops_the_run_ahead():
    job = collection_job(list(range(10)))
    [source] = job.sources
    state = JobState(job, "hashmap")
    ahead = run_ahead_of(job, state)
    state.versions[(source.id, 0)] = "a1"
    state.enumerators[source.id].positions["0"] = 1
    assert "not where it was assumed" in (ahead.mismatch(state) or "")
