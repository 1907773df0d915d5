"""Epoch planning: what the next epoch reads and what each Spark task is handed.

Each source's enumerator plans its subtasks' input, bounded by the epoch cap. An epoch
runs when there is input, when the sources are finished (the final epoch), or when a
checkpoint is due with epochs not yet covered by one: checkpoints follow the clock, not
the input, so that everything read is committed within about one interval. The
coordinator decides whether the epoch ends with a checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lockgate.checkpoint.coordinator import CheckpointCoordinator
from lockgate.checkpoint.storage import Storage
from lockgate.runtime.jobmaster.epoch_job import reports_attempt
from lockgate.runtime.jobmaster.failure_injector import FailureInjector
from lockgate.runtime.jobmaster.job_settings import JobSettings
from lockgate.runtime.jobmaster.job_state import JobState
from lockgate.runtime.source import SplitAssignment
from lockgate.runtime.task_deployment import TaskDeploymentDescriptor, run_id
from lockgate.runtime.taskexecutor.epoch_task import EpochTask


@dataclass(frozen=True)
class EpochPlan:
    epoch: int
    run: str  # the job execution and restore generation the tasks belong to
    ack_dir: str  # in the work directory: one acknowledgement per subtask attempt
    end_of_input: bool  # the sources are read to their end after this epoch
    checkpoint: bool  # the epoch ends with a checkpoint
    tasks: dict[int, EpochTask]  # per task (vertex id)
    assignments: dict[int, dict[int, list[SplitAssignment]]]  # source task -> subtask -> input
    restores: dict[int, list[bytes]]  # task -> each subtask's encoded SubtaskRestore


class EpochPlanner:
    def __init__(
        self,
        job: Any,
        settings: JobSettings,
        coordinator: CheckpointCoordinator,
        injector: FailureInjector,
        work: Storage,
        state_files: Storage,
        staging: Storage,
    ):
        self.job = job
        self.settings = settings
        self.coordinator = coordinator
        self.injector = injector
        self.work = work
        self.state_files = state_files
        self.staging = staging
        self.tries = 0  # every planned epoch, retries included: names its files apart

    def plan(
        self, state: JobState, generation: int, max_records: int, graph: Any
    ) -> EpochPlan | None:
        """The next epoch of restore ``generation``, or None while continuous sources have
        nothing new and no checkpoint is due. ``graph`` is the job graph's broadcast."""
        enumerators = state.enumerators
        assignments = {vid: e.plan(max_records) for vid, e in enumerators.items()}
        finished = all(e.is_finished() for e in enumerators.values())
        if not any(assignments.values()) and not finished and not self._idle_checkpoint_due(state):
            return None
        end_of_input = all(e.is_finished() or e.will_finish() for e in enumerators.values())
        checkpoint = self.coordinator.due(end_of_input)
        if checkpoint:
            self.coordinator.triggered()
        epoch = state.epoch + 1
        self.tries += 1
        run = run_id(self.settings.job_id, generation)
        tag = f"e{epoch}-g{generation}t{self.tries}"
        ack_dir = f"epochs/{tag}"
        inject_ack = self.injector.take("after-snapshot-before-ack", epoch)
        tasks = {
            vertex.id: EpochTask(
                TaskDeploymentDescriptor(
                    vertex=vertex.id,
                    source=vertex.is_source,
                    run=run,
                    epoch=epoch,
                    end_of_input=end_of_input,
                    tag=tag,
                    checkpoint=checkpoint,
                    ack_dir=ack_dir,
                    committed_epoch=state.committed_epoch,
                    commit_on_checkpoint=self.settings.checkpoint.commits_on_checkpoint,
                    reports_attempt=reports_attempt(vertex),
                    inject_failure=inject_ack,
                    work_url=self.work.url,
                    state_url=self.state_files.url,
                    staging_url=self.staging.url,
                    keyed_state=self.settings.keyed_state,
                    batch_bounds=self.settings.batch_bounds,
                ),
                graph,
            )
            for vertex in self.job.vertices
        }
        restores = {
            vertex.id: [restore.encode() for restore in state.restore_for(vertex, run)]
            for vertex in self.job.vertices
        }
        return EpochPlan(
            epoch, run, ack_dir, end_of_input, checkpoint, tasks, assignments, restores
        )

    def _idle_checkpoint_due(self, state: JobState) -> bool:
        """A checkpoint is due on the clock, input or not: an empty epoch then commits what
        the epochs since the last checkpoint staged (sink files, collected results)."""
        return (
            self.settings.checkpoint.enabled
            and state.epoch > state.committed_epoch
            and self.coordinator.due(False)
        )
