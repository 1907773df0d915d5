"""A line per epoch on stderr while a job runs: records, duration and state size."""

from __future__ import annotations

from typing import Protocol

from rich.console import Console
from rich.markup import escape


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


class EpochFigures(Protocol):
    """An epoch's statistics (the runtime's EpochStats, the JobReport's EpochReport)."""

    @property
    def epoch(self) -> int: ...
    @property
    def records(self) -> int: ...
    @property
    def duration_ms(self) -> float: ...
    @property
    def state_bytes(self) -> int: ...
    @property
    def state_entries(self) -> int: ...
    @property
    def checkpoint_id(self) -> int | None: ...


def epoch_line(job_name: str, stats: EpochFigures, total: int) -> str:
    """One epoch in a line (rich markup), with the records read so far (``total``)."""
    rate = stats.records / (stats.duration_ms / 1000) if stats.duration_ms else 0.0
    return (
        f"[bold]{escape(job_name)}[/] epoch {stats.epoch:>3} | {stats.records:>8,} records "
        f"in {stats.duration_ms / 1000:5.2f} s ({rate:>9,.0f}/s) | total {total:>10,} "
        f"| state {human_bytes(stats.state_bytes)} ({stats.state_entries:,} entries)"
        + (f" | checkpoint {stats.checkpoint_id}" if stats.checkpoint_id else "")
    )


class EpochProgress:
    """``lockgate.progress``: the line of each epoch, printed as the epoch ends."""

    def __init__(self, job_name: str):
        self.console = Console(stderr=True, highlight=False)
        self.job_name = job_name
        self.total = 0

    def report(self, stats: EpochFigures) -> None:
        self.total += stats.records
        self.console.print(epoch_line(self.job_name, stats, self.total), soft_wrap=True)
