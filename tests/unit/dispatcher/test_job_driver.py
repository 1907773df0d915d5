"""The job driver's reporter, without Spark: what it writes to the job store."""

from __future__ import annotations

import dataclasses
import time

from fabricated_jobs import report_of

from lockgate.dispatcher import job_driver
from lockgate.dispatcher.job_store import AttemptFiles, DriverAttempt, now_ms


class Running:
    """A JobRunner whose job runs."""

    def wait(self, timeout_s=None):
        return None


def test_a_report_is_written_when_the_job_changed_not_every_half_second(tmp_path, monkeypatch):
    files = AttemptFiles(tmp_path / "0")
    files.create(DriverAttempt(0, "a" * 32, None, now_ms()))
    report = report_of("a" * 32)
    reports = iter([report] * 4 + [dataclasses.replace(report, restarts=1)] * 100)
    monkeypatch.setattr(
        job_driver,
        "job_report",
        lambda runner: dataclasses.replace(next(reports), written_ms=now_ms()),
    )
    written = []
    real = job_driver.write_record

    def write_record(path, record):
        written.append(record)
        real(path, record)

    monkeypatch.setattr(job_driver, "write_record", write_record)
    monkeypatch.setattr(job_driver, "REPORT_INTERVAL_S", 0.05)
    reporter = job_driver.JobReporter(files)
    reporter.job_started(Running())  # type: ignore[arg-type]
    reporter.start()
    time.sleep(0.6)
    reporter.close()
    assert [r.restarts for r in written] == [0, 1]
    assert files.report() == written[-1]
