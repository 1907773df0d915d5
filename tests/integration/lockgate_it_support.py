"""Helpers shared by the integration tests (not a test module).

Classes defined here are pickled by reference, so Spark's Python workers import this module
from the test directory (which pytest puts on ``sys.path`` before the Spark session starts).
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from lockgate.datastream import MapFunction
from lockgate.runtime.jobmaster.epoch_job import RELEASE_GROUP
from lockgate.runtime.jobmaster.storage_check import JOB_GROUP as STORAGE_CHECK_GROUP

# A test's variants that `make test` leaves to `make integration-full` (the marker `full`):
# the same scenario on another backend or parallelism, whose own code paths the suite covers
# elsewhere (the backends' unit tests run on every backend; a test about one backend names it).
FULL = pytest.mark.full


def matrix(name: str, values: list[Any]) -> pytest.MarkDecorator:
    """Parametrize ``name`` over ``values``: the first in `make test`, all of them in
    `make integration-full`."""
    several = "," in name  # "a, b": each value is a tuple of the arguments
    first, *others = values
    variants = [
        pytest.param(*v, marks=FULL) if several else pytest.param(v, marks=FULL) for v in others
    ]
    return pytest.mark.parametrize(name, [first, *variants])


# Runs a test once per keyed state backend: it overrides the ``backend`` fixture (conftest),
# which ``make_env`` configures as state.backend.type. `make test` runs the first.
BACKENDS = matrix("backend", ["hashmap", "rocksdb"])
# The same, and RocksDB with incremental checkpoints (SST files shared between checkpoints);
# `make test` runs the incremental one, whose restore reads shared and private files.
BACKENDS_AND_INCREMENTAL = matrix("backend", ["rocksdb-incremental", "hashmap", "rocksdb"])
# Both backends, in `make test` too: where each backend has its own code path under test.
EACH_BACKEND = pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])


# Spark's and the JVM's lines on a driver's stderr (log4j's format, and what comes before the
# log level is set)
_SPARK_LOG_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|ERROR) ")
_SPARK_STARTUP_LINES = (
    "WARNING: Using incubator modules:",
    "Using Spark's default log4j profile:",
    'Setting default log level to "WARN".',
    "To adjust logging level use sc.setLogLevel(newLevel).",
    'Setting Spark log level to "WARN".',
    "Picked up JAVA_TOOL_OPTIONS:",  # the JVM, when the variable is set (tests/conftest.py)
)


def spark_console_line(line: str) -> bool:
    """Whether a line of a driver's output is Spark's or its JVM's own."""
    return bool(_SPARK_LOG_LINE.match(line)) or line.startswith(_SPARK_STARTUP_LINES)


# How many job ids before its creation a SparkJobCounter looks at for epochs already started,
# and how many unknown ids in a row end the jobs it knows
_LOOK_BACK = 10
_GAPS = 10


class SparkJobCounter:
    """Counts the epochs started since it was created, by their Spark job groups (an epoch's
    jobs share one: its source stages submitted ahead and its job): not the storage check's
    job before a job's first epoch, nor the jobs that release the subtasks of a cancelled or
    failed run."""

    def __init__(self, spark: Any):
        jsc = spark.sparkContext._jsc.sc()
        self._tracker = spark.sparkContext.statusTracker()
        self._store = jsc.statusStore()
        self._groups_of: dict[int, str] = {}
        # the id of Spark's next job (its scheduler's counter: ids rise from 0)
        self._first = int(jsc.dagScheduler().nextJobId())
        # an epoch that started before (its sources submitted ahead) is not one started since
        before = self._ids(max(0, self._first - _LOOK_BACK), self._first)
        self._before = {self._group(job_id) for job_id in before}

    def _ids(self, first: int, last: int | None = None) -> list[int]:
        """Ids of the jobs Spark knows from ``first`` on (up to ``last``, excluded), looking
        past a few unknown ids (a job that failed before it started leaves a gap)."""
        ids: list[int] = []
        job_id, misses = first, 0
        while misses < _GAPS and (last is None or job_id < last):
            if self._tracker.getJobInfo(job_id) is not None:
                ids.append(job_id)
                misses = 0
            else:
                misses += 1
            job_id += 1
        return ids

    def _group(self, job_id: int) -> str:
        if job_id not in self._groups_of:
            group = self._store.job(job_id).jobGroup()
            self._groups_of[job_id] = group.get() if group.isDefined() else f"job {job_id}"
        return self._groups_of[job_id]

    def started(self) -> list[int]:
        """Ids of the epochs' jobs started since creation, in order."""
        not_epochs = {STORAGE_CHECK_GROUP, RELEASE_GROUP, *self._before}
        return [i for i in self._ids(self._first) if self._group(i) not in not_epochs]

    def result_jobs(self) -> int:
        """The epochs' jobs started since creation that read a shuffle: an epoch's own job,
        not the one-stage map-stage jobs of sources submitted ahead (pipelined epochs)."""
        return sum(len(self._tracker.getJobInfo(job_id).stageIds) > 1 for job_id in self.started())

    def count(self, at_least: int = 0, settle_s: float = 3.0) -> int:
        """Epochs started since creation. Job events reach the tracker asynchronously, so
        wait (up to ``settle_s``) until at least ``at_least`` are visible."""
        deadline = time.monotonic() + settle_s
        while True:
            started = len({self._group(job_id) for job_id in self.started()})
            if started >= at_least or time.monotonic() > deadline:
                return started
            time.sleep(0.05)

    def none_started(self) -> bool:
        """No epoch started, and no storage check either."""
        time.sleep(0.3)  # let any job-start event that might exist reach the tracker
        return self.count() == 0 and not self.checks_started()

    def checks_started(self) -> list[int]:
        """Ids of the storage checks' jobs started since creation."""
        return [i for i in self._ids(self._first) if self._group(i) == STORAGE_CHECK_GROUP]


def collect(stream: Any) -> list[Any]:
    """All results of a bounded job, through the closeable iterator."""
    with stream.execute_and_collect() as results:
        return list(results)


def by_key(records: Iterable[Any], key: Callable[[Any], Any]) -> dict[Any, list[Any]]:
    """Records grouped by key, each group in the order given."""
    groups: dict[Any, list[Any]] = {}
    for record in records:
        groups.setdefault(key(record), []).append(record)
    return groups


def run_in_thread(fn: Callable[[], Any], timeout_s: float) -> Any:
    """Run ``fn`` in a daemon thread; fail (instead of hanging) if it does not finish."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise AssertionError(f"the job did not deliver its results within {timeout_s} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


class CaptureWorkerOutput(MapFunction):
    """Identity map that points its Python worker's stdout and stderr at a file.

    The print sink writes from Spark's Python worker processes, whose output reaches the
    driver only through the JVM (pytest's ``capfd`` cannot see it). Chained right before a
    print sink, this map redirects the worker's file descriptors 1 and 2 from ``open()``
    until ``close()``, i.e. for the subtask's lifetime. Use it in single-epoch jobs only,
    so that open and close happen in the same Spark task.
    """

    def __init__(self, path: str):
        self.path = path
        self._saved: tuple[int, int] | None = None

    def open(self, runtime_context: Any) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        self._saved = (os.dup(1), os.dup(2))
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)

    def map(self, value: Any) -> Any:
        return value

    def close(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        if self._saved is not None:
            out, err = self._saved
            os.dup2(out, 1)
            os.dup2(err, 2)
            os.close(out)
            os.close(err)
            self._saved = None


class OpaqueKey:
    """A key type with a stable hash and no portable encoding: it goes into RocksDB pickled,
    and a savepoint refuses it."""

    def __init__(self, value: int):
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpaqueKey) and other.value == self.value

    def __hash__(self) -> int:
        return self.value

    def __lockgate_key_hash__(self) -> int:
        return self.value


def forge_crc(data: bytes, at: int, crc: int) -> bytes:
    """``data`` with its bytes ``at`` to ``at + 4`` replaced so that its CRC-32 is ``crc``:
    CRC-32 is affine in the message's bits, so 32 chosen bits reach any value."""
    zeros = zlib.crc32(bytes(len(data)))
    basis: dict[int, tuple[int, int]] = {}  # top bit -> (CRC change, bits of the 4 bytes)
    for bit in range(32):
        probe = bytearray(len(data))
        probe[at + bit // 8] = 1 << (bit % 8)
        change, bits = zlib.crc32(bytes(probe)) ^ zeros, 1 << bit
        while change:
            top = change.bit_length() - 1
            if top not in basis:
                basis[top] = (change, bits)
                break
            change, bits = change ^ basis[top][0], bits ^ basis[top][1]
    forged = bytearray(data)
    forged[at : at + 4] = bytes(4)
    missing, chosen = crc ^ zlib.crc32(bytes(forged)), 0
    while missing:
        change, bits = basis[missing.bit_length() - 1]
        missing, chosen = missing ^ change, chosen ^ bits
    forged[at : at + 4] = chosen.to_bytes(4, "little")
    assert zlib.crc32(bytes(forged)) == crc
    return bytes(forged)
