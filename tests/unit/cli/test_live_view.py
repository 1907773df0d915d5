"""``lockgate run``'s terminal view, drawn from a JobReport: user text is shown as written
(rich markup in a job name or an exception is not markup); on a stderr that is not a terminal,
a line per epoch, for each job the program runs."""

from __future__ import annotations

import dataclasses
import io

from fabricated_jobs import report, report_of
from rich.console import Console

from lockgate.cli.live_view import LiveView, render
from lockgate.dispatcher.job_store import now_ms
from lockgate.runtime.jobmaster.job_report import EpochReport, FailureReport
from lockgate.runtime.jobmaster.progress import epoch_line


def test_the_view_shows_tasks_epochs_checkpoints_and_the_last_failure():
    job = dataclasses.replace(
        report("0" * 32, "RUNNING"),
        job_name="[bold]sums[/",
        failures=[FailureReport(1, "builtins.ValueError", "bad [red]input", "trace")],
    )
    console = Console(record=True, width=200)
    console.print(render(job))
    text = console.export_text()
    assert "[bold]sums[/ 00000000000000000000000000000000  RUNNING  restarts 1" in text
    assert "1: count -> Sink: out" in text
    rows = {line.split("│")[2].strip(): line for line in text.splitlines() if line.count("│") > 4}
    assert [c.strip() for c in rows["count (count)"].split("│")[4:6]] == ["100", "60"]
    assert [c.strip() for c in rows["Sink: out (out)"].split("│")[4:6]] == ["", "100"]
    assert "last failure: builtins.ValueError: bad [red]input" in text
    for column in ("epoch", "records/s", "checkpoint", "incremental"):
        assert column in text


def test_an_epoch_line_has_its_records_rate_state_and_checkpoint():
    job = report("0" * 32, "RUNNING")
    console = Console(record=True, width=200)
    console.print(epoch_line("[x]", job.epochs[0], 100))
    assert console.export_text().strip() == (
        "[x] epoch   1 |      100 records in  0.05 s (    2,000/s) | total        100 | "
        "state 2.0 KiB (10 entries) | checkpoint 1"
    )


def test_every_job_of_the_program_gets_its_epochs_printed():
    out = io.StringIO()
    view = LiveView(Console(file=out, width=200))

    def report(job_id: str, epochs: int):
        return dataclasses.replace(
            report_of(job_id),
            job_name=f"job {job_id[0]}",
            epochs=[EpochReport(e, now_ms(), 10, 100.0, 0, 0, None) for e in range(1, epochs + 1)],
        )

    view._print_lines(report("a" * 32, 3))
    view._print_lines(report("a" * 32, 3))
    view._print_lines(report("b" * 32, 2))  # the program's second job counts from 1 again
    lines = out.getvalue().splitlines()
    assert [" ".join(line.split(" |")[0].split()) for line in lines] == [
        "job a epoch 1",
        "job a epoch 2",
        "job a epoch 3",
        "job b epoch 1",
        "job b epoch 2",
    ]
