"""``lockgate run``'s terminal view, drawn from a JobReport: user text is shown as written
(rich markup in a job name or an exception is not markup)."""

from __future__ import annotations

import dataclasses

from fabricated_jobs import report
from rich.console import Console

from lockgate.cli.live_view import render
from lockgate.runtime.jobmaster.job_report import FailureReport
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
