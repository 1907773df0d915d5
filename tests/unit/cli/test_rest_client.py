"""Where the lockgate command sends its home's token: only to the Dispatcher running for
that home (as announced in the home), or over TLS. Whoever has the token runs code as this
user, and any local user may listen on a loopback port that no Dispatcher holds."""

from __future__ import annotations

import http.server
import json
import os
import threading

import pytest

from lockgate.cli.rest_client import ClientError, DispatcherClient
from lockgate.dispatcher.home import DispatcherAddress, DispatcherHome


@pytest.fixture
def listener():
    """A server on a loopback port that answers 401 to everything, as a Dispatcher would
    without the token, and keeps the Authorization headers it was sent."""
    received: list[str | None] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            received.append(self.headers.get("Authorization"))
            body = json.dumps({"errors": ["missing token"]}).encode()
            self.send_response(401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}", received
    server.shutdown()
    server.server_close()


def test_the_token_goes_to_no_other_address_in_clear_text(tmp_path, listener):
    address, received = listener
    home = DispatcherHome(tmp_path / "home")
    home.token()
    client = DispatcherClient.of_address(address, home)
    with pytest.raises(ClientError, match=r"missing token \(the token of .* goes only to"):
        client.request("GET", "/jobs/overview")
    assert received == [None]

    # the home's Dispatcher runs at another address: still not there
    lock = home.lock()
    assert lock is not None
    try:
        home.announce(DispatcherAddress("http://127.0.0.1:1", os.getpid(), 0))
        with pytest.raises(ClientError, match=r"at http://127\.0\.0\.1:1, or over https"):
            DispatcherClient.of_address(address, home).request("GET", "/jobs/overview")
        assert received == [None, None]

        # it runs there: the token goes with the requests
        home.announce(DispatcherAddress(f"http://{address}", os.getpid(), 0))
        with pytest.raises(ClientError):
            DispatcherClient.of_address(address, home).request("GET", "/jobs/overview")
        assert received[-1] == f"Bearer {home.read_token()}"
    finally:
        os.close(lock)


def test_over_tls_the_token_goes_to_the_address_named(tmp_path):
    home = DispatcherHome(tmp_path / "home")
    token = home.token()
    client = DispatcherClient.of_address("https://dispatcher.example:8081", home)
    assert client._headers == {"Authorization": f"Bearer {token}"}


def test_a_killed_dispatchers_address_is_gone_once_another_holds_the_home(tmp_path):
    """Between a new Dispatcher's lock and its announcement, clients find no address
    rather than the killed one's port, which another user may listen on by then."""
    home = DispatcherHome(tmp_path / "home")
    home.announce(DispatcherAddress("http://127.0.0.1:8081", 12345, 0))  # killed: no lock
    lock = home.lock()
    assert lock is not None
    try:
        assert home.running() is None
    finally:
        os.close(lock)
