"""A property-based fuzz of the REST API from its own OpenAPI description (schemathesis
and hypothesis): whatever is sent, no answer is a server error; without the token nothing
in the job store changes. Path parameters are often the ids of the store's jobs and
triggers, so that requests reach past the id checks. No driver is started."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
import schemathesis
from fabricated_jobs import report_of
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.dispatcher import dispatcher as dispatching
from lockgate.dispatcher.dispatcher import Dispatcher
from lockgate.dispatcher.home import DispatcherHome
from lockgate.dispatcher.job_store import (
    JobCommand,
    JobOutcome,
    JobSubmission,
    TriggerOutcome,
    now_ms,
    write_record,
)
from lockgate.dispatcher.rest.app import create_app

RUNNING = "1" * 32
ENDED = "2" * 32
TRIGGER = "3" * 32
BASE_URL = "http://127.0.0.1:8081"
EXAMPLES = 100  # per run: both take 10 to 20 s


@pytest.fixture
def api(tmp_path, monkeypatch):
    """The app, a client, its token, and a fingerprint of the job store."""
    monkeypatch.setattr(Dispatcher, "_watch", lambda self, files, resume: None)
    # a savepoint directory is probed by writing into it: only under tmp_path here
    monkeypatch.setattr(dispatching, "is_writable", lambda target: str(tmp_path) in target)
    home = DispatcherHome(tmp_path / "home")
    token = home.token()
    made: list[Dispatcher] = []

    def factory(loop):
        made.append(Dispatcher(home.path, 1 << 20, loop))
        return made[0]

    app = create_app(factory, token, True, 1 << 16)
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as client:
        store = made[0].store
        for job_id, status in ((RUNNING, "RUNNING"), (ENDED, "FINISHED")):
            files = store.create(JobSubmission(job_id, "job.py", [], {}, now_ms()), b"pass\n")
            attempt = files.new_attempt(job_id, None)
            report = report_of(job_id, status)
            configured = {"execution.checkpointing.savepoint-dir": str(tmp_path)}
            write_record(attempt.report_path, dataclasses.replace(report, configuration=configured))
            attempt.command(JobCommand(TRIGGER, "savepoint", str(tmp_path), False))
            write_record(
                attempt.triggers / f"{TRIGGER}.json",
                TriggerOutcome(TRIGGER, "COMPLETED", f"file://{tmp_path}/savepoint-1", None),
            )
            if status != "RUNNING":
                files.end(JobOutcome("FINISHED", now_ms(), "over"))
        lock = store.get(RUNNING).hold_lock()  # type: ignore[union-attr]
        try:
            yield app, client, token, lambda: fingerprint(store.directory)
        finally:
            os.close(lock)


def fingerprint(directory: Path) -> dict[str, tuple[int, int]]:
    return {
        str(path.relative_to(directory)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name != "driver.lock"
    }


def fuzz(app, client: TestClient, headers: dict[str, str]) -> list[tuple[str, str, int]]:
    """Sends EXAMPLES generated requests; what was sent and answered."""
    schema = schemathesis.openapi.from_dict(app.openapi())
    sent: list[tuple[str, str, int]] = []
    ids = st.sampled_from([RUNNING, ENDED, TRIGGER, None])

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=schema.as_strategy(), jobid=ids, triggerid=ids)
    def send(case, jobid, triggerid):
        for name, value in (("jobid", jobid), ("triggerid", triggerid)):
            if value is not None and name in (case.path_parameters or {}):
                case.path_parameters[name] = value
        kwargs = case.as_transport_kwargs(base_url=BASE_URL, headers=headers)
        response = client.request(
            case.method,
            kwargs["url"],
            headers=kwargs.get("headers"),
            params=kwargs.get("params"),
            json=kwargs.get("json"),
            content=kwargs.get("data"),
        )
        sent.append((case.method, case.formatted_path, response.status_code))
        assert response.status_code < 500, (case.method, kwargs, response.text)
        assert response.status_code < 400 or set(response.json()) == {"errors"}, response.text

    send()
    return sent


def test_without_the_token_no_request_fails_the_server_or_changes_anything(api):
    app, client, _, store = api
    before = store()
    sent = fuzz(app, client, {})
    changing = [s for s in sent if s[0] in ("POST", "PATCH", "PUT", "DELETE")]
    assert changing and {status for _, _, status in changing} == {401}, changing
    assert store() == before


def test_with_the_token_no_request_fails_the_server(api):
    app, client, token, _ = api
    sent = fuzz(app, client, {"Authorization": f"Bearer {token}"})
    assert any(status < 300 for method, _, status in sent if method == "POST"), sent
