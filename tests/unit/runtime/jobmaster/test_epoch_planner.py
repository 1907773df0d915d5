"""EpochPlanner: what the next epoch reads, whether a checkpoint ends it, and what each
task is handed (its descriptor and each subtask's restore)."""

from __future__ import annotations

import time
from dataclasses import replace

from driver_parts import collection_job, resolve, watching_job

from lockgate.runtime.jobmaster.epoch_planner import EpochPlanner
from lockgate.runtime.jobmaster.job_context import JobContext
from lockgate.runtime.messages.acknowledgement import SubtaskAck
from lockgate.runtime.messages.task_deployment import SubtaskRestore, TaskDeploymentDescriptor

GRAPH = object()  # stands for the job graph's broadcast, which tasks only carry


def planner_for(tmp_path, job, injections=(), **config):
    settings = replace(resolve(tmp_path, **config), injections=frozenset(injections))
    ctx = JobContext.create(job, settings)
    return EpochPlanner(ctx), ctx.state


def descriptors(plan):
    return {
        vid: TaskDeploymentDescriptor.decode(task.descriptor) for vid, task in plan.tasks.items()
    }


def test_an_epoch_hands_every_task_its_descriptor_and_every_subtask_its_restore(tmp_path):
    job = collection_job(list(range(10)))
    planner, _ = planner_for(tmp_path, job, **{"execution.checkpointing.interval": "1 h"})
    plan = planner.plan(3, 4, GRAPH)
    assert plan is not None
    assert (plan.epoch, plan.run) == (1, f"{planner.ctx.settings.job_id}#3")
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
        task = plan.tasks[vertex.id]
        assert task.graph is GRAPH
        # a source's restores ride with its partitions, other tasks' with their function
        carried = plan.source_restores.get(vertex.id)
        assert (carried is None) == (task.restores is not None) == (not vertex.is_source)
        restores = [
            SubtaskRestore.for_subtask(data, vertex.id, i, plan.run)
            for i, data in enumerate(carried or task.restores)
        ]
        assert [r.subtask for r in restores] == list(range(vertex.parallelism))


def test_every_try_of_an_epoch_has_its_own_acknowledgement_directory(tmp_path):
    planner, _ = planner_for(tmp_path, collection_job([1, 2, 3]))
    first = planner.plan(0, 10, GRAPH)
    again = planner.plan(0, 10, GRAPH)  # the epoch failed; the same epoch again
    assert first.epoch == again.epoch == 1
    assert first.ack_dir != again.ack_dir


def test_the_epoch_that_reads_the_rest_ends_the_input_with_a_checkpoint(tmp_path):
    planner, _ = planner_for(
        tmp_path, collection_job([1, 2, 3]), **{"execution.checkpointing.interval": "1 h"}
    )
    plan = planner.plan(0, 10, GRAPH)
    assert plan.end_of_input and plan.checkpoint  # the final checkpoint is not optional


def test_an_injected_ack_failure_goes_to_the_tasks_of_its_epoch_once(tmp_path):
    planner, _ = planner_for(
        tmp_path, collection_job([1, 2, 3]), [("after-snapshot-before-ack", 1)]
    )
    first = planner.plan(0, 10, GRAPH)
    assert {d.inject_failure for d in descriptors(first).values()} == {True}
    again = planner.plan(1, 10, GRAPH)
    assert {d.inject_failure for d in descriptors(again).values()} == {False}


def test_without_input_an_epoch_runs_only_when_a_checkpoint_is_due(tmp_path):
    """Checkpoints follow the clock: epochs that ran since the last checkpoint get one on
    the interval, input or not; with nothing to commit, nothing runs."""
    watched = tmp_path / "in"
    watched.mkdir()
    planner, state = planner_for(
        tmp_path, watching_job(watched), **{"execution.checkpointing.interval": "10 ms"}
    )
    planner.ctx.coordinator.last_trigger -= 1  # the interval has passed
    assert planner.plan(0, 10, GRAPH) is None  # nothing since the last checkpoint
    state.epoch = 1  # an epoch ran, no checkpoint covers it yet
    plan = planner.plan(0, 10, GRAPH)
    assert plan is not None and plan.checkpoint and not plan.end_of_input
    assert not any(plan.assignments.values())
    assert planner.plan(0, 10, GRAPH) is None  # just triggered: not due again yet


def test_without_checkpoints_an_idle_source_plans_nothing(tmp_path):
    watched = tmp_path / "in"
    watched.mkdir()
    planner, state = planner_for(tmp_path, watching_job(watched))
    state.epoch = 5
    assert planner.plan(0, 10, GRAPH) is None
    (watched / "a.txt").write_text("x\ny\n")
    time.sleep(0.01)  # the next discovery is due
    plan = planner.plan(0, 10, GRAPH)
    assert plan is not None and plan.epoch == 6 and any(plan.assignments.values())


# Pipelined epochs: the next epoch's sources planned while an epoch runs -----------------------


def source_acks(job, plan, attempt="a7"):
    """The acks the source subtasks of ``plan`` wrote, one each."""
    return {
        (vertex.id, index): SubtaskAck(
            vertex.id,
            index,
            plan.epoch,
            plan.run,
            f"{attempt}-{index}",
            0,
            {},
            None,
            {"numbers": {"seen": index}},
            {"numbers": 100 + index},
            None,
            False,
            "",
            1.0,
            {},
            {},
        )
        for vertex in job.sources
        for index in range(vertex.parallelism)
    }


def planned_ahead(tmp_path):
    """Epoch 1 of 4 records per split, running, and epoch 2's sources planned ahead."""
    job = collection_job(list(range(10)))
    planner, state = planner_for(tmp_path, job, **{"execution.checkpointing.interval": "1 ms"})
    first = planner.plan(0, 4, GRAPH)
    [source] = job.sources
    twins = {source.id: state.enumerators[source.id].ahead()}
    ahead = planner.plan_ahead(first, twins, source_acks(job, first), 4, GRAPH)
    return job, planner, state, first, ahead


def test_the_next_epoch_is_planned_ahead_from_where_the_running_one_leaves_the_sources(tmp_path):
    job, _, _, first, ahead = planned_ahead(tmp_path)
    [source] = job.sources
    assert ahead is not None and (ahead.epoch, ahead.run) == (2, first.run)
    assert ahead.ack_dir != first.ack_dir
    [assignment] = ahead.assignments[source.id][0]
    assert (assignment.start, assignment.max_records) == (4, 4)
    assert set(ahead.tasks) == {source.id}  # the tasks after the sources wait for epoch 1
    [restore] = [
        SubtaskRestore.for_subtask(data, source.id, i, ahead.run)
        for i, data in enumerate(ahead.source_restores[source.id])
    ]
    # the source subtask goes on from the very attempt of epoch 1 that ran (its ack's)
    assert (restore.attempt, restore.operators) == ("a7-0", {"numbers": {"seen": 0}})
    assert not ahead.checkpoint  # decided when the plan is completed


def test_a_plan_made_ahead_is_completed_with_the_state_the_epoch_before_left(tmp_path):
    job, planner, state, _, ahead = planned_ahead(tmp_path)
    [source] = job.sources
    state.versions[(source.id + 1, 1)] = "keyed-version"  # epoch 1 accepted
    time.sleep(0.002)  # the checkpoint interval passed
    whole = planner.complete(ahead, GRAPH)
    assert set(whole.tasks) == {v.id for v in job.vertices}
    assert whole.checkpoint  # on the clock, once the epoch before completed
    counter = job.vertex(source.id + 1)
    restores = [
        SubtaskRestore.for_subtask(data, counter.id, i, whole.run)
        for i, data in enumerate(whole.tasks[counter.id].restores)
    ]
    assert [r.attempt for r in restores] == [None, "keyed-version"]
    assert {d.epoch for d in descriptors(whole).values()} == {2}


def test_nothing_is_planned_ahead_past_the_end_of_the_input(tmp_path):
    job = collection_job(list(range(4)))
    planner, state = planner_for(tmp_path, job)
    first = planner.plan(0, 4, GRAPH)
    assert first.end_of_input
    [source] = job.sources
    twins = {source.id: state.enumerators[source.id].ahead()}
    assert planner.plan_ahead(first, twins, source_acks(job, first), 4, GRAPH) is None
