"""Which attempt of every subtask an epoch rests on, and the acknowledgements it wrote.

Several attempts of one subtask may finish an epoch (a retry after a failure that came
after the ack, a speculative copy, a zombie of a resubmitted stage), each with its own ack
file. The accepted one is the attempt whose output the epoch used: for a task whose output
reaches the driver, the attempt the Spark job returned; upstream, the attempt whose shuffle
output the accepted receivers read (their acks name it per input channel). Going against
the edges (the vertices are in topological order) settles every subtask before its inputs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from lockgate.common.records import RecordFormatError
from lockgate.core.fs.storage import Storage
from lockgate.graph.job_graph import JobGraph, JobVertex
from lockgate.runtime.errors import JobExecutionError
from lockgate.runtime.messages.acknowledgement import SubtaskAck, ack_name
from lockgate.state import manifests

log = logging.getLogger(__name__)


class AckCollector:
    def __init__(
        self, job: JobGraph, work: Storage, state_files: Storage, ack_dir: str, epoch: int
    ):
        self.job = job
        self.work = work
        self.state_files = state_files  # where the job's state files are
        self.ack_dir = ack_dir
        self.epoch = epoch
        self.winners: dict[tuple[int, int], str] = {}

    def accepted(
        self, run: str, result_attempts: dict[tuple[int, int], set[str]]
    ) -> list[SubtaskAck]:
        """The accepted acks, in vertex order; a missing, damaged or foreign one, or an epoch
        that used two attempts of one subtask, is a ``JobExecutionError``."""
        for (vertex_id, index), attempts in result_attempts.items():
            self._accept(self.job.vertex(vertex_id), index, attempts)
        by_vertex: list[list[SubtaskAck]] = []
        for vertex in reversed(self.job.vertices):
            acks: list[SubtaskAck] = []
            by_vertex.append(acks)
            senders = {edge.id: edge.source for edge in vertex.inputs}
            for index in range(vertex.parallelism):
                where = f"subtask {index} of '{vertex.name}' (uid '{vertex.head.uid}')"
                attempt = self.winners.get((vertex.id, index))
                if attempt is None:
                    raise JobExecutionError(
                        f"epoch {self.epoch}: no output of {where} reached the rest of the epoch"
                    )
                path = ack_name(self.ack_dir, vertex.id, index, attempt)
                if not self.work.exists(path):
                    raise JobExecutionError(
                        f"epoch {self.epoch}: {where} finished without acknowledging "
                        f"({self.work.url_of(path)} is missing)"
                    )
                ack = self._read(path)
                try:
                    ack.check(vertex.id, index, self.epoch, run, self._where(path))
                except RecordFormatError as exc:
                    raise JobExecutionError(str(exc)) from None
                for channel, sender_attempt in ack.consumed.items():
                    edge_id, _, sender = channel.partition("/")
                    self._accept(senders[int(edge_id)], int(sender), {sender_attempt})
                acks.append(ack)
        return [ack for acks in reversed(by_vertex) for ack in acks]

    def sole(self, vertices: list[JobVertex], run: str) -> dict[tuple[int, int], SubtaskAck] | None:
        """The acks of ``vertices``' subtasks while the epoch still runs, once their stage is
        done: None unless every subtask wrote exactly one (of several, the epoch may rest on
        any; a stage that is done has the ack of each attempt whose output it registered)."""
        wanted = {vertex.id for vertex in vertices}
        found: dict[tuple[int, int], SubtaskAck] = {}
        for name in self.work.list(self.ack_dir):
            vertex_id, _, rest = name.partition("-")
            index, _, _ = rest.partition("-")
            if name.startswith(".") or not vertex_id.isdigit() or int(vertex_id) not in wanted:
                continue
            key = (int(vertex_id), int(index))
            if key in found:
                return None
            path = f"{self.ack_dir}/{name}"
            ack = self._read(path)
            try:
                ack.check(key[0], key[1], self.epoch, run, self._where(path))
            except RecordFormatError as exc:
                raise JobExecutionError(str(exc)) from None
            found[key] = ack
        expected = sum(vertex.parallelism for vertex in vertices)
        return found if len(found) == expected else None

    def discard_losers(self, needed_files: Callable[[], set[str]]) -> None:
        """Delete the state files that losing attempts wrote (their acks name them), unless
        something still needs them."""
        winners = {
            ack_name(self.ack_dir, vertex_id, index, attempt)
            for (vertex_id, index), attempt in self.winners.items()
        }
        losers = [
            f"{self.ack_dir}/{name}"
            for name in self.work.list(self.ack_dir)
            if not name.startswith(".") and f"{self.ack_dir}/{name}" not in winners
        ]
        if not losers:
            return
        needed = needed_files()
        for path in losers:
            try:
                loser = self._read(path)
            except JobExecutionError as exc:
                log.warning("epoch %s: ignoring a losing attempt's ack: %s", self.epoch, exc)
                continue
            written = manifests.urls(loser.state.changes) if loser.state else set()
            written |= {handle.file for handle in loser.managed.values()}
            for url in written - needed:
                try:
                    self.state_files.discard(url)
                except ValueError as exc:  # a damaged or foreign ack
                    log.warning("epoch %s: %s (named by %s)", self.epoch, exc, path)

    def _accept(self, vertex: JobVertex, index: int, attempts: set[str]) -> None:
        found = set(attempts)
        known = self.winners.get((vertex.id, index))
        if known is not None:
            found.add(known)
        if len(found) > 1:
            raise JobExecutionError(
                f"epoch {self.epoch}: the outputs of {len(found)} attempts of subtask {index} "
                f"of '{vertex.name}' (uid '{vertex.head.uid}') were used "
                f"({', '.join(sorted(found))}); an epoch must rest on one attempt per "
                "subtask, so the job restarts from its latest checkpoint"
            )
        self.winners[(vertex.id, index)] = found.pop()

    def _where(self, path: str) -> str:
        return f"acknowledgement {self.work.url_of(path)}"

    def _read(self, path: str) -> SubtaskAck:
        where = self._where(path)
        try:
            return SubtaskAck.from_json(self.work.read_json(path), where)
        except RecordFormatError as exc:
            raise JobExecutionError(str(exc)) from None
        except ValueError:
            raise JobExecutionError(f"{where} is not JSON") from None
