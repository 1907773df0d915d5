"""The Dispatcher as a service: its process (``python -m lockgate.dispatcher.service``), and
starting, stopping and finding it for ``lockgate dispatcher start|stop|status``.

It listens on 127.0.0.1 unless told otherwise; another address needs TLS (a certificate
and key), since its token and job files would otherwise cross the network in clear text.
``start`` returns once the service answers, and prints where.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import uvicorn

from lockgate.dispatcher.dispatcher import Dispatcher
from lockgate.dispatcher.home import DispatcherAddress, DispatcherHome
from lockgate.dispatcher.job_store import now_ms
from lockgate.dispatcher.rest.app import create_app, is_loopback

log = logging.getLogger(__name__)

DEFAULT_PORT = 8081  # Flink's rest.port
MAX_PROGRAM_BYTES = 16 << 20
READY_TIMEOUT_S = 30.0


class ServiceError(RuntimeError):
    """The Dispatcher cannot be started, stopped or reached."""


def check_listen(host: str, tls_cert: str | None, tls_key: str | None) -> None:
    if (tls_cert is None) != (tls_key is None):
        raise ServiceError("TLS needs both a certificate (--tls-cert) and its key (--tls-key)")
    if not is_loopback(host) and tls_cert is None:
        raise ServiceError(
            f"refusing to listen on {host} without TLS: its token would cross the network in "
            "clear text; give --tls-cert and --tls-key, or listen on 127.0.0.1"
        )


def serve(home: Path, host: str, port: int, tls_cert: str | None, tls_key: str | None) -> None:
    """Run the Dispatcher in this process until SIGTERM or SIGINT."""
    check_listen(host, tls_cert, tls_key)
    dispatcher_home = DispatcherHome(home)
    if dispatcher_home.lock() is None:
        raise ServiceError(f"another Dispatcher runs for {dispatcher_home.path}")
    token = dispatcher_home.token()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(128)
    bound = listener.getsockname()[1]
    scheme = "https" if tls_cert else "http"
    shown_host = f"[{host}]" if ":" in host else host
    app = create_app(
        lambda loop: Dispatcher(dispatcher_home.path, MAX_PROGRAM_BYTES, loop),
        token,
        is_loopback(host),
        MAX_PROGRAM_BYTES * 2,  # base64 and the JSON around it
    )
    config = uvicorn.Config(
        app,
        log_config=None,
        ssl_certfile=tls_cert,
        ssl_keyfile=tls_key,
        timeout_graceful_shutdown=5,
        access_log=False,  # a line per request: a polling Web UI would grow the log for ever
    )
    # Connections wait in the listening socket's backlog until the server takes them
    dispatcher_home.announce(
        DispatcherAddress(f"{scheme}://{shown_host}:{bound}", os.getpid(), now_ms())
    )
    log.info("Dispatcher of %s listens on %s://%s:%d", home, scheme, shown_host, bound)
    try:
        uvicorn.Server(config).run(sockets=[listener])
    finally:
        dispatcher_home.address_path.unlink(missing_ok=True)


def start(
    home: Path, host: str, port: int, tls_cert: str | None, tls_key: str | None
) -> DispatcherAddress:
    """Start the Dispatcher of ``home`` in the background; where it listens, once it
    answers."""
    check_listen(host, tls_cert, tls_key)
    dispatcher_home = DispatcherHome(home)
    running = dispatcher_home.running()
    if running is not None:
        raise ServiceError(
            f"a Dispatcher already runs for {dispatcher_home.path} at {running.url} "
            f"(pid {running.pid})"
        )
    dispatcher_home.address_path.unlink(missing_ok=True)
    command = [
        sys.executable,
        "-m",
        "lockgate.dispatcher.service",
        "--home",
        str(dispatcher_home.path),
        "--host",
        host,
        "--port",
        str(port),
    ]
    if tls_cert is not None and tls_key is not None:
        command += ["--tls-cert", tls_cert, "--tls-key", tls_key]
    descriptor = os.open(dispatcher_home.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=descriptor,
            stderr=descriptor,
            start_new_session=True,  # a terminal's Ctrl-C must not reach it
        )
    finally:
        os.close(descriptor)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServiceError(
                f"the Dispatcher exited with code {process.returncode}:\n"
                + _tail(dispatcher_home.log_path)
            )
        address = dispatcher_home.running()
        if address is not None and address.pid == process.pid and _answers(address.url):
            return address
        time.sleep(0.1)
    process.kill()
    raise ServiceError(
        f"the Dispatcher did not answer within {READY_TIMEOUT_S:.0f} s:\n"
        + _tail(dispatcher_home.log_path)
    )


def stop(home: Path, timeout_s: float = 30.0) -> DispatcherAddress:
    """Stop the Dispatcher of ``home`` (its jobs' drivers die with it; the next start
    resumes them from their latest checkpoints)."""
    dispatcher_home = DispatcherHome(home)
    running = dispatcher_home.running()
    if running is None:
        raise ServiceError(f"no Dispatcher runs for {dispatcher_home.path}")
    os.kill(running.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while dispatcher_home.running() is not None:
        if time.monotonic() > deadline:
            os.kill(running.pid, signal.SIGKILL)
            break
        time.sleep(0.1)
    return running


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/v1/config", timeout=2.0, verify=False).status_code == 200
    except httpx.HTTPError:
        return False


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lockgate.dispatcher.service")
    parser.add_argument("--home", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        serve(Path(args.home), args.host, args.port, args.tls_cert, args.tls_key)
    except ServiceError as exc:
        log.error("%s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
