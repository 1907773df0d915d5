"""``lockgate run``'s view of its jobs on a stderr that is not a terminal: a line per
epoch, for each job the program runs."""

from __future__ import annotations

import dataclasses
import io

from job_reports import report_of
from rich.console import Console

from lockgate.cli.live_view import LiveView
from lockgate.dispatcher.job_store import now_ms
from lockgate.runtime.jobmaster.job_report import EpochReport


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
    assert [line.split(" |")[0] for line in lines] == [
        "job a epoch 1",
        "job a epoch 2",
        "job a epoch 3",
        "job b epoch 1",
        "job b epoch 2",
    ]
