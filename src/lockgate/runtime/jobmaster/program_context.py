"""A job file run by lockgate's CLI or Dispatcher rather than as a plain script (Flink's
``StreamContextEnvironment``).

What the command line says (``-D``, ``-p``, ``-s``) becomes the configuration every
environment of the program starts from; the program's own settings go on top, as in
Flink. The Dispatcher also names the first job's id (its REST id) and watches each job the
program starts through a ``JobListener``; ``lockgate info`` asks for the plan only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from lockgate.graph.job_graph import JobGraph
    from lockgate.runtime.jobmaster.job_runner import JobRunner


class JobListener(Protocol):
    def job_started(self, runner: JobRunner) -> None:
        """``runner`` runs a job of the program (called before its first epoch)."""


class ProgramPlan(Exception):
    """Raised where the program would run its job, in plan-only mode: carries the job."""

    def __init__(self, job: JobGraph, job_name: str):
        super().__init__(f"the plan of job {job_name!r}")
        self.job = job
        self.job_name = job_name


@dataclass
class ProgramContext:
    configuration: Mapping[str, str] = field(default_factory=dict)
    job_id: str | None = None  # the first job's; later ones get their own
    listener: JobListener | None = None
    plan_only: bool = False
    # earlier runs of the first job, killed: what they staged is aborted before it starts
    earlier_runs: tuple[str, ...] = ()

    def take_job_id(self) -> tuple[str | None, tuple[str, ...]]:
        """The first job's id and its earlier runs (then nothing: later jobs are new)."""
        taken = self.job_id, self.earlier_runs
        self.job_id, self.earlier_runs = None, ()
        return taken


_current: ProgramContext | None = None


def current() -> ProgramContext | None:
    return _current


def install(context: ProgramContext | None) -> None:
    """Run the program under ``context`` (None: as a plain script)."""
    global _current
    _current = context
