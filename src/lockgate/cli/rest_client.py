"""The CLI's client of a Dispatcher's REST API (Flink's paths, under ``/v1``)."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from lockgate.dispatcher.home import DispatcherHome


class ClientError(RuntimeError):
    """The Dispatcher refused a request, or could not be reached."""


@dataclass(frozen=True)
class SavepointResult:
    location: str | None
    failure: str | None


class DispatcherClient:
    def __init__(
        self, url: str, token: str | None, timeout_s: float = 30.0, why_no_token: str = ""
    ):
        self.url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._timeout_s = timeout_s
        self._why_no_token = why_no_token  # said when the Dispatcher asks for one

    @staticmethod
    def of_home(home: DispatcherHome) -> DispatcherClient | None:
        """A client of the Dispatcher running for ``home``; None when none runs."""
        address = home.running()
        if address is None:
            return None
        return DispatcherClient(address.url, home.read_token())

    @staticmethod
    def of_address(address: str, home: DispatcherHome) -> DispatcherClient:
        """A client of the Dispatcher at ``HOST:PORT`` (or a URL), with ``home``'s token if
        that is the Dispatcher running for ``home``, or if TLS authenticates it: whoever has
        the token runs code as this user, and any local user can listen on a loopback port
        that no Dispatcher holds."""
        url = (address if "://" in address else f"http://{address}").rstrip("/")
        running = home.running()
        if (running is not None and running.url == url) or url.startswith("https://"):
            token = home.read_token() if home.token_path.exists() else None
            return DispatcherClient(url, token)
        return DispatcherClient(
            url,
            None,
            why_no_token=(
                f" (the token of {home.path} goes only to the Dispatcher running for it"
                + (f", at {running.url}," if running is not None else "")
                + " or over https)"
            ),
        )

    def request(self, method: str, path: str, body: Any = None) -> Any:
        try:
            response = httpx.request(
                method,
                f"{self.url}/v1{path}",
                json=body,
                headers=self._headers,
                timeout=self._timeout_s,
            )
        except httpx.HTTPError as exc:
            raise ClientError(f"cannot reach the Dispatcher at {self.url}: {exc}") from None
        if response.status_code >= 400:
            try:
                errors = response.json().get("errors") or [response.text]
            except ValueError:
                errors = [response.text]
            hint = self._why_no_token if response.status_code == 401 else ""
            raise ClientError("; ".join(str(e) for e in errors) + hint)
        return response.json() if response.content else None

    def submit(self, program: Path, arguments: list[str], configuration: dict[str, str]) -> str:
        body = {
            "program-name": program.name,
            "program": base64.b64encode(program.read_bytes()).decode(),
            "arguments": arguments,
            "configuration": configuration,
        }
        return str(self.request("POST", "/lockgate/jobs", body)["jobid"])

    def savepoint(self, job_id: str, path: str, body: dict[str, Any]) -> SavepointResult:
        """Trigger at ``path`` (``/savepoints`` or ``/stop``) and wait for the outcome."""
        trigger = self.request("POST", f"/jobs/{job_id}{path}", body)["request-id"]
        while True:
            status = self.request("GET", f"/jobs/{job_id}/savepoints/{trigger}")
            if status["status"]["id"] == "COMPLETED":
                operation = status["operation"]
                cause = operation.get("failure-cause")
                if cause is not None:
                    return SavepointResult(None, cause.get("stack-trace") or cause.get("class"))
                return SavepointResult(operation["location"], None)
            time.sleep(0.5)
