"""The job store through a Dispatcher killed between two of its steps: a job or an attempt
is there whole, with its record, or not at all, and the next Dispatcher goes on."""

from __future__ import annotations

import threading

import pytest

from lockgate.dispatcher import job_store
from lockgate.dispatcher.job_store import JobStore, JobSubmission, now_ms

JOB = "0123456789abcdef0123456789abcdef"


class Killed(BaseException):
    """The Dispatcher's process dies here."""


def die_writing(monkeypatch, name: str) -> None:
    real = job_store.write_record

    def write_record(path, record):
        if path.name == name:
            raise Killed(path)
        real(path, record)

    monkeypatch.setattr(job_store, "write_record", write_record)


def submission() -> JobSubmission:
    return JobSubmission(JOB, "job.py", [], {}, now_ms())


def test_a_submission_cut_short_leaves_no_job(tmp_path, monkeypatch):
    store = JobStore(tmp_path)
    die_writing(monkeypatch, "submission.json")
    with pytest.raises(Killed):
        store.create(submission(), b"pass\n")
    monkeypatch.undo()
    restarted = JobStore(tmp_path)
    assert restarted.jobs() == []
    assert list(restarted.directory.iterdir()) == []
    files = restarted.create(submission(), b"pass\n")  # the client's retry
    assert files.submission().job_id == JOB


def test_an_attempt_cut_short_is_not_an_attempt(tmp_path, monkeypatch):
    files = JobStore(tmp_path).create(submission(), b"pass\n")
    files.new_attempt(JOB, None)
    die_writing(monkeypatch, "attempt.json")
    with pytest.raises(Killed):
        files.new_attempt("1" * 32, "file:///ck/chk-3")
    monkeypatch.undo()
    assert [a.attempt().number for a in files.attempts()] == [0]
    again = files.new_attempt("2" * 32, "file:///ck/chk-3")
    assert (again.attempt().number, again.attempt().job_id) == (1, "2" * 32)
    assert sorted(p.name for p in (files.directory / "attempts").iterdir()) == ["0", "1"]


def test_threads_writing_the_same_record_each_write_it_whole(tmp_path):
    """Two requests retrying one savepoint trigger id write its command at once."""
    path = tmp_path / "command.json"
    start = threading.Barrier(4)
    failures: list[BaseException] = []

    def write(n: int) -> None:
        start.wait()
        for i in range(200):
            try:
                job_store.write_file(path, f"{n} {i}".encode() * 1000)
            except BaseException as exc:
                failures.append(exc)
                return

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert path.read_bytes() in {f"{n} 199".encode() * 1000 for n in range(4)}  # one, whole
    assert [p.name for p in tmp_path.iterdir()] == ["command.json"]
