"""The two-phase-commit contract between a sink and the driver (Flink's Sink V2 Committer).

In the tasks, a sink's writer pre-commits at the end of every epoch: it makes its output
durable but invisible and reports *committables* (JSON) in its operator state, so they
enter the checkpoint. On the driver, once the checkpoint is complete, the sink's
``Committer`` commits each of them. A commit must be idempotent: after a failure every
committable of the restored checkpoint is committed again.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any


class Committer(ABC):
    @abstractmethod
    def commit(self, committable: Any) -> None:
        """Make the committable's output visible; doing it again changes nothing."""

    @abstractmethod
    def may_stage(self, url: str) -> bool:
        """Whether ``url`` is a name this sink's writers stage (hidden, under the sink's own
        directory): the driver deletes only such files, whatever a staging record says."""

    @abstractmethod
    def staged_files(self, committable: Any) -> Iterable[str]:
        """URLs of the hidden files that only this commit will make visible: they must
        survive every abort of staged files until it has run."""
