"""``lockgate run``'s terminal view of a job running in process: status, tasks, epochs with
their throughput, checkpoints with their durations and sizes, and restarts.

It draws on stderr (stdout is the job's, where ``print()`` sinks write), redrawn in place
on a terminal and as one line per epoch elsewhere (a log file, a pipe).
"""

from __future__ import annotations

import threading

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from lockgate.runtime.jobmaster.job_report import JobReport, job_report
from lockgate.runtime.jobmaster.job_runner import JobRunner
from lockgate.runtime.jobmaster.progress import human_bytes

REFRESH_S = 0.5
EPOCH_ROWS = 8


def render(report: JobReport) -> Group:
    header = (
        f"[bold]{report.job_name}[/] {report.job_id}  [bold]{report.status}[/]  "
        f"restarts {report.restarts}" + (f"  Spark UI {report.spark_ui}" if report.spark_ui else "")
    )
    tasks = Table("task", "operators (uid)", "parallelism", title="tasks", title_justify="left")
    for vertex in report.vertices:
        tasks.add_row(
            vertex.name,
            ", ".join(f"{o.name} ({o.uid})" for o in vertex.operators),
            str(vertex.parallelism),
        )
    epochs = Table(
        "epoch",
        "records",
        "seconds",
        "records/s",
        "state",
        "checkpoint",
        title="epochs",
        title_justify="left",
    )
    for epoch in report.epochs[-EPOCH_ROWS:]:
        seconds = epoch.duration_ms / 1000
        epochs.add_row(
            str(epoch.epoch),
            f"{epoch.records:,}",
            f"{seconds:.2f}",
            f"{epoch.records / seconds:,.0f}" if seconds else "-",
            human_bytes(epoch.state_bytes),
            str(epoch.checkpoint_id or ""),
        )
    checkpoints = Table(
        "checkpoint",
        "status",
        "ms",
        "size",
        "incremental",
        title="checkpoints",
        title_justify="left",
    )
    for checkpoint in report.checkpoints[-EPOCH_ROWS:]:
        checkpoints.add_row(
            str(checkpoint.id),
            checkpoint.status,
            f"{checkpoint.duration_ms:,.0f}",
            human_bytes(checkpoint.size_bytes),
            human_bytes(checkpoint.written_bytes),
        )
    parts: list[object] = [header, tasks, epochs]
    if report.checkpoints:
        parts.append(checkpoints)
    if report.failures:
        last = report.failures[-1]
        parts.append(f"[red]last failure:[/] {last.exception}: {last.message}")
    return Group(*parts)  # type: ignore[arg-type]


class LiveView:
    """The program's JobListener under ``lockgate run``."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True, highlight=False)
        self._runners: list[JobRunner] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="lockgate-live-view", daemon=True)
        self._printed: dict[str, int] = {}  # job id -> its last epoch printed

    def job_started(self, runner: JobRunner) -> None:
        self._runners.append(runner)
        if not self._thread.is_alive():
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        if self.console.is_terminal:
            with Live(console=self.console, refresh_per_second=4, transient=False) as live:
                while True:
                    stopping = self._stop.wait(REFRESH_S)
                    live.update(render(job_report(self._runners[-1])))
                    if stopping:
                        return
        while True:
            stopping = self._stop.wait(REFRESH_S)
            self._print_lines(job_report(self._runners[-1]))
            if stopping:
                return

    def _print_lines(self, report: JobReport) -> None:
        for epoch in report.epochs:
            if epoch.epoch <= self._printed.get(report.job_id, 0):
                continue
            self._printed[report.job_id] = epoch.epoch
            seconds = epoch.duration_ms / 1000
            rate = epoch.records / seconds if seconds else 0.0
            self.console.print(
                f"{report.job_name} epoch {epoch.epoch} | {epoch.records:,} records in "
                f"{seconds:.2f} s ({rate:,.0f}/s) | state {human_bytes(epoch.state_bytes)}"
                + (f" | checkpoint {epoch.checkpoint_id}" if epoch.checkpoint_id else "")
                + f" | restarts {report.restarts}",
                soft_wrap=True,
            )
