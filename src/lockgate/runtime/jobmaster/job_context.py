"""What the JobMaster's parts share for one job: its graph and settings, its state on the
driver, where its files go, and the registries and reports that outlive epochs.

The planner, the acceptance of epochs, the finalizer and the failover each take this one
context instead of a list of its parts.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

from lockgate.checkpoint.coordinator import CheckpointCoordinator
from lockgate.checkpoint.shared_state_registry import SharedStateRegistry
from lockgate.common import config_options as options
from lockgate.core.fs.directory_lease import DirectoryLease, lease_work_directory
from lockgate.core.fs.storage import Storage
from lockgate.graph.job_graph import JobGraph
from lockgate.runtime.jobmaster.collected_results import CollectedResults
from lockgate.runtime.jobmaster.failure_injector import FailureInjector
from lockgate.runtime.jobmaster.job_settings import JobSettings
from lockgate.runtime.jobmaster.job_state import JobState
from lockgate.runtime.jobmaster.job_summary import JobSummary
from lockgate.runtime.jobmaster.run_keys import RunKeys
from lockgate.runtime.jobmaster.staged_files import StagedFilesRegistry, job_committers


@dataclass
class JobContext:
    job: JobGraph
    settings: JobSettings
    state: JobState  # sources' enumerators, subtasks' state versions, committed epoch
    coordinator: CheckpointCoordinator
    work: Storage  # the job's work directory: plans, acks, heap state without checkpoints
    job_root: Storage | None  # <checkpoint dir>/<job id>, with checkpointing to files
    state_files: Storage  # where subtasks write their state files (shared/ with a job root)
    shared_state: SharedStateRegistry  # who still needs each state file
    staged: StagedFilesRegistry  # files sinks staged outside the job, by attempt
    sink_files: Storage  # where sinks stage what their commits publish (Kafka's records)
    results: CollectedResults  # records of collect sinks on their way to the user
    injector: FailureInjector  # failures tests inject at named points
    summary: JobSummary  # statistics per epoch and checkpoint, restarts
    cancelled: threading.Event  # set from any thread: stop after the running epoch
    keys: RunKeys  # what each run's tasks and subtask hosts prove to each other
    work_lease: DirectoryLease | None  # held while the job runs (None: not a local directory)

    @staticmethod
    def create(job: JobGraph, settings: JobSettings) -> JobContext:
        work = Storage(settings.work_dir).make_private(options.WORK_DIR.key)
        job_root = None
        if settings.checkpoint_dir:
            job_root = Storage(settings.checkpoint_dir).make_private(options.CHECKPOINT_DIR.key)
        state_files = job_root.child("shared") if job_root else work.child("state")
        # Leased before sources stage into it, so that what a run killed meanwhile staged is
        # swept by the next run (a directory without a lease is not a killed run's)
        work_lease = lease_work_directory(work)
        try:
            for vertex in job.sources:  # before their enumerators, which plan what they stage
                vertex.head.source.prepare(work.child(f"sources/{vertex.id}"))
        except BaseException:
            work.remove("")
            if work_lease is not None:
                work_lease.release()
            raise
        coordinator = CheckpointCoordinator(
            settings.checkpoint,
            settings.job_id,
            job_root,
            settings.signing_key,
            history_size=settings.checkpoint_history,
        )
        return JobContext(
            job=job,
            settings=settings,
            state=JobState(job, settings.keyed_state.backend),
            coordinator=coordinator,
            work=work,
            job_root=job_root,
            state_files=state_files,
            shared_state=SharedStateRegistry(state_files),
            staged=StagedFilesRegistry((job_root or work).child("staging"), job_committers(job)),
            sink_files=(job_root or work).child("sink-files"),
            results=CollectedResults(),
            injector=FailureInjector(settings.injections, settings.kills),
            summary=JobSummary(
                settings.job_id,
                settings.job_name,
                deque(maxlen=settings.epoch_history),
                {node.uid: node.name for vertex in job.vertices for node in vertex.nodes},
            ),
            cancelled=threading.Event(),
            keys=RunKeys(job),
            work_lease=work_lease,
        )
