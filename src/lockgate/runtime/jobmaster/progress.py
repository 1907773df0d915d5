"""A line per epoch on stderr while a job runs: records, duration and state size."""

from __future__ import annotations

from typing import Any

from rich.console import Console


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


class EpochProgress:
    def __init__(self, job_name: str):
        self.console = Console(stderr=True, highlight=False)
        self.job_name = job_name
        self.total = 0

    def report(self, stats: Any) -> None:
        self.total += stats.records
        rate = stats.records / (stats.duration_ms / 1000) if stats.duration_ms else 0.0
        self.console.print(
            f"[bold]{self.job_name}[/] epoch {stats.epoch:>3} | {stats.records:>8,} records "
            f"in {stats.duration_ms / 1000:5.2f} s ({rate:>9,.0f}/s) | total {self.total:>10,} "
            f"| state {human_bytes(stats.state_bytes)} ({stats.state_entries:,} entries)"
            + (f" | checkpoint {stats.checkpoint_id}" if stats.checkpoint_id else ""),
            soft_wrap=True,
        )
