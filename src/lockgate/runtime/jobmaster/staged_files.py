"""Files that task attempts stage outside the job's directories, and their abort.

A two-phase-commit sink writes hidden files into the user's output directory (or prepares
database transactions, named by URL like files) before any checkpoint covers them. An
attempt that loses (a retried task, a speculative copy, a zombie of a resubmitted stage) or
an epoch undone by a failover leaves such files behind; only the driver knows, after an
epoch, which attempt won. So every attempt records each file in its own staging record
*before* creating it, and the driver deletes files by these recorded
names, never by a pattern that could match the files of another attempt:

- after every epoch, the files of records that are not the accepted attempt of their epoch;
- at a restore, every staged file that the restored checkpoint does not commit.

A record names files by URL, and the driver deletes one (``Committer.abort``) only if a sink
of the job stages such names (``Committer.may_stage``: hidden, under the sink's own
directory; a transaction of the sink's database): a record that names anything else is
refused, naming the record and the file.

A record of an accepted attempt lives until a checkpoint covers its epoch (its files are
then committables of a completed checkpoint). A losing attempt's files are deleted at every
sweep, and its record is forgotten only ``ZOMBIE_EPOCHS`` epochs later: an attempt Spark has
not killed yet may still create the file it recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from lockgate.common.records import RecordFormatError
from lockgate.core.fs.storage import Storage
from lockgate.core.two_phase_commit import Committer
from lockgate.graph.job_graph import JobGraph
from lockgate.runtime.messages.staged_files import StagedFiles

ZOMBIE_EPOCHS = 2
log = logging.getLogger(__name__)


class StagedFilesRegistry:
    """Reads the staging records under one directory and aborts by name."""

    def __init__(self, storage: Storage, committers: list[Committer]):
        self.storage = storage
        self.committers = committers  # of the job's sinks: what may be staged, and where
        # (epoch, vertex, subtask) -> the attempt the driver accepted, until its epoch settles
        self.accepted: dict[tuple[int, int, int], str] = {}

    def accept(self, epoch: int, vertex: int, subtask: int, attempt: str) -> None:
        """The driver accepted ``attempt`` for a subtask's ``epoch``: its files are kept."""
        self.accepted[(epoch, vertex, subtask)] = attempt

    def records(self) -> Iterable[StagedFiles]:
        for epoch_dir in self.storage.list(""):
            for name in self.storage.list(epoch_dir):
                if name.startswith("."):
                    continue  # a record being written
                relative = f"{epoch_dir}/{name}"
                where = f"staging record {self.storage.url_of(relative)}"
                try:
                    raw = self.storage.read_json(relative)
                except FileNotFoundError:
                    continue
                except ValueError:
                    raise RecordFormatError(f"{where} is not JSON") from None
                yield StagedFiles.from_json(raw, where)

    def sweep(self, settled: int, epoch: int) -> None:
        """After ``epoch``: abort what losing attempts staged, forget what is settled.

        Accepted attempts of epochs up to ``settled`` (covered by a completed checkpoint, or
        published at once without exactly-once) are forgotten with their records.
        """
        accepted = self.accepted
        records = list(self.records())
        # Never deleted on the word of another record, which anyone who can write the
        # staging directory could plant: what accepted attempts and undecided epochs staged
        held = {
            url
            for r in records
            if r.epoch > epoch or accepted.get((r.epoch, r.vertex, r.subtask)) == r.attempt
            for url in r.files
        }
        for record in records:
            if record.epoch > epoch:
                continue  # an attempt of an epoch not decided yet
            key = (record.epoch, record.vertex, record.subtask)
            if accepted.get(key) == record.attempt:
                if record.epoch <= settled:
                    self._forget(record)  # its files are committed
                continue
            try:
                self._delete(record, [url for url in record.files if url not in held])
            except OSError as exc:  # a sink's system is unreachable now: the next sweep
                log.warning("could not abort what %s staged: %s", record.name, exc)
                continue
            if record.epoch <= epoch - ZOMBIE_EPOCHS:
                self._forget(record)
        for key in [key for key in accepted if key[0] <= settled]:
            del accepted[key]

    def abort_all(self, keep: set[str], forget: bool = True) -> None:
        """Delete every staged file except those in ``keep`` (pending files the restored
        checkpoint commits); ``forget``: remove the records too (this job's own ones)."""
        for record in list(self.records()):
            urls = [url for url in record.files if url not in keep]
            if forget:
                self._delete(record, urls)
                self._forget(record)
                continue
            try:
                self._delete(record, urls)
            except RecordFormatError as exc:  # another execution's, whose sinks may differ
                log.warning("%s", exc)
        if forget:
            self.accepted.clear()

    def _delete(self, record: StagedFiles, urls: list[str]) -> None:
        """Delete ``urls`` of ``record``, all of them or, if one is not a name a sink of
        this job stages, none."""
        stagers = []
        for url in urls:
            committer = next((c for c in self.committers if c.may_stage(url)), None)
            if committer is None:
                raise RecordFormatError(
                    f"staging record {self.storage.url_of(record.name)} names {url}, which "
                    f"no sink of this job stages: nothing of it deleted"
                )
            stagers.append((committer, url))
        for committer, url in stagers:
            committer.abort(url)

    def _forget(self, record: StagedFiles) -> None:
        self.storage.remove(record.name)
        self.storage.prune(record.name.rpartition("/")[0])  # the epoch's directory


def job_committers(job: JobGraph) -> list[Committer]:
    """The committers of the job's two-phase-commit sinks."""
    found = (getattr(node.operator, "committer", None) for v in job.vertices for node in v.nodes)
    return [committer for committer in found if isinstance(committer, Committer)]
