"""Reference counts of a job's state files (Flink's ``SharedStateRegistry``).

Incremental snapshots share files: a RocksDB SST, or a heap key group that did not change,
is named by the live state of its subtask and by every retained checkpoint taken since it
was written. Each of these *holders* registers the set of files it names; a file whose
count falls to zero is deleted, but only when it lies under the job's own state directory
(a checkpoint of another job, restored in NO_CLAIM mode, is never ours to delete).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping

from lockgate.core.fs.storage import Storage


class SharedStateRegistry:
    def __init__(self, storage: Storage):
        self.storage = storage  # the job's state directory
        self._holders: dict[Hashable, frozenset[str]] = {}
        self._counts: Counter[str] = Counter()

    def hold(self, holder: Hashable, urls: Iterable[str]) -> None:
        """``holder`` now names exactly ``urls``; files nothing names any more are deleted."""
        new = frozenset(urls)
        old = self._holders.pop(holder, frozenset())
        if new:
            self._holders[holder] = new
        for url in new - old:
            self._counts[url] += 1
        for url in old - new:
            self._counts[url] -= 1
            if not self._counts[url]:
                del self._counts[url]
                if self.storage.relative_of(url) is not None:
                    self.storage.discard(url)

    def release(self, holder: Hashable) -> None:
        self.hold(holder, ())

    def hold_live(self, subtask_files: Mapping[tuple[int, int], Iterable[str]]) -> None:
        """Each keyed subtask's live state, (task, subtask) -> its files, holds them."""
        for (vertex, subtask), urls in subtask_files.items():
            self.hold(("live", vertex, subtask), urls)

    def release_live(self, subtasks: Iterable[tuple[int, int]]) -> None:
        for vertex, subtask in subtasks:
            self.release(("live", vertex, subtask))

    def referenced(self) -> set[str]:
        return set(self._counts)

    def sweep(self) -> None:
        """Delete every file in the state directory that no holder names: the files of
        attempts whose epoch failed before any ack named them to the driver."""
        files = self.storage
        if not files.fs.exists(files.root):
            return
        for path in files.fs.find(files.root):
            url = files.fs.unstrip_protocol(path)
            if url not in self._counts:
                files.discard(url)
