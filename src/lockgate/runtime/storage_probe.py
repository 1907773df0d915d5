"""Can this executor reach the job's storage? The task side of the check a job runs before its
first epoch (``jobmaster/storage_check.py``), and the records it exchanges with the driver.

The driver writes a file under each shared location; one Spark task per executor reads it
back, writes a file of its own there (which the driver then reads), and reports what failed.
Probe orders and reports are typed JSON records, never pickles.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from lockgate.checkpoint.storage import Storage, read_url
from lockgate.common.records import RecordFormatError, envelope, field, open_envelope
from lockgate.runtime.executor_identity import executor_id

ORDER_FORMAT = "lockgate-storage-probe"
REPORT_FORMAT = "lockgate-storage-probe-report"
VERSION = 1

# What a probe does at a target
SHARED = "shared"  # a directory: read the driver's file in it, write one of its own
READ = "read"  # a file: read it (a checkpoint to resume from)
LOCAL = "local"  # a directory on the executor's own disk: write a file there and remove it
MODES = (SHARED, READ, LOCAL)

DRIVER_FILE = "driver"


@dataclass(frozen=True)
class ProbeTarget:
    key: str  # the configuration key that names the location
    url: str  # a directory (SHARED, LOCAL) or a file (READ)
    mode: str

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "url": self.url, "mode": self.mode}

    @staticmethod
    def from_json(raw: Any, where: str) -> ProbeTarget:
        if not isinstance(raw, dict):
            raise RecordFormatError(f"{where}: a target is {type(raw).__name__}, not an object")
        mode = field(raw, "mode", str, where)
        if mode not in MODES:
            raise RecordFormatError(f"{where}: unknown probe mode {mode!r}")
        return ProbeTarget(field(raw, "key", str, where), field(raw, "url", str, where), mode)


@dataclass(frozen=True)
class ProbeOrder:
    """What one check task probes; ``placed_on`` is the executor Spark was asked to run it
    on ("" when the driver knew of none)."""

    token: str  # the content of the driver's files, unique to one check
    targets: tuple[ProbeTarget, ...]
    placed_on: str

    def to_json(self) -> dict[str, Any]:
        body = {
            "token": self.token,
            "targets": [t.to_json() for t in self.targets],
            "placed_on": self.placed_on,
        }
        return envelope(ORDER_FORMAT, VERSION, body)

    @staticmethod
    def from_json(raw: Any, where: str) -> ProbeOrder:
        body = open_envelope(raw, ORDER_FORMAT, VERSION, where)
        targets = field(body, "targets", list, where)
        return ProbeOrder(
            field(body, "token", str, where),
            tuple(ProbeTarget.from_json(t, where) for t in targets),
            field(body, "placed_on", str, where),
        )


@dataclass(frozen=True)
class ProbeFailure:
    key: str
    url: str  # the file or directory that failed
    action: str  # what could not be done: "read", "write"
    error: str

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "url": self.url, "action": self.action, "error": self.error}

    @staticmethod
    def from_json(raw: Any, where: str) -> ProbeFailure:
        if not isinstance(raw, dict):
            raise RecordFormatError(f"{where}: a failure is {type(raw).__name__}, not an object")
        return ProbeFailure(
            field(raw, "key", str, where),
            field(raw, "url", str, where),
            field(raw, "action", str, where),
            field(raw, "error", str, where),
        )


@dataclass(frozen=True)
class ProbeReport:
    placed_on: str
    executor: str | None  # where the task ran, as far as it can tell
    hostname: str
    written: tuple[tuple[str, str], ...]  # (key, file URL) for the driver to read back
    failures: tuple[ProbeFailure, ...]

    def to_json(self) -> dict[str, Any]:
        body = {
            "placed_on": self.placed_on,
            "executor": self.executor,
            "hostname": self.hostname,
            "written": [list(w) for w in self.written],
            "failures": [f.to_json() for f in self.failures],
        }
        return envelope(REPORT_FORMAT, VERSION, body)

    @staticmethod
    def from_json(raw: Any, where: str) -> ProbeReport:
        body = open_envelope(raw, REPORT_FORMAT, VERSION, where)
        written = field(body, "written", list, where)
        if not all(
            isinstance(w, list) and len(w) == 2 and all(isinstance(s, str) for s in w)
            for w in written
        ):
            raise RecordFormatError(f"{where}: field 'written' must hold [key, url] pairs")
        return ProbeReport(
            field(body, "placed_on", str, where),
            field(body, "executor", (str, type(None)), where),
            field(body, "hostname", str, where),
            tuple((key, url) for key, url in written),
            tuple(ProbeFailure.from_json(f, where) for f in field(body, "failures", list, where)),
        )


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def probe(order: ProbeOrder, executor: str | None, hostname: str) -> ProbeReport:
    """Run one probe order where this process runs."""
    failures: list[ProbeFailure] = []
    written: list[tuple[str, str]] = []
    own = f"executor-{executor or 'unknown'}-{uuid.uuid4().hex[:8]}"
    for target in order.targets:
        if target.mode == READ:
            try:
                read_url(target.url)
            except Exception as exc:
                failures.append(ProbeFailure(target.key, target.url, "read", _error(exc)))
            continue
        storage = Storage(target.url)
        if target.mode == SHARED:
            driver_file = storage.url_of(DRIVER_FILE)
            try:
                found = storage.read_bytes(DRIVER_FILE)
            except Exception as exc:
                failures.append(ProbeFailure(target.key, driver_file, "read", _error(exc)))
            else:
                if found != order.token.encode():
                    error = f"it holds {found[:40]!r}, not what the driver wrote"
                    failures.append(ProbeFailure(target.key, driver_file, "read", error))
        mine = storage.url_of(own)
        try:
            storage.write_bytes(own, mine.encode())
        except Exception as exc:
            failures.append(ProbeFailure(target.key, mine, "write", _error(exc)))
            continue
        if target.mode == SHARED:
            written.append((target.key, mine))
        else:
            try:
                storage.remove(own)
            except Exception as exc:
                failures.append(ProbeFailure(target.key, mine, "remove", _error(exc)))
    return ProbeReport(order.placed_on, executor, hostname, tuple(written), tuple(failures))


class StorageProbe:
    """The function of the check's Spark job: one JSON order in, one JSON report out."""

    def __call__(self, orders: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        executor, hostname = executor_id(), socket.gethostname()
        for raw in orders:
            order = ProbeOrder.from_json(raw, "a storage probe order")
            yield probe(order, executor, hostname).to_json()
