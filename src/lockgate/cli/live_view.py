"""``lockgate run``'s terminal view of a job running in process: status, tasks, epochs with
their throughput, checkpoints with their durations and sizes, and restarts.

It draws on stderr (stdout is the job's, where ``print()`` sinks write), redrawn in place
on a terminal and as one line per epoch elsewhere (a log file, a pipe).
"""

from __future__ import annotations

import threading

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from lockgate.runtime.jobmaster.job_report import JobReport, job_report
from lockgate.runtime.jobmaster.job_runner import JobRunner
from lockgate.runtime.jobmaster.progress import epoch_line, human_bytes
from lockgate.runtime.messages.metric_value import CounterValue
from lockgate.runtime.subtaskhost.metrics import NUM_RECORDS_IN, NUM_RECORDS_OUT

REFRESH_S = 0.5
EPOCH_ROWS = 8


def record_counts(report: JobReport) -> dict[str, tuple[int | None, int | None]]:
    """Operator uid -> its records in and out (Flink's numRecordsIn and numRecordsOut),
    summed over its subtasks."""
    totals: dict[str, list[int | None]] = {}
    for subtask in report.metrics:
        entry = totals.setdefault(subtask.uid, [None, None])
        for position, name in enumerate((NUM_RECORDS_IN, NUM_RECORDS_OUT)):
            value = subtask.values.get(name)
            if isinstance(value, CounterValue):
                entry[position] = (entry[position] or 0) + value.count
    return {uid: (entry[0], entry[1]) for uid, entry in totals.items()}


def render(report: JobReport) -> Group:
    header = (
        f"[bold]{escape(report.job_name)}[/] {report.job_id}  [bold]{report.status}[/]  "
        f"restarts {report.restarts}" + (f"  Spark UI {report.spark_ui}" if report.spark_ui else "")
    )
    counts = record_counts(report)
    tasks = Table(
        "task",
        "operator (uid)",
        "parallelism",
        "records in",
        "records out",
        title="operators",
        title_justify="left",
    )
    for vertex in report.vertices:
        for position, operator in enumerate(vertex.operators):
            records_in, records_out = counts.get(operator.uid, (None, None))
            tasks.add_row(
                f"{vertex.index}: {escape(vertex.name)}" if position == 0 else "",
                escape(f"{operator.name} ({operator.uid})"),
                str(vertex.parallelism) if position == 0 else "",
                f"{records_in:,}" if records_in is not None else "",
                f"{records_out:,}" if records_out is not None else "",
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
        parts.append(f"[red]last failure:[/] {escape(f'{last.exception}: {last.message}')}")
    return Group(*parts)  # type: ignore[arg-type]


class LiveView:
    """The program's JobListener under ``lockgate run``."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True, highlight=False)
        self._runners: list[JobRunner] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="lockgate-live-view", daemon=True)
        self._printed: dict[str, tuple[int, int]] = {}  # job id -> last epoch, records

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
        printed, total = self._printed.get(report.job_id, (0, 0))
        for epoch in report.epochs:
            if epoch.epoch <= printed:
                continue
            printed, total = epoch.epoch, total + epoch.records
            self.console.print(epoch_line(report.job_name, epoch, total), soft_wrap=True)
        self._printed[report.job_id] = (printed, total)
