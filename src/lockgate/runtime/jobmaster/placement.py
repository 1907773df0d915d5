"""Where each subtask lives, and asking Spark to run its tasks there.

A subtask's host lives on the Spark host where its first task ran (``host_client``); a task
that Spark runs on another host finds no host there and restores the subtask from
checkpoint storage. The acks say where each subtask's host is; the next epoch's tasks ask
for those places as Spark's preferred locations (soft: after ``spark.locality.wait`` with
that host's slots busy, or with its executors gone, a task runs elsewhere and the subtask
moves there).

Placement acts only while the subtasks are spread over several Spark hosts: on one host
(local mode, a one-machine cluster) every task reaches every host, and asking costs a
post-shuffle task a marker stage (see ``EpochJob``) for nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from lockgate.runtime.messages.acknowledgement import SubtaskAck


class SubtaskPlacement:
    def __init__(self) -> None:
        # (task, subtask) -> the Spark host of its host, as its last accepted ack said. Kept
        # across failovers: a new run's subtasks start where the old ones were, as good a
        # place as any, and kept there by the next acks.
        self.hosts: dict[tuple[int, int], str] = {}

    def record(self, acks: Iterable[SubtaskAck]) -> None:
        for ack in acks:
            if ack.location:
                self.hosts[(ack.vertex, ack.subtask)] = ack.location

    def locations(self, vertex: int, parallelism: int) -> list[str | None] | None:
        """The Spark host each subtask of ``vertex`` should run on (None: unknown), or None
        when placement does not act."""
        if len(set(self.hosts.values())) < 2:
            return None
        return [self.hosts.get((vertex, index)) for index in range(parallelism)]
