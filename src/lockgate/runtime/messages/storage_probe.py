"""What the storage check (``jobmaster/storage_check.py``) and its Spark tasks
(``sparktask/storage_probe.py``) exchange: probe orders and reports, typed JSON records,
never pickles.
"""

from __future__ import annotations

from dataclasses import dataclass

from lockgate.common.records import Record, RecordFormatError

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
class ProbeTarget(Record):
    key: str  # the configuration key that names the location
    url: str  # a directory (SHARED, LOCAL) or a file (READ)
    mode: str

    def validate(self, where: str) -> None:
        if self.mode not in MODES:
            raise RecordFormatError(f"{where}: unknown probe mode {self.mode!r}")


@dataclass(frozen=True)
class ProbeOrder(Record, format=ORDER_FORMAT, version=VERSION):
    """What one check task probes; ``placed_on`` is the executor Spark was asked to run it
    on ("" when the driver knew of none)."""

    token: str  # the content of the driver's files, unique to one check
    targets: tuple[ProbeTarget, ...]
    placed_on: str


@dataclass(frozen=True)
class ProbeFailure(Record):
    key: str
    url: str  # the file or directory that failed
    action: str  # what could not be done: "read", "write"
    error: str


@dataclass(frozen=True)
class ProbeReport(Record, format=REPORT_FORMAT, version=VERSION):
    """What one check task found; ``lockgate`` is the version the executor runs, which the
    driver compares with its own before it reads anything else (see ``reported_version``)."""

    lockgate: str
    placed_on: str
    executor: str | None  # where the task ran, as far as it can tell
    hostname: str
    written: tuple[tuple[str, str], ...]  # (key, file URL) for the driver to read back
    failures: tuple[ProbeFailure, ...]


def reported_version(raw: object) -> str | None:
    """The lockgate version a report names, read before the report itself: an executor on
    another lockgate version may write another report format, and the driver must still be
    able to say that the versions differ rather than that a field is missing."""
    found = raw.get("lockgate") if isinstance(raw, dict) else None
    return found if isinstance(found, str) else None
