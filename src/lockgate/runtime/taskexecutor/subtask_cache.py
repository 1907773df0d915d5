"""The subtasks a Python worker keeps alive between epochs (one cache per worker process).

A subtask found here is reused only when it is the very version the driver accepted for the
previous epoch; everything else in the cache is stale and released.
"""

from __future__ import annotations

import gc
from collections import OrderedDict

from lockgate.runtime.taskexecutor.subtask import Subtask

_RUNS_KEPT = 2  # of different jobs sharing the worker


class SubtaskCache:
    def __init__(self, freeze_gc: bool = True) -> None:
        # run id -> (task, subtask index) -> live subtask, least recently used run first
        self._runs: OrderedDict[str, dict[tuple[int, int], Subtask]] = OrderedDict()
        self._gc_frozen = not freeze_gc

    def take(self, run: str, vertex: int, index: int, epoch: int) -> Subtask | None:
        """Remove and return the live subtask ``(vertex, index)`` of ``run``, if any."""
        live = self._live(run)
        self._dispose_superseded(live, epoch)
        return live.pop((vertex, index), None)

    def put(self, run: str, subtask: Subtask) -> None:
        self._live(run)[(subtask.vertex.id, subtask.index)] = subtask
        self._freeze_long_lived()

    def _live(self, run: str) -> dict[tuple[int, int], Subtask]:
        live = self._runs.get(run)
        if live is not None:
            self._runs.move_to_end(run)
            return live
        job = run.partition("#")[0]
        for other in [r for r in self._runs if r.partition("#")[0] == job]:
            _dispose_all(self._runs.pop(other))  # a restart made them stale
        live = self._runs[run] = {}
        while len(self._runs) > _RUNS_KEPT:
            _dispose_all(self._runs.popitem(last=False)[1])
        return live

    @staticmethod
    def _dispose_superseded(live: dict[tuple[int, int], Subtask], epoch: int) -> None:
        """Every subtask runs in every epoch: one this worker last ran before epoch n-1 has
        run elsewhere since. Release it now, so its RocksDB instance stops compacting."""
        for place in [place for place, subtask in live.items() if subtask.epoch < epoch - 1]:
            live.pop(place).dispose()

    def _freeze_long_lived(self) -> None:
        """PySpark's daemon runs a full gc.collect() after every task of a reused worker;
        move what lives as long as the worker (modules, graph, subtasks built so far) out of
        its reach, once per worker."""
        if not self._gc_frozen:
            gc.collect()
            gc.freeze()
            self._gc_frozen = True


def _dispose_all(subtasks: dict[tuple[int, int], Subtask]) -> None:
    for subtask in subtasks.values():
        subtask.dispose()


# The cache of this Python worker.
WORKER_CACHE = SubtaskCache()
