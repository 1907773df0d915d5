"""The Dispatcher's REST API against jobs written into its job store by the test (no Spark):
Flink's shapes field for field, its error shapes and statuses, the token, and the requests
the API hands to a job's driver."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
from fabricated_jobs import add_job
from fastapi.testclient import TestClient

from lockgate.dispatcher.dispatcher import Dispatcher
from lockgate.dispatcher.home import DispatcherHome
from lockgate.dispatcher.job_store import (
    JobCommand,
    JobOutcome,
    JobStore,
    JobSubmission,
    TriggerOutcome,
    now_ms,
    write_record,
)
from lockgate.dispatcher.rest.app import create_app
from lockgate.runtime.jobmaster.job_report import JobReport

RUNNING = "0123456789abcdef0123456789abcdef"
ENDED = "fedcba9876543210fedcba9876543210"
UNKNOWN = "00000000000000000000000000000000"
MAX_BODY = 4096
LOOPBACK = "http://127.0.0.1:8081"  # the Host header of a client on loopback

# Field names of Flink 2.3's answers (captured from a Flink 2.3 cluster): its CLI's Jackson
# classes require them
JOB_DETAILS = {
    "jid",
    "name",
    "jobType",
    "schedulerType",
    "start-time",
    "end-time",
    "duration",
    "state",
    "last-modification",
    "tasks",
    "pending-operators",
}
JOB_TASKS = {
    "running",
    "canceling",
    "canceled",
    "total",
    "created",
    "scheduled",
    "deploying",
    "reconciling",
    "finished",
    "initializing",
    "failed",
}
JOB_INFO = {
    "application-id",
    "duration",
    "end-time",
    "isStoppable",
    "jid",
    "job-type",
    "maxParallelism",
    "name",
    "now",
    "pending-operators",
    "plan",
    "schedulerType",
    "start-time",
    "state",
    "status-counts",
    "timestamps",
    "vertices",
}
VERTEX = {
    "duration",
    "end-time",
    "id",
    "maxParallelism",
    "metrics",
    "name",
    "parallelism",
    "slotSharingGroupId",
    "start-time",
    "status",
    "tasks",
}
CHECKPOINT = {
    "alignment_buffered",
    "checkpoint_type",
    "checkpointed_size",
    "className",
    "end_to_end_duration",
    "id",
    "is_savepoint",
    "latest_ack_timestamp",
    "num_acknowledged_subtasks",
    "num_subtasks",
    "persisted_data",
    "processed_data",
    "savepointFormat",
    "state_size",
    "status",
    "tasks",
    "trigger_timestamp",
}
EXCEPTION = {
    "concurrentExceptions",
    "endpoint",
    "exceptionName",
    "failureLabels",
    "stacktrace",
    "taskManagerId",
    "taskName",
    "timestamp",
}


@pytest.fixture
def api(tmp_path):
    """A client of a Dispatcher with a running job (whose driver is this test: it holds the
    job's lock) and an ended one."""
    home = DispatcherHome(tmp_path / "home")
    token = home.token()
    made: dict[str, Dispatcher] = {}

    def factory(loop):
        made["d"] = Dispatcher(home.path, 1 << 20, loop)
        return made["d"]

    app = create_app(factory, token, loopback=True, max_body_bytes=MAX_BODY)
    with TestClient(app, base_url=LOOPBACK) as client:
        dispatcher = made["d"]
        running = add_job(dispatcher, RUNNING, "RUNNING", str(tmp_path / "sp"))
        lock = running.hold_lock()
        add_job(dispatcher, ENDED, "FINISHED", None)
        client.headers["X-Test"] = "1"
        yield client, token, running, tmp_path
        os.close(lock)


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_jobs_have_flinks_fields_under_v1_and_unversioned(api):
    client, _, _, _ = api
    for prefix in ("", "/v1"):
        overview = client.get(f"{prefix}/jobs/overview").json()["jobs"]
        assert {j["jid"]: j["state"] for j in overview} == {RUNNING: "RUNNING", ENDED: "FINISHED"}
        for entry in overview:
            assert set(entry) == JOB_DETAILS
            assert set(entry["tasks"]) == JOB_TASKS
        running = next(j for j in overview if j["jid"] == RUNNING)
        assert running["end-time"] == -1 and running["tasks"] == {
            **dict.fromkeys(JOB_TASKS, 0),
            "running": 3,
            "total": 3,
        }
    info = client.get(f"/v1/jobs/{RUNNING}").json()
    assert set(info) == JOB_INFO
    assert [set(v) for v in info["vertices"]] == [VERTEX, VERTEX]
    assert [(v["id"], v["parallelism"], v["status"]) for v in info["vertices"]] == [
        ("a" * 32, 1, "RUNNING"),
        ("b" * 32, 2, "RUNNING"),
    ]
    counted = info["vertices"][1]["metrics"]
    assert (counted["read-records"], counted["read-records-complete"]) == (100, True)
    assert (counted["write-records"], counted["write-records-complete"]) == (100, True)
    plan = client.get(f"/jobs/{RUNNING}/plan").json()["plan"]
    assert plan["nodes"][1]["inputs"] == [
        {"id": "a" * 32, "num": 0, "exchange": "pipelined_bounded", "ship_strategy": "HASH"}
    ]
    assert client.get("/v1/jobs").json() == {
        "jobs": [{"id": RUNNING, "status": "RUNNING"}, {"id": ENDED, "status": "FINISHED"}]
    } or client.get("/v1/jobs").json() == {
        "jobs": [{"id": ENDED, "status": "FINISHED"}, {"id": RUNNING, "status": "RUNNING"}]
    }
    overview_counts = client.get("/overview").json()
    assert (overview_counts["jobs-running"], overview_counts["jobs-finished"]) == (1, 1)
    assert client.get("/v1/config").json()["flink-version"] == "2.3.0"
    assert client.get(f"/v1/jobs/{RUNNING}/status").json() == {"status": "RUNNING"}


def test_checkpoints_exceptions_and_metrics_have_flinks_shapes(api):
    client, _, _, _ = api
    stats = client.get(f"/v1/jobs/{RUNNING}/checkpoints").json()
    assert stats["counts"] == {
        "restored": 0,
        "total": 2,
        "in_progress": 0,
        "completed": 1,
        "failed": 1,
    }
    failed, completed = stats["history"]
    assert set(completed) == CHECKPOINT | {"external_path", "discarded"}
    assert set(failed) == CHECKPOINT | {"failure_message", "failure_timestamp"}
    assert completed["external_path"] == "file:///ck/x/chk-1"
    assert (completed["state_size"], completed["checkpointed_size"]) == (2048, 1024)
    assert stats["latest"]["completed"]["id"] == 1 and stats["latest"]["failed"]["id"] == 2
    assert stats["summary"]["state_size"]["max"] == 2048
    config = client.get(f"/v1/jobs/{RUNNING}/checkpoints/config").json()
    assert (config["mode"], config["interval"]) == ("exactly_once", 500)
    history = client.get(f"/v1/jobs/{RUNNING}/exceptions").json()["exceptionHistory"]
    assert [set(e) for e in history["entries"]] == [EXCEPTION]
    assert history["entries"][0]["exceptionName"] == "builtins.ValueError"
    names = {m["id"] for m in client.get(f"/v1/jobs/{RUNNING}/metrics").json()}
    assert {"numRestarts", "lastCheckpointSize", "numberOfCompletedCheckpoints"} <= names
    got = client.get(f"/v1/jobs/{RUNNING}/metrics?get=numRestarts,lastCheckpointSize").json()
    assert got == [
        {"id": "numRestarts", "value": "1"},
        {"id": "lastCheckpointSize", "value": "1024"},
    ]


def test_errors_have_flinks_shape_and_status(api):
    client, token, _, _ = api
    cases = [
        (client.get(f"/v1/jobs/{UNKNOWN}"), 404),
        (client.get(f"/v1/jobs/{UNKNOWN}/checkpoints"), 404),
        (client.get("/v1/jobs/not-a-job-id"), 400),
        (client.get(f"/v1/jobs/{RUNNING.upper()}"), 400),
        (client.get("/v1/nosuchpath"), 404),
        (client.put("/v1/overview"), 405),
        (client.get(f"/v1/jobs/{RUNNING}/savepoints/{UNKNOWN}"), 404),
        (client.get(f"/v1/jobs/{RUNNING}/savepoints/xyz"), 400),
        (client.patch(f"/v1/jobs/{ENDED}?mode=cancel", headers=auth(token)), 409),
        (client.patch(f"/v1/jobs/{UNKNOWN}?mode=cancel", headers=auth(token)), 404),
        (client.post(f"/v1/jobs/{ENDED}/savepoints", json={}, headers=auth(token)), 409),
        (
            client.post(
                f"/v1/jobs/{RUNNING}/savepoints",
                content=b"{not json",
                headers={**auth(token), "Content-Type": "application/json"},
            ),
            400,
        ),
        (
            client.post(
                f"/v1/jobs/{RUNNING}/savepoints",
                json={"target-directory": 7},
                headers=auth(token),
            ),
            400,
        ),
    ]
    for response, status in cases:
        assert response.status_code == status, (response.request.url, response.text)
        body = response.json()
        assert (
            set(body) == {"errors"}
            and body["errors"]
            and all(isinstance(e, str) and e for e in body["errors"])
        ), body


def test_changes_need_the_token_and_reach_the_driver_as_commands(api):
    client, token, running, tmp_path = api
    attempt = running.latest_attempt()
    assert attempt is not None
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {token}"}):
        for response in (
            client.post(f"/v1/jobs/{RUNNING}/savepoints", json={}, headers=headers),
            client.post(f"/v1/jobs/{RUNNING}/stop", json={}, headers=headers),
            client.patch(f"/v1/jobs/{RUNNING}?mode=cancel", headers=headers),
            client.post("/v1/lockgate/jobs", json={}, headers=headers),
        ):
            assert response.status_code == 401, response.text
            assert response.headers["www-authenticate"] == "Bearer"
    assert not list(attempt.commands.iterdir())

    trigger = client.post(
        f"/v1/jobs/{RUNNING}/savepoints",
        json={
            "target-directory": None,
            "cancel-job": False,
            "formatType": "CANONICAL",
            "triggerId": None,
        },
        headers=auth(token),
    )
    assert trigger.status_code == 202
    request_id = trigger.json()["request-id"]
    command = JobCommand.decode((attempt.commands / f"{request_id}.json").read_bytes(), "test")
    assert (command.kind, command.target_directory) == ("savepoint", str(tmp_path / "sp"))
    status = client.get(f"/v1/jobs/{RUNNING}/savepoints/{request_id}").json()
    assert status == {"status": {"id": "IN_PROGRESS"}, "operation": None}
    write_record(
        attempt.triggers / f"{request_id}.json",
        TriggerOutcome(request_id, "COMPLETED", "file:///sp/savepoint-1", None),
    )
    status = client.get(f"/jobs/{RUNNING}/savepoints/{request_id}").json()
    assert status == {
        "status": {"id": "COMPLETED"},
        "operation": {"location": "file:///sp/savepoint-1"},
    }

    stop = client.post(
        f"/v1/jobs/{RUNNING}/stop",
        json={"targetDirectory": str(tmp_path), "drain": True, "formatType": "CANONICAL"},
        headers=auth(token),
    ).json()["request-id"]
    write_record(
        attempt.triggers / f"{stop}.json",
        TriggerOutcome(stop, "FAILED", None, "the checkpoint of its epoch failed"),
    )
    failure = client.get(f"/v1/jobs/{RUNNING}/savepoints/{stop}").json()
    assert failure["status"] == {"id": "COMPLETED"}
    assert (
        "the checkpoint of its epoch failed" in failure["operation"]["failure-cause"]["stack-trace"]
    )
    stopped = JobCommand.decode((attempt.commands / f"{stop}.json").read_bytes(), "test")
    assert (stopped.kind, stopped.drain, stopped.target_directory) == ("stop", True, str(tmp_path))
    # a client's retry with its own trigger id triggers once
    again = {"target-directory": str(tmp_path), "triggerId": "c" * 32}
    for _ in range(2):
        response = client.post(f"/v1/jobs/{RUNNING}/savepoints", json=again, headers=auth(token))
        assert response.json() == {"request-id": "c" * 32}
    assert len(list(attempt.commands.iterdir())) == 3

    cancel = client.patch(f"/v1/jobs/{RUNNING}?mode=CANCEL", headers=auth(token))
    assert (cancel.status_code, cancel.json()) == (202, {})
    assert client.patch(f"/v1/jobs/{RUNNING}?mode=stop", headers=auth(token)).status_code == 400
    kinds = [JobCommand.decode(p.read_bytes(), "t").kind for p in attempt.commands.iterdir()]
    assert sorted(kinds) == ["cancel", "savepoint", "savepoint", "stop"]


def test_bad_savepoint_requests_are_refused_and_hand_nothing_to_the_driver(api, tmp_path):
    client, token, running, _ = api
    attempt = running.latest_attempt()
    assert attempt is not None
    unwritable = tmp_path / "file"
    unwritable.write_text("")
    for body, problem in [
        ({"target-directory": str(unwritable / "sub")}, "not writable"),
        ({"target-directory": "relative/dir"}, "not an absolute path"),
        ({"target-directory": str(tmp_path), "formatType": "NATIVE"}, "canonical"),
        ({"target-directory": str(tmp_path), "triggerId": "nothex"}, "triggerId"),
    ]:
        response = client.post(f"/v1/jobs/{RUNNING}/savepoints", json=body, headers=auth(token))
        assert response.status_code == 400, response.text
        assert problem in response.json()["errors"][0]
    assert not list(attempt.commands.iterdir())


def test_submissions_that_cannot_run_are_refused(api):
    client, token, _, _ = api

    def submit(name: str, program: bytes, **more):
        body = {"program-name": name, "program": base64.b64encode(program).decode(), **more}
        return client.post("/v1/lockgate/jobs", json=body, headers=auth(token))

    for response, status, problem in [
        (submit("../x.py", b"pass"), 400, "not a Python file name"),
        (submit("job.txt", b"pass"), 400, "not a Python file name"),
        (submit("job.py", b"def (:"), 400, "not valid Python"),
        (
            submit("job.py", b"pass", configuration={"parallelism.default": "zero"}),
            400,
            "parallelism.default",
        ),
        (submit("job.py", b"x" * MAX_BODY), 413, "larger than"),
        (
            client.post(
                "/v1/lockgate/jobs",
                json={"program-name": "job.py", "program": "###"},
                headers=auth(token),
            ),
            400,
            "base64",
        ),
    ]:
        assert response.status_code == status, response.text
        assert problem in response.json()["errors"][0]
    assert {j["jid"] for j in client.get("/v1/jobs/overview").json()["jobs"]} == {RUNNING, ENDED}


def test_off_loopback_every_request_needs_the_token(tmp_path):
    home = DispatcherHome(tmp_path / "home")
    token = home.token()
    app = create_app(lambda loop: Dispatcher(home.path, 1 << 20, loop), token, False, MAX_BODY)
    with TestClient(app) as client:
        assert client.get("/v1/jobs/overview").status_code == 401
        assert client.get("/v1/jobs/overview", headers=auth(token)).status_code == 200


def test_the_openapi_description_lists_the_endpoints(api):
    client, _, _, _ = api
    paths = set(client.get("/openapi.json").json()["paths"])
    assert {
        "/v1/jobs/overview",
        "/v1/jobs/{jobid}",
        "/v1/jobs/{jobid}/savepoints",
        "/v1/jobs/{jobid}/savepoints/{triggerid}",
        "/v1/jobs/{jobid}/stop",
        "/v1/lockgate/jobs",
        "/jobs/overview",
    } <= paths


def test_token_is_made_once_private_and_refused_when_readable(tmp_path):
    home = DispatcherHome(tmp_path / "home")
    token = home.token()
    assert len(token) == 64 and home.token() == token
    assert (home.path / "token").stat().st_mode & 0o777 == 0o600
    assert home.path.stat().st_mode & 0o777 == 0o700
    (home.path / "token").chmod(0o644)
    with pytest.raises(PermissionError, match="other users can read it"):
        home.read_token()


def test_a_job_file_that_runs_no_job_fails_with_that_reason(tmp_path):
    """A real driver process runs the submitted file, which ends without env.execute()."""
    home = DispatcherHome(tmp_path / "home")
    token = home.token()
    made: dict[str, Dispatcher] = {}

    def factory(loop):
        made["d"] = Dispatcher(home.path, 1 << 20, loop)
        return made["d"]

    with TestClient(create_app(factory, token, True, 1 << 20), base_url=LOOPBACK) as client:
        body = {
            "program-name": "hello.py",
            "program": base64.b64encode(b"import sys\nprint('hello', sys.argv[1:])\n").decode(),
            "arguments": ["a", "b c"],
        }
        job_id = client.post("/v1/lockgate/jobs", json=body, headers=auth(token)).json()["jobid"]
        files = made["d"].store.get(job_id)
        assert files is not None
        for _ in range(600):
            if client.get(f"/v1/jobs/{job_id}/status").json()["status"] == "FAILED":
                break
            import time

            time.sleep(0.1)
        outcome = files.outcome()
        assert outcome is not None and outcome.status == "FAILED"
        assert "hello.py ended without running a job" in outcome.reason
        log = (files.directory / "attempts" / "0" / "driver.log").read_text()
        assert "hello ['a', 'b c']" in log
        assert (
            oct(Path(files.directory / "attempts" / "0" / "driver.log").stat().st_mode)[-3:]
            == "600"
        )
        assert json.loads((files.directory / "submission.json").read_text())["arguments"] == [
            "a",
            "b c",
        ]


def test_lockgates_report_endpoint_gives_epochs_checkpoints_and_watermarks(api):
    client, _, _, _ = api
    body = client.get(f"/v1/lockgate/jobs/{RUNNING}/report").json()
    assert (body["status"], body["attempts"]) == ("RUNNING", 1)
    assert JobReport.from_json(body["report"], "the API's answer").watermarks == {"count": 1000}
    assert client.get(f"/v1/lockgate/jobs/{UNKNOWN}/report").status_code == 404


def test_prometheus_endpoint_exposes_every_jobs_figures(api):
    from prometheus_client.parser import text_string_to_metric_families

    client, _, _, _ = api
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = {
        (s.name, s.labels.get("job_id"), s.labels.get("operator_uid")): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }
    assert samples[("lockgate_job_running", RUNNING, None)] == 1.0
    assert samples[("lockgate_job_running", ENDED, None)] == 0.0
    assert samples[("lockgate_job_restarts_total", RUNNING, None)] == 1.0
    assert samples[("lockgate_checkpoints_completed_total", RUNNING, None)] == 1.0
    assert samples[("lockgate_checkpoint_size_bytes", RUNNING, None)] == 2048.0
    assert samples[("lockgate_checkpoint_incremental_size_bytes", RUNNING, None)] == 1024.0
    assert samples[("lockgate_operator_state_size_bytes", RUNNING, "count")] == 2048.0
    assert samples[("lockgate_epoch_records_per_second", RUNNING, None)] == 2000.0
    assert 0 <= samples[("lockgate_last_checkpoint_age_seconds", RUNNING, None)] < 60
    assert samples[("lockgate_operator_watermark_lag_seconds", RUNNING, "count")] > 1e9
    counted = {
        (
            s.name,
            s.labels["operator_uid"],
            s.labels["subtask"],
            s.labels.get("metric"),
            s.labels.get("statistic"),
        ): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
        if s.labels.get("job_id") == RUNNING and "subtask" in s.labels
    }
    assert counted[("lockgate_operator_records_in_total", "count", "1", None, None)] == 40
    assert counted[("lockgate_operator_records_out_total", "out", "0", None, None)] == 60
    user = {k[3:]: v for k, v in counted.items() if k[0] == "lockgate_user_metric"}
    assert user == {
        ("mine.seen", "count"): 5,
        ("mine.rate", "count"): 10,
        ("mine.rate", "rate"): 2.5,
        ("mine.level", "value"): 7,
        ("mine.sizes", "count"): 2,
        ("mine.sizes", "sum"): 10,
        ("mine.sizes", "min"): 4,
        ("mine.sizes", "max"): 6,
        ("mine.sizes", "mean"): 5,
    }


def test_cancelling_a_cancelled_job_again_is_accepted_as_in_flink(api):
    client, token, running, _ = api
    store = JobStore(running.directory.parent.parent)
    cancelled = "c" * 32
    submission = JobSubmission(cancelled, "job.py", [], {}, now_ms())
    store.create(submission, b"pass\n").end(JobOutcome("CANCELED", now_ms(), "cancelled"))
    again = client.patch(f"/v1/jobs/{cancelled}?mode=cancel", headers=auth(token))
    assert (again.status_code, again.json()) == (202, {})
    finished = client.patch(f"/v1/jobs/{ENDED}?mode=cancel", headers=auth(token))
    assert finished.status_code == 409 and "FINISHED" in finished.json()["errors"][0]
