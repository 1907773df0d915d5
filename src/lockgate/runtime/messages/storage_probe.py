"""What the storage check (``jobmaster/storage_check.py``) and its Spark tasks
(``sparktask/storage_probe.py``) exchange: probe orders and reports, typed JSON records,
never pickles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lockgate.common.records import RecordFormatError, envelope, field, open_envelope

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
