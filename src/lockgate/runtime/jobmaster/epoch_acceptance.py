"""An epoch's Spark job has succeeded: which attempt of every subtask the epoch rests on, and
what the job takes from those attempts.

Per subtask the ``AckCollector`` picks the accepted attempt (the one whose output the epoch
used) and discards what the others wrote. The job's state moves to the accepted versions,
their placement and staged files are recorded, their collect results are held until the
epoch's output may be released, their metrics become the job's latest, and the epoch's
statistics are counted from them.
"""

from __future__ import annotations

import logging
import time

from lockgate.common.clock import processing_time_ms
from lockgate.runtime.jobmaster.ack_collector import AckCollector
from lockgate.runtime.jobmaster.checkpoint_finalizer import CheckpointFinalizer
from lockgate.runtime.jobmaster.epoch_cap import EpochCap
from lockgate.runtime.jobmaster.epoch_job import EpochOutput
from lockgate.runtime.jobmaster.epoch_plan import EpochPlan
from lockgate.runtime.jobmaster.job_context import JobContext
from lockgate.runtime.jobmaster.job_summary import EpochStats
from lockgate.runtime.jobmaster.placement import SubtaskPlacement
from lockgate.runtime.messages.acknowledgement import SubtaskAck

log = logging.getLogger(__name__)


class EpochAcceptance:
    def __init__(
        self,
        ctx: JobContext,
        placement: SubtaskPlacement,
        epoch_cap: EpochCap,
        finalizer: CheckpointFinalizer,
    ):
        self.ctx = ctx
        self.placement = placement
        self.epoch_cap = epoch_cap
        self.finalizer = finalizer

    def accept(
        self, plan: EpochPlan, output: EpochOutput, started: float, timeout: float | None
    ) -> list[SubtaskAck]:
        """Move the job to the epoch's accepted attempts; their acknowledgements."""
        ctx = self.ctx
        collector = AckCollector(ctx.job, ctx.work, ctx.state_files, plan.ack_dir, plan.epoch)
        acks = collector.accepted(plan.run, output.attempts)
        collector.discard_losers(ctx.shared_state.referenced)
        self.epoch_cap.epoch_took(
            time.perf_counter() - started,
            timeout,
            _records_per_split(plan, acks),
            warm=not any(ack.restored for ack in acks),
        )
        ctx.state.apply_acks(plan.epoch, acks, processing_time_ms())
        self.placement.record(acks)
        for ack in acks:
            ctx.staged.accept(plan.epoch, ack.vertex, ack.subtask, ack.attempt)
        forget_acks(ctx, plan.ack_dir)
        self.finalizer.epoch_wrote(sum(ack.state.bytes_written for ack in acks if ack.state))
        ctx.shared_state.hold_live(ctx.state.subtask_files())
        ctx.results.hold(output.collected)
        ctx.summary.update_metrics(
            {(uid, ack.subtask): values for ack in acks for uid, values in ack.metrics.items()}
        )
        return acks

    def statistics(
        self,
        plan: EpochPlan,
        acks: list[SubtaskAck],
        started: float,
        checkpoint_id: int | None,
        ahead: bool,
    ) -> EpochStats:
        """What the epoch did, as its statistics report it."""
        state = self.ctx.state
        return EpochStats(
            plan.epoch,
            sum(a.records_in for a in acks if a.vertex in state.enumerators),
            (time.perf_counter() - started) * 1000,
            state.state_bytes(),
            sum(a.state.entries for a in acks if a.state),
            sum(a.restored for a in acks),
            checkpoint_id,
            ahead,
        )


def forget_acks(ctx: JobContext, ack_dir: str) -> None:
    """Remove an epoch try's acknowledgements once read (or once its try is given up)."""
    try:
        ctx.work.remove(ack_dir)
    except OSError as exc:
        # A cancelled task (a dropped run-ahead's, a killed attempt's) may still be
        # writing its ack there. No later epoch reads the directory (every try has its
        # own), and the work directory goes with the job.
        log.info("left %s for the job's end: %s", ack_dir, exc)


def _records_per_split(plan: EpochPlan, acks: list[SubtaskAck]) -> int:
    """The most records a source split read in the epoch: per source subtask, its records
    over the splits it was assigned."""
    most = 0
    for ack in acks:
        assigned = plan.assignments.get(ack.vertex, {}).get(ack.subtask)
        if assigned:
            most = max(most, ack.records_in // len(assigned))
    return most
