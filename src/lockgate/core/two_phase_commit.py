"""The two-phase-commit contract between a sink and the driver (Flink's Sink V2 Committer).

In the tasks, a sink's writer pre-commits: it makes its output durable but invisible (a
hidden file, a prepared database transaction, records staged in a file) and reports
*committables* (JSON) in its operator state, so they enter the checkpoint. Once the
checkpoint is complete, the sink's ``Committer`` commits each of them: on the driver, or,
for a ``TaskCommitter`` whose commit handles records (producing them to Kafka), in Spark
tasks. A commit must be idempotent: after a failure every committable of the restored
checkpoint is committed again.

What a writer stages it first records by URL in its attempt's staging record; the driver
aborts what losing attempts and undone epochs staged by these names (see
``runtime/jobmaster/staged_files.py``).
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, TypeVar

from lockgate.common.records import Record, RecordFormatError

R = TypeVar("R", bound=Record)


def sink_digest(uid: str) -> str:
    """A short, stable name of a sink's uid, for the names of what it stages (transaction
    ids, application ids), which a uid's characters or length may not fit."""
    return hashlib.sha256(uid.encode()).hexdigest()[:12]


def commit_version(generation: int, epoch: int) -> int:
    """What marks an epoch's output committed where the system written to keeps one growing
    number per writer (a Kafka marker offset, a Delta application transaction). It grows
    with every epoch of a run and with every restore: a restore that falls back to an older
    checkpoint runs epoch numbers again, with other input, under a new generation."""
    return generation << 32 | epoch


def read_committable(record: type[R], raw: Any, error: type[Exception], sink: str) -> R:
    """The committable of type ``record`` in ``raw`` (a checkpoint's JSON); a damaged one
    is an ``error`` naming the ``sink``."""
    try:
        return record.from_json(raw, f"{raw!r:.120}")
    except RecordFormatError as exc:
        raise error(f"not a {sink} committable: {exc}") from None


class CommitFailedError(OSError):
    """The system a sink writes to cannot commit now (unreachable, restarting): the job
    fails over and the restore commits again."""


class Committer(ABC):
    #: what it stages holds locks in the system written to until it is committed (prepared
    #: transactions): no epoch may run past a failed checkpoint, whose output would block it
    locks_until_committed = False
    #: what no other sink of the job may commit through (a Kafka transactional id prefix,
    #: whose commits would take each other's for their own): None, nothing
    exclusive: str | None = None

    @abstractmethod
    def commit(self, committable: Any) -> None:
        """Make the committable's output visible; doing it again changes nothing."""

    def groups(self, committables: list[Any]) -> list[list[Any]]:
        """A checkpoint's committables cut into the groups that are committed as one (each
        alone, unless the system commits many at once: a Delta table's one commit)."""
        return [[committable] for committable in committables]

    def commit_group(self, group: list[Any]) -> None:
        """Commit one group of ``groups``; doing it again changes nothing."""
        for committable in group:
            self.commit(committable)

    @abstractmethod
    def may_stage(self, url: str) -> bool:
        """Whether ``url`` names what this sink's writers stage (a hidden file under the
        sink's own directory, a prepared transaction of this sink): the driver aborts only
        such names, whatever a staging record says."""

    @abstractmethod
    def staged_files(self, committable: Any) -> Iterable[str]:
        """URLs of what only this commit makes visible: they must survive every abort of
        staged output until it has run."""

    @abstractmethod
    def abort(self, url: str) -> None:
        """Undo what was staged as ``url`` (one ``may_stage`` accepts), if it still exists."""

    def abort_lingering(self, job_ids: set[str], keep: set[str]) -> None:
        """Abort what attempts of the jobs ``job_ids`` staged, found in the system written
        to rather than in staging records, except the URLs in ``keep``. Sinks whose staged
        output the staging records always name have nothing more to find."""


class TaskCommitter(Committer):
    """A committer whose commits run in Spark tasks (the driver never handles records):
    the checkpoint's committables, in groups of one task each (``commit_group`` runs in a
    task)."""

    @abstractmethod
    def groups(self, committables: list[Any]) -> list[list[Any]]: ...

    @abstractmethod
    def commit_group(self, group: list[Any]) -> None: ...

    def commit(self, committable: Any) -> None:
        self.commit_group([committable])
