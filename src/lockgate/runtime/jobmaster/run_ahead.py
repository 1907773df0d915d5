"""Pipelined epochs: the source tasks of epoch n+1 run while epoch n's later stages do.

Once epoch n's source stages are done, the JobMaster plans epoch n+1's sources from where
epoch n leaves them (``SplitEnumerator.ahead``) and from the source subtasks' acks of n, and
submits them as Spark map stages. They run on the cores that epoch n's keyed stages and the
driver's work between epochs leave idle. When epoch n is accepted, epoch n+1 takes them over
only if it was built on what n really is: every source subtask's accepted attempt of n is
the one its run-ahead reused (a stage recomputed after a lost shuffle file brings another),
and the enumerators stand where they were assumed to. Otherwise the run-ahead is dropped
and epoch n+1 is planned again (its source subtasks then rebuild from n's restore).

State stays a chain of accepted versions: nothing of epoch n+1 is accepted before n is, and
epoch n+1's tasks after the sources are planned only then.
"""

from __future__ import annotations

from dataclasses import dataclass

from lockgate.core.source import SplitEnumerator
from lockgate.runtime.jobmaster.epoch_job import SourceStages
from lockgate.runtime.jobmaster.epoch_plan import EpochPlan
from lockgate.runtime.jobmaster.job_state import JobState


@dataclass(frozen=True)
class RunAhead:
    """Epoch n+1, its source stages submitted while epoch n runs."""

    plan: EpochPlan  # with the source tasks only, until EpochPlanner.complete
    twins: dict[int, SplitEnumerator]  # the enumerators as epoch n will leave them
    assumed: dict[tuple[int, int], str]  # source subtask -> its attempt of n reused
    stages: SourceStages

    def mismatch(self, state: JobState) -> str | None:
        """Why the run-ahead cannot be used, now that epoch n is accepted into ``state``;
        None if it can."""
        for (vertex, index), attempt in sorted(self.assumed.items()):
            accepted = state.versions.get((vertex, index))
            if accepted != attempt:
                return (
                    f"epoch {self.plan.epoch - 1} rests on attempt {accepted} of subtask "
                    f"{index} of source task {vertex}, not on {attempt}"
                )
        for vertex, twin in sorted(self.twins.items()):
            if state.enumerators[vertex].snapshot() != twin.snapshot():
                return f"the enumerator of source task {vertex} is not where it was assumed"
        return None
