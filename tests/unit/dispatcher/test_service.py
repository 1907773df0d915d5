"""The Dispatcher as a service process, started and stopped as ``lockgate dispatcher``
does: what it writes to its log as it is used, and what another local user (nobody) can
do to it."""

from __future__ import annotations

import json

import httpx
import pytest
from local_attacker import as_nobody, needs_another_user

from lockgate.dispatcher import service
from lockgate.dispatcher.home import DispatcherHome


@pytest.fixture
def running(tmp_path):
    home = tmp_path / "home"
    address = service.start(home, "127.0.0.1", 0, None, None)
    try:
        yield DispatcherHome(home), address.url
    finally:
        service.stop(home)


def test_requests_are_not_logged_one_line_each(running):
    """A Web UI polls every few seconds, for months: dispatcher.log would grow by a line
    per request."""
    home, url = running
    before = home.log_path.read_text()
    for _ in range(20):
        assert httpx.get(f"{url}/v1/jobs/overview", timeout=10).status_code == 200
    added = home.log_path.read_text()[len(before) :]
    assert "/v1/jobs/overview" not in added, added


@needs_another_user
def test_another_user_can_read_on_loopback_but_not_the_token_nor_change_a_job(running):
    home, url = running
    job = "0" * 32
    done = as_nobody(
        """
        import json, sys, urllib.request, urllib.error
        home, url, job = sys.argv[1:]
        found = {}
        for name in ("token", "jobs", "dispatcher.log"):
            try:
                open(f"{home}/{name}").read()
                found[name] = "read"
            except (PermissionError, IsADirectoryError, NotADirectoryError) as exc:
                found[name] = type(exc).__name__
        found["overview"] = urllib.request.urlopen(f"{url}/v1/jobs/overview").status
        changes = (("PATCH", f"/v1/jobs/{job}?mode=cancel"), ("POST", "/v1/lockgate/jobs"))
        for method, path in changes:
            request = urllib.request.Request(f"{url}{path}", method=method, data=b"{}",
                                             headers={"Content-Type": "application/json"})
            try:
                found[method] = urllib.request.urlopen(request).status
            except urllib.error.HTTPError as exc:
                found[method] = exc.code
        print(json.dumps(found))
        """,
        str(home.path),
        url,
        job,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "token": "PermissionError",
        "jobs": "PermissionError",
        "dispatcher.log": "PermissionError",
        "overview": 200,  # read-only endpoints are open on loopback (issue 31, point 3)
        "PATCH": 401,
        "POST": 401,
    }
