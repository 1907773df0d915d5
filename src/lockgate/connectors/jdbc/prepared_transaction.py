"""The names of the JDBC sink's prepared transactions (PostgreSQL's two-phase commit), and
its committable: the transaction a checkpoint commits.

A global transaction id names the job, the sink (a digest of its uid), the subtask and the
task attempt that prepared it (whose name holds the epoch): no two attempts, subtasks, sinks
or jobs ever prepare under one name, and the driver can find every transaction of a job in
``pg_prepared_xacts`` by its prefix. The same transaction as a URL
(``postgresql://host:port/database#gid``) is what the writer records in its staging record
before it prepares (see ``core/two_phase_commit.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lockgate.common.records import Record
from lockgate.connectors.jdbc.sink import JdbcSinkError
from lockgate.core.two_phase_commit import read_committable, sink_digest

PREFIX = "lockgate"
_GID = re.compile(r"lockgate-[0-9a-f]{32}-[0-9a-f]{12}-[0-9]+-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")


def job_prefix(job_id: str) -> str:
    """What every transaction of job ``job_id`` is named beginning with."""
    return f"{PREFIX}-{job_id}-"


def subtask_prefix(job_id: str, uid: str, subtask: int) -> str:
    """What the transactions one subtask of a sink prepares in a job begin with."""
    return f"{job_prefix(job_id)}{sink_digest(uid)}-{subtask}-"


def transaction_id(job_id: str, uid: str, subtask: int, attempt: str) -> str:
    gid = f"{subtask_prefix(job_id, uid, subtask)}{attempt}"
    if not is_transaction_id(gid):
        raise JdbcSinkError(f"cannot name a prepared transaction {gid!r}")
    return gid


def is_transaction_id(gid: str) -> bool:
    return _GID.fullmatch(gid) is not None


_ATTEMPT = re.compile(r"e(?P<epoch>[0-9]+)-g(?P<generation>[0-9]+)t")


def attempt_epoch(attempt: str) -> tuple[int, int] | None:
    """(epoch, restore generation) of a task attempt's name (``e<n>-g<g>t<try>a<id>``)."""
    found = _ATTEMPT.match(attempt)
    return (int(found["epoch"]), int(found["generation"])) if found else None


def staged_url(database: str, gid: str) -> str:
    """``database`` is ``host:port/dbname``."""
    return f"postgresql://{database}#{gid}"


def parse_staged_url(url: str) -> tuple[str, str] | None:
    """(database, gid) of a staged transaction's URL; None if it is not one."""
    scheme, _, rest = url.partition("://")
    database, _, gid = rest.rpartition("#")
    if scheme != "postgresql" or not is_transaction_id(gid):
        return None
    return database, gid


@dataclass(frozen=True)
class JdbcCommittable(Record):
    """A transaction prepared at the end of ``epoch``, which the checkpoint of that epoch
    (or, if it failed, the next one) commits. ``xid``: its transaction id, by which a
    commit that no longer finds it prepared learns whether it was committed or lost."""

    epoch: int
    gid: str
    xid: str
    database: str  # host:port/dbname, where it is prepared

    @classmethod
    def read(cls, raw: Any) -> JdbcCommittable:
        committable = read_committable(cls, raw, JdbcSinkError, "JdbcSink")
        if not is_transaction_id(committable.gid):
            raise JdbcSinkError(
                f"a JdbcSink committable names {committable.gid!r}, which is not the name of "
                "a transaction lockgate prepares: not committed"
            )
        return committable
