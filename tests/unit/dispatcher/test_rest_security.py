"""The REST API against requests that try what they should not: a token with bytes outside
ASCII, a page of another site reaching the loopback API through DNS rebinding, a chunked
body past the limit, a job file that the compiler cannot take. Each gets a Flink-shaped
error with its status, never a 500, and changes nothing."""

from __future__ import annotations

import base64
import os

import pytest
from fabricated_jobs import report_of
from fastapi.testclient import TestClient

from lockgate.dispatcher.dispatcher import Dispatcher
from lockgate.dispatcher.home import DispatcherHome
from lockgate.dispatcher.job_store import JobSubmission, now_ms, write_record
from lockgate.dispatcher.rest.app import create_app

MAX_BODY = 4096
JOB = "0" * 32


@pytest.fixture
def client_of(tmp_path):
    """A client of a fresh Dispatcher, listening on loopback or not; its token."""
    home = DispatcherHome(tmp_path / "home")
    token = home.token()
    clients = []

    def make(
        loopback: bool = True, base_url: str = "http://127.0.0.1:8081", max_body: int = MAX_BODY
    ) -> TestClient:
        made: list[Dispatcher] = []

        def factory(loop):
            made.append(Dispatcher(home.path, 1 << 20, loop))
            return made[0]

        app = create_app(factory, token, loopback, max_body)
        client = TestClient(app, base_url=base_url, raise_server_exceptions=False)
        client.__enter__()
        client.dispatcher = made[0]  # type: ignore[attr-defined]
        clients.append(client)
        return client

    yield make, token
    for client in clients:
        client.__exit__(None, None, None)


def assert_error(response, status: int, problem: str) -> None:
    assert response.status_code == status, response.text
    assert problem in response.json()["errors"][0], response.text


def test_a_token_with_bytes_outside_ascii_is_refused_not_a_server_error(client_of):
    make, _ = client_of
    client = make()
    for value in (b"Bearer \xe9t\xe9", b"Bearer \xff" * 10):
        response = client.patch(f"/v1/jobs/{JOB}?mode=cancel", headers={"Authorization": value})
        assert_error(response, 401, "wrong token")


def test_on_loopback_only_loopback_host_names_are_served(client_of):
    make, token = client_of
    client = make()
    for host in ("127.0.0.1:8081", "localhost:8081", "[::1]:8081", "localhost", "127.0.0.2"):
        response = client.get("/v1/jobs/overview", headers={"Host": host})
        assert response.status_code == 200, (host, response.text)
    # a page of evil.example whose name now resolves to 127.0.0.1 sends its own name
    for host in ("evil.example:8081", "evil.example", "127.0.0.1.evil.example", ""):
        response = client.get("/v1/jobs/overview", headers={"Host": host})
        assert_error(response, 403, "is not a loopback address")
    # off loopback every request needs the token, which such a page does not have
    remote = make(loopback=False, base_url="https://dispatcher.example")
    assert remote.get("/v1/jobs/overview").status_code == 401
    authorized = {"Authorization": f"Bearer {token}"}
    assert remote.get("/v1/jobs/overview", headers=authorized).status_code == 200


def test_a_chunked_body_past_the_limit_is_refused_as_too_large(client_of):
    make, token = client_of
    client = make()
    program = base64.b64encode(b"pass\n" * MAX_BODY).decode()
    body = f'{{"program-name": "job.py", "program": "{program}"}}'.encode()

    def chunks():
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000]

    response = client.post(
        "/v1/lockgate/jobs",
        content=chunks(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert_error(response, 413, f"larger than {MAX_BODY} bytes")
    small = b'{"program-name": "job.py", "program": "###"}'
    response = client.post(
        "/v1/lockgate/jobs",
        content=iter([small[:10], small[10:]]),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert_error(response, 400, "base64")  # a chunked body within the limit is read whole
    assert client.get("/v1/jobs").json() == {"jobs": []}


def test_a_job_file_too_deep_to_compile_is_refused(client_of):
    make, token = client_of
    client = make(max_body=1 << 21)
    # a RecursionError of the compiler, and a MemoryError of the parser
    for program in (b"f" + b"()" * 100_000, b"-" * 100_000 + b"1"):
        body = {"program-name": "deep.py", "program": base64.b64encode(program).decode()}
        response = client.post(
            "/v1/lockgate/jobs", json=body, headers={"Authorization": f"Bearer {token}"}
        )
        assert_error(response, 400, "deep.py")
    assert client.get("/v1/jobs").json() == {"jobs": []}


def test_savepoint_directories_the_driver_cannot_use_are_refused(client_of, tmp_path):
    make, token = client_of
    client = make()
    dispatcher = client.dispatcher  # type: ignore[attr-defined]
    files = dispatcher.store.create(JobSubmission(JOB, "job.py", [], {}, now_ms()), b"pass\n")
    attempt = files.new_attempt(JOB, None)
    write_record(attempt.report_path, report_of(JOB))
    lock = files.hold_lock()  # the job's driver: this test
    try:
        for target, problem in [
            ("nosuch://bucket/sp", "Protocol not known"),  # fsspec's ValueError: was a 500
            (f"{tmp_path}/sp\x00x", "null"),
            ("file://relative/sp", "not an absolute path"),  # the driver's cwd is not ours
            ("://sp", "not an absolute path"),
        ]:
            response = client.post(
                f"/v1/jobs/{JOB}/savepoints",
                json={"target-directory": target},
                headers={"Authorization": f"Bearer {token}"},
            )
            assert_error(response, 400, problem)
        assert list(attempt.commands.iterdir()) == []
    finally:
        os.close(lock)
