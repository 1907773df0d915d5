"""EpochPlanner: what the next epoch reads, whether a checkpoint ends it, and what each
task is handed (its descriptor and each subtask's restore)."""

from __future__ import annotations

import time

from driver_parts import collection_job, resolve, watching_job

from lockgate.checkpoint.coordinator import CheckpointCoordinator
from lockgate.checkpoint.storage import Storage
from lockgate.runtime.jobmaster.epoch_planner import EpochPlanner
from lockgate.runtime.jobmaster.failure_injector import FailureInjector
from lockgate.runtime.jobmaster.job_state import JobState
from lockgate.runtime.task_deployment import SubtaskRestore, TaskDeploymentDescriptor

GRAPH = object()  # stands for the job graph's broadcast, which tasks only carry


def planner_for(tmp_path, job, injections=(), **config):
    settings = resolve(tmp_path, **config)
    coordinator = CheckpointCoordinator(settings.checkpoint, settings.job_id, None)
    work = Storage(settings.work_dir)
    planner = EpochPlanner(
        job,
        settings,
        coordinator,
        FailureInjector(injections),
        work,
        work.child("state"),
        work.child("staging"),
    )
    return planner, JobState(job, settings.keyed_state.backend)


def descriptors(plan):
    return {
        vid: TaskDeploymentDescriptor.decode(task.descriptor) for vid, task in plan.tasks.items()
    }


def test_an_epoch_hands_every_task_its_descriptor_and_every_subtask_its_restore(tmp_path):
    job = collection_job(list(range(10)))
    planner, state = planner_for(tmp_path, job, **{"execution.checkpointing.interval": "1 h"})
    plan = planner.plan(state, 3, 4, GRAPH)
    assert plan is not None
    assert (plan.epoch, plan.run) == (1, f"{planner.settings.job_id}#3")
    assert not plan.end_of_input and not plan.checkpoint
    [source] = job.sources
    # A collection source runs at parallelism 1 (as in Flink); the cap bounds its read.
    assert {i: [a.max_records for a in s] for i, s in plan.assignments[source.id].items()} == {
        0: [4]
    }
    for vertex in job.vertices:
        descriptor = descriptors(plan)[vertex.id]
        assert (descriptor.vertex, descriptor.run, descriptor.epoch) == (vertex.id, plan.run, 1)
        assert descriptor.ack_dir == plan.ack_dir
        assert descriptor.commit_on_checkpoint  # exactly-once with checkpoints
        assert plan.tasks[vertex.id].graph is GRAPH
        restores = [
            SubtaskRestore.decode(data, vertex.id, i, plan.run)
            for i, data in enumerate(plan.restores[vertex.id])
        ]
        assert [r.subtask for r in restores] == list(range(vertex.parallelism))


def test_every_try_of_an_epoch_has_its_own_acknowledgement_directory(tmp_path):
    planner, state = planner_for(tmp_path, collection_job([1, 2, 3]))
    first = planner.plan(state, 0, 10, GRAPH)
    again = planner.plan(state, 0, 10, GRAPH)  # the epoch failed; the same epoch again
    assert first.epoch == again.epoch == 1
    assert first.ack_dir != again.ack_dir


def test_the_epoch_that_reads_the_rest_ends_the_input_with_a_checkpoint(tmp_path):
    planner, state = planner_for(
        tmp_path, collection_job([1, 2, 3]), **{"execution.checkpointing.interval": "1 h"}
    )
    plan = planner.plan(state, 0, 10, GRAPH)
    assert plan.end_of_input and plan.checkpoint  # the final checkpoint is not optional


def test_an_injected_ack_failure_goes_to_the_tasks_of_its_epoch_once(tmp_path):
    planner, state = planner_for(
        tmp_path, collection_job([1, 2, 3]), [("after-snapshot-before-ack", 1)]
    )
    first = planner.plan(state, 0, 10, GRAPH)
    assert {d.inject_failure for d in descriptors(first).values()} == {True}
    again = planner.plan(state, 1, 10, GRAPH)
    assert {d.inject_failure for d in descriptors(again).values()} == {False}


def test_without_input_an_epoch_runs_only_when_a_checkpoint_is_due(tmp_path):
    """Checkpoints follow the clock: epochs that ran since the last checkpoint get one on
    the interval, input or not; with nothing to commit, nothing runs."""
    watched = tmp_path / "in"
    watched.mkdir()
    planner, state = planner_for(
        tmp_path, watching_job(watched), **{"execution.checkpointing.interval": "10 ms"}
    )
    planner.coordinator.last_trigger -= 1  # the interval has passed
    assert planner.plan(state, 0, 10, GRAPH) is None  # nothing since the last checkpoint
    state.epoch = 1  # an epoch ran, no checkpoint covers it yet
    plan = planner.plan(state, 0, 10, GRAPH)
    assert plan is not None and plan.checkpoint and not plan.end_of_input
    assert not any(plan.assignments.values())
    assert planner.plan(state, 0, 10, GRAPH) is None  # just triggered: not due again yet


def test_without_checkpoints_an_idle_source_plans_nothing(tmp_path):
    watched = tmp_path / "in"
    watched.mkdir()
    planner, state = planner_for(tmp_path, watching_job(watched))
    state.epoch = 5
    assert planner.plan(state, 0, 10, GRAPH) is None
    (watched / "a.txt").write_text("x\ny\n")
    time.sleep(0.01)  # the next discovery is due
    plan = planner.plan(state, 0, 10, GRAPH)
    assert plan is not None and plan.epoch == 6 and any(plan.assignments.values())
