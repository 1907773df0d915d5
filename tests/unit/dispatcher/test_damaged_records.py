"""A job store with records the Dispatcher cannot read (written by a lockgate of another
version, or damaged): the jobs are listed and shown without them, and a job that was
running fails saying why rather than keeping the Dispatcher from starting or starting over
from its beginning."""

from __future__ import annotations

import json

from fabricated_jobs import report_of
from fastapi.testclient import TestClient

from lockgate.dispatcher.dispatcher import Dispatcher
from lockgate.dispatcher.home import DispatcherHome
from lockgate.dispatcher.job_store import JobOutcome, JobSubmission, now_ms
from lockgate.dispatcher.rest.app import create_app

ENDED = "a" * 32
RUNNING = "b" * 32


def test_reports_that_cannot_be_read_neither_hide_jobs_nor_stop_the_dispatcher(tmp_path):
    home = DispatcherHome(tmp_path / "home")
    token = home.token()

    def older_report(dispatcher: Dispatcher, job_id: str, status: str):
        submission = JobSubmission(job_id, "job.py", [], {}, now_ms())
        files = dispatcher.store.create(submission, b"pass\n")
        attempt = files.new_attempt(job_id, None)
        raw = report_of(job_id, status).to_json()
        del raw["watermarks"]  # a report of before JobReport had them
        attempt.report_path.write_text(json.dumps(raw))
        return files

    made: dict[str, Dispatcher] = {}

    def factory(loop):
        dispatcher = made["d"] = Dispatcher(home.path, 1 << 20, loop)
        older_report(dispatcher, ENDED, "FINISHED").end(JobOutcome("FINISHED", now_ms(), "over"))
        older_report(dispatcher, RUNNING, "RUNNING")  # its driver died with the Dispatcher
        return dispatcher

    app = create_app(factory, token, True, 1 << 20)
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        overview = client.get("/v1/jobs/overview")
        assert overview.status_code == 200, overview.text
        states = {job["jid"]: job["state"] for job in overview.json()["jobs"]}
        assert states == {ENDED: "FINISHED", RUNNING: "FAILED"}
        assert client.get(f"/v1/jobs/{ENDED}").json()["state"] == "FINISHED"
        files = made["d"].store.get(RUNNING)
        assert files is not None
        outcome = files.outcome()
        assert outcome is not None and "cannot be resumed" in outcome.reason
        assert "report.json" in outcome.reason and len(files.attempts()) == 1
        # a submission that cannot be read: that job alone is left out, or named
        (files.directory / "submission.json").write_text("{}")
        assert [j["jid"] for j in client.get("/v1/jobs/overview").json()["jobs"]] == [ENDED]
        shown = client.get(f"/v1/jobs/{RUNNING}")
        assert shown.status_code == 500 and "submission.json" in shown.json()["errors"][0]
