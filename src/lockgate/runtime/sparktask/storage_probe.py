"""Can this executor reach the job's storage? The task side of the check a job runs before its
first epoch (``jobmaster/storage_check.py``).

The driver writes a file under each shared location; one Spark task per executor reads it
back, writes a file of its own there (which the driver then reads), and reports what failed.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from lockgate.common.version import __version__
from lockgate.core.fs.storage import Storage, read_url
from lockgate.runtime.messages.storage_probe import (
    DRIVER_FILE,
    READ,
    SHARED,
    ProbeFailure,
    ProbeOrder,
    ProbeReport,
)
from lockgate.runtime.sparktask.executor_identity import executor_id


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
    return ProbeReport(
        __version__, order.placed_on, executor, hostname, tuple(written), tuple(failures)
    )


class StorageProbe:
    """The function of the check's Spark job: one JSON order in, one JSON report out."""

    def __call__(self, orders: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        executor, hostname = executor_id(), socket.gethostname()
        for raw in orders:
            order = ProbeOrder.from_json(raw, "a storage probe order")
            yield probe(order, executor, hostname).to_json()
