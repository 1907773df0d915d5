"""Epoch planning: what the next epoch reads and what each Spark task is handed.

Each source's enumerator plans its subtasks' input, bounded by the epoch cap. An epoch
runs when there is input, when the sources are finished (the final epoch), or when a
checkpoint is due with epochs not yet covered by one: checkpoints follow the clock, not
the input, so that everything read is committed within about one interval. The
coordinator decides whether the epoch ends with a checkpoint.
"""

from __future__ import annotations

from dataclasses import replace

from pyspark import Broadcast

from lockgate.common.clock import processing_time_ms
from lockgate.core.source import SplitAssignment, SplitEnumerator
from lockgate.graph.job_graph import JobVertex
from lockgate.runtime.jobmaster.epoch_job import reports_attempt
from lockgate.runtime.jobmaster.epoch_plan import EpochPlan
from lockgate.runtime.jobmaster.job_context import JobContext
from lockgate.runtime.jobmaster.job_state import whole_parts
from lockgate.runtime.jobmaster.savepoints import SavepointRequest
from lockgate.runtime.messages.acknowledgement import SubtaskAck
from lockgate.runtime.messages.task_deployment import (
    SubtaskRestore,
    TaskDeploymentDescriptor,
    run_id,
)
from lockgate.runtime.sparktask.epoch_task import EpochTask


class EpochPlanner:
    def __init__(self, ctx: JobContext):
        self.ctx = ctx
        self.tries = 0  # every planned epoch, retries included: names its files apart

    def plan(
        self,
        generation: int,
        max_records: int,
        graph: Broadcast[bytes],
        savepoint: SavepointRequest | None = None,
    ) -> EpochPlan | None:
        """The next epoch of restore ``generation``, or None while continuous sources have
        nothing new and no checkpoint is due. ``graph`` is the job graph's broadcast. An
        epoch that ends with ``savepoint`` always runs; if it is also a checkpoint, its
        output is committed as any checkpoint's."""
        state = self.ctx.state
        enumerators = state.enumerators
        assignments = {vid: e.plan(max_records) for vid, e in enumerators.items()}
        finished = all(e.is_finished() for e in enumerators.values())
        if (
            savepoint is None
            and not any(assignments.values())
            and not finished
            and not self._idle_checkpoint_due()
            and not self._timer_due()
        ):
            return None
        ending = _ending(enumerators)
        if savepoint is not None and savepoint.drain:
            ending = frozenset(enumerators)  # event time ends for every source
        # The last epoch and a savepoint's are checkpoints whenever checkpointing is on
        checkpoint = self.ctx.coordinator.due(
            len(ending) == len(enumerators) or savepoint is not None
        )
        if checkpoint:
            self.ctx.coordinator.triggered()
        frame = self._frame(state.epoch + 1, generation, ending, checkpoint, assignments)
        if savepoint is not None:
            assert savepoint.directory is not None
            frame = replace(frame, savepoint_url=savepoint.directory.url)
        restores = {
            vertex.id: [restore.encode() for restore in state.restore_for(vertex, frame.run)]
            for vertex in self.ctx.job.vertices
        }
        return self._with_tasks(
            frame, self.ctx.job.vertices, restores, state.committed_epoch, graph
        )

    def plan_ahead(
        self,
        after: EpochPlan,
        twins: dict[int, SplitEnumerator],
        acks: dict[tuple[int, int], SubtaskAck],
        max_records: int,
        graph: Broadcast[bytes],
    ) -> EpochPlan | None:
        """The source tasks of the epoch after ``after``, which is running and whose source
        subtasks acknowledged with ``acks`` (one each); ``twins`` are the enumerators as
        ``after`` will leave them (``SplitEnumerator.ahead``). None when they have nothing
        to read. The other tasks are added by ``complete`` once ``after`` is accepted."""
        assignments = {vid: twin.plan(max_records) for vid, twin in twins.items()}
        if not any(assignments.values()):
            return None
        ending = _ending(twins)
        # Whether the epoch ends with a checkpoint is decided by ``complete``, on the clock
        # as for any epoch: the source tasks of a job that pipelines snapshot nothing of
        # their own (no keyed state, no sink), so they need not know.
        run = after.run
        frame = self._frame(after.epoch + 1, after.generation, ending, False, assignments)
        restores = {
            vertex.id: [
                SubtaskRestore(
                    vertex.id,
                    index,
                    run,
                    attempt=acks[(vertex.id, index)].attempt,
                    keyed=None,  # sources are not keyed
                    operators=acks[(vertex.id, index)].operators,
                    watermarks=acks[(vertex.id, index)].watermarks,
                    claimed=True,  # as after every epoch (JobState.apply_acks)
                    managed=whole_parts(acks[(vertex.id, index)].managed),
                    restored_epoch=after.epoch,
                ).encode()
                for index in range(vertex.parallelism)
            ]
            for vertex in self.ctx.job.sources
        }
        committed = self.ctx.state.committed_epoch
        return self._with_tasks(frame, self.ctx.job.sources, restores, committed, graph)

    def complete(self, ahead: EpochPlan, graph: Broadcast[bytes]) -> EpochPlan:
        """An epoch planned ahead, with the tasks after its sources and its checkpoint
        decision, now that the epoch before it is accepted into the job's state."""
        state = self.ctx.state
        checkpoint = self.ctx.coordinator.due(ahead.end_of_input)
        if checkpoint:
            self.ctx.coordinator.triggered()
        ahead = replace(ahead, checkpoint=checkpoint)
        others = [vertex for vertex in self.ctx.job.vertices if not vertex.is_source]
        restores = {
            vertex.id: [restore.encode() for restore in state.restore_for(vertex, ahead.run)]
            for vertex in others
        }
        rest = self._with_tasks(ahead, others, restores, state.committed_epoch, graph)
        return replace(ahead, tasks={**ahead.tasks, **rest.tasks})

    def _frame(
        self,
        epoch: int,
        generation: int,
        ending: frozenset[int],
        checkpoint: bool,
        assignments: dict[int, dict[int, list[SplitAssignment]]],
    ) -> EpochPlan:
        """An epoch's plan without tasks yet; ``ending``: the source tasks whose input
        ends with it."""
        self.tries += 1
        tag = f"e{epoch}-g{generation}t{self.tries}"
        end_of_input = len(ending) == len(self.ctx.job.sources)
        return EpochPlan(
            epoch=epoch,
            generation=generation,
            run=run_id(self.ctx.settings.job_id, generation),
            tag=tag,
            ack_dir=f"epochs/{tag}",
            end_of_input=end_of_input,
            sources_ending=ending,
            savepoint_url=None,
            checkpoint=checkpoint,
            inject_failure=self.ctx.injector.take("after-snapshot-before-ack", epoch),
            tasks={},
            assignments=assignments,
            source_restores={},
        )

    def _with_tasks(
        self,
        frame: EpochPlan,
        vertices: list[JobVertex],
        restores: dict[int, list[bytes]],
        committed_epoch: int,
        graph: Broadcast[bytes],
    ) -> EpochPlan:
        """``frame`` with the tasks of ``vertices``, whose subtasks' restores are
        ``restores``."""
        tasks = {
            vertex.id: EpochTask(
                TaskDeploymentDescriptor(
                    vertex=vertex.id,
                    source=vertex.is_source,
                    run=frame.run,
                    epoch=frame.epoch,
                    end_of_input=frame.end_of_input,
                    source_ends=vertex.id in frame.sources_ending,
                    savepoint_url=frame.savepoint_url,
                    tag=frame.tag,
                    checkpoint=frame.checkpoint,
                    ack_dir=frame.ack_dir,
                    committed_epoch=committed_epoch,
                    commit_on_checkpoint=self.ctx.settings.checkpoint.commits_on_checkpoint,
                    reports_attempt=reports_attempt(vertex),
                    inject_failure=frame.inject_failure,
                    work_url=self.ctx.work.url,
                    state_url=self.ctx.state_files.url,
                    staging_url=self.ctx.staged.storage.url,
                    sink_files_url=self.ctx.sink_files.url,
                    keyed_state=self.ctx.settings.keyed_state,
                    batch_bounds=self.ctx.settings.batch_bounds,
                    state_digests=self.ctx.settings.signing_key is not None,
                ),
                graph,
                None if vertex.is_source else restores[vertex.id],
                self.ctx.keys.access(frame.run),
            )
            for vertex in vertices
        }
        source_restores = {v.id: restores[v.id] for v in vertices if v.is_source}
        return replace(frame, tasks=tasks, source_restores=source_restores)

    def _timer_due(self) -> bool:
        """A processing-time timer is due: an epoch without input fires it."""
        due = self.ctx.state.next_processing_timer()
        return due is not None and due <= processing_time_ms()

    def _idle_checkpoint_due(self) -> bool:
        """A checkpoint is due on the clock, input or not: an empty epoch then commits what
        the epochs since the last checkpoint staged (sink files, collected results)."""
        state = self.ctx.state
        return (
            self.ctx.settings.checkpoint.enabled
            and state.epoch > state.committed_epoch
            and self.ctx.coordinator.due(False)
        )


def _ending(enumerators: dict[int, SplitEnumerator]) -> frozenset[int]:
    """The source tasks whose input is read to its end once the planned epoch is read."""
    return frozenset(v for v, e in enumerators.items() if e.is_finished() or e.will_finish())
