"""The Dispatcher's REST API: Flink's endpoints for what lockgate has, under ``/v1`` and
unversioned as Flink serves them, plus lockgate's own job submission (a Python file).

Requests that change anything (submit, savepoint, stop, cancel) need ``Authorization:
Bearer <token>``; on an address other than loopback every request does. Errors have Flink's
shape, ``{"errors": ["..."]}``, with Flink's statuses.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import ipaddress
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lockgate.dispatcher import dispatcher as dispatching
from lockgate.dispatcher.dispatcher import Dispatcher, DispatcherError
from lockgate.dispatcher.rest import flink_json, java_throwable, prometheus
from lockgate.dispatcher.webui import mount_web_ui

_HEX32 = re.compile(r"[0-9a-f]{32}")


class SavepointTriggerRequest(BaseModel):
    """Flink's SavepointTriggerRequestBody."""

    model_config = ConfigDict(populate_by_name=True)
    target_directory: str | None = Field(None, alias="target-directory")
    cancel_job: bool = Field(False, alias="cancel-job")
    format_type: Literal["CANONICAL", "NATIVE"] | None = Field(None, alias="formatType")
    trigger_id: str | None = Field(None, alias="triggerId")


class StopRequest(BaseModel):
    """Flink's StopWithSavepointRequestBody."""

    model_config = ConfigDict(populate_by_name=True)
    target_directory: str | None = Field(None, alias="targetDirectory")
    drain: bool = False
    format_type: Literal["CANONICAL", "NATIVE"] | None = Field(None, alias="formatType")
    trigger_id: str | None = Field(None, alias="triggerId")


class SubmitRequest(BaseModel):
    """lockgate's job submission: a Python job file and how to run it."""

    model_config = ConfigDict(populate_by_name=True)
    program_name: str = Field(alias="program-name", description="the job file's name (x.py)")
    program: str = Field(description="the job file's bytes, base64")
    arguments: list[str] = Field(default_factory=list)
    configuration: dict[str, str] = Field(default_factory=dict)


class TriggerResponse(BaseModel):
    request_id: str = Field(alias="request-id")


class SubmitResponse(BaseModel):
    jobid: str
    jobUrl: str


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"errors": [message]}, status_code=status)


class BodyLimit:
    """Refuses a request body beyond ``limit`` bytes (413), before the app reads it: by its
    Content-Length, or, for a chunked body, once that much has arrived."""

    def __init__(self, app: ASGIApp, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = _error(413, f"request body larger than {self.limit} bytes")
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None:
            if not length.isdigit() or int(length) > self.limit:
                await too_large(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        # Chunked: read here (the app would turn an error while it reads into a 400)
        messages: list[Message] = []
        received = 0
        while True:
            message = await receive()
            messages.append(message)
            received += len(message.get("body", b""))
            if received > self.limit:
                await too_large(scope, receive, send)
                return
            if message["type"] != "http.request" or not message.get("more_body", False):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


def create_app(
    dispatcher_factory: Callable[[asyncio.AbstractEventLoop], Dispatcher],
    token: str,
    loopback: bool,
    max_body_bytes: int,
) -> FastAPI:
    state: dict[str, Dispatcher] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        dispatcher = dispatcher_factory(asyncio.get_running_loop())
        state["dispatcher"] = dispatcher
        dispatcher.recover()
        yield
        dispatcher.close()

    def authorized(request: Request) -> None:
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        # as bytes: a header may hold any byte, and compare_digest takes only ASCII strings
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode("latin-1"), token.encode()
        ):
            raise _Unauthorized("missing or wrong token" if header else "missing token")

    async def reader(request: Request) -> None:
        if not loopback:
            authorized(request)
        elif not is_loopback(_host_name(request.headers.get("host", ""))):
            # a web page whose name was made to resolve to 127.0.0.1 (DNS rebinding) must
            # not read what the API shows any local client
            raise StarletteHTTPException(
                403, f"Host {request.headers.get('host')!r} is not a loopback address"
            )

    app = FastAPI(
        title="lockgate Dispatcher",
        description="Flink's REST API for lockgate jobs, and lockgate's job submission.",
        version=flink_json.REVISION,
        lifespan=lifespan,
        dependencies=[Depends(reader)],
        docs_url=None,  # its pages load scripts from a CDN
        redoc_url=None,
    )

    def dispatcher() -> Dispatcher:
        return state["dispatcher"]

    writer = [Depends(authorized)]

    def job_id(jobid: str) -> str:
        if not _HEX32.fullmatch(jobid):
            raise DispatcherError(f"Cannot resolve path parameter (jobid) from value {jobid!r}")
        return jobid

    router = APIRouter()

    @router.get("/config")
    def get_config() -> dict[str, Any]:
        return flink_json.config()

    @router.get("/overview")
    def get_overview() -> dict[str, Any]:
        return flink_json.overview(dispatcher().jobs())

    @router.get("/jobs")
    def get_jobs() -> dict[str, Any]:
        return flink_json.jobs_ids(dispatcher().jobs())

    @router.get("/jobs/overview")
    def get_jobs_overview() -> dict[str, Any]:
        return flink_json.jobs_overview(dispatcher().jobs())

    @router.post("/lockgate/jobs", status_code=202, dependencies=writer)
    def submit(body: SubmitRequest) -> SubmitResponse:
        try:
            program = base64.b64decode(body.program, validate=True)
        except (binascii.Error, ValueError):
            raise DispatcherError("program is not base64") from None
        new = dispatcher().submit(body.program_name, program, body.arguments, body.configuration)
        return SubmitResponse(jobid=new, jobUrl=f"/jobs/{new}")

    @router.get("/lockgate/jobs/{jobid}/report")
    def get_report(jobid: str) -> dict[str, Any]:
        """What the job's driver last reported (lockgate's JobReport): epochs, checkpoints,
        state sizes and watermarks per operator, failures, its Spark UI."""
        view = dispatcher().job(job_id(jobid))
        if view.report is None:
            raise dispatching.JobNotFound(f"job {jobid} has not reported yet")
        return {"status": view.status, "attempts": view.attempts, "report": view.report.to_json()}

    @router.get("/jobs/{jobid}")
    def get_job(jobid: str) -> dict[str, Any]:
        return flink_json.job(dispatcher().job(job_id(jobid)))

    @router.patch("/jobs/{jobid}", status_code=202, dependencies=writer)
    def cancel(jobid: str, mode: str | None = Query(None)) -> dict[str, Any]:
        if mode is not None and mode.lower() != "cancel":
            raise DispatcherError(f"mode {mode!r}: only 'cancel' is supported")
        dispatcher().cancel(job_id(jobid))
        return {}

    @router.get("/jobs/{jobid}/status")
    def get_status(jobid: str) -> dict[str, Any]:
        return {"status": dispatcher().job(job_id(jobid)).status}

    @router.get("/jobs/{jobid}/plan")
    def get_plan(jobid: str) -> dict[str, Any]:
        return {"plan": flink_json.plan(dispatcher().job(job_id(jobid)))}

    @router.get("/jobs/{jobid}/config")
    def get_job_config(jobid: str) -> dict[str, Any]:
        return flink_json.job_config(dispatcher().job(job_id(jobid)))

    @router.get("/jobs/{jobid}/checkpoints")
    def get_checkpoints(jobid: str) -> dict[str, Any]:
        return flink_json.checkpoints(dispatcher().job(job_id(jobid)))

    @router.get("/jobs/{jobid}/checkpoints/config")
    def get_checkpoint_config(jobid: str) -> dict[str, Any]:
        view = dispatcher().job(job_id(jobid))
        if view.report is None:
            raise dispatching.JobNotFound(f"job {jobid} has not started yet")
        return flink_json.checkpoint_config(view.report)

    @router.get("/jobs/{jobid}/exceptions")
    def get_exceptions(
        jobid: str, max_exceptions: int = Query(100, alias="maxExceptions", ge=0)
    ) -> dict[str, Any]:
        return flink_json.exceptions(dispatcher().job(job_id(jobid)), max_exceptions)

    @router.get("/jobs/{jobid}/metrics")
    def get_metrics(jobid: str, get: str | None = None) -> list[dict[str, str]]:
        values = flink_json.job_metrics(dispatcher().job(job_id(jobid)))
        if get is None:
            return [{"id": name} for name in values]
        names = [name.strip() for name in get.split(",") if name.strip()]
        return [{"id": name, "value": values[name]} for name in names if name in values]

    @router.post("/jobs/{jobid}/savepoints", status_code=202, dependencies=writer)
    def trigger_savepoint(jobid: str, body: SavepointTriggerRequest) -> TriggerResponse:
        _canonical(body.format_type)
        kind: Literal["savepoint", "stop"] = "stop" if body.cancel_job else "savepoint"
        trigger = dispatcher().trigger(
            job_id(jobid), kind, body.target_directory, False, _trigger_id(body.trigger_id)
        )
        return TriggerResponse(**{"request-id": trigger})

    @router.post("/jobs/{jobid}/stop", status_code=202, dependencies=writer)
    def stop(jobid: str, body: StopRequest) -> TriggerResponse:
        _canonical(body.format_type)
        trigger = dispatcher().trigger(
            job_id(jobid), "stop", body.target_directory, body.drain, _trigger_id(body.trigger_id)
        )
        return TriggerResponse(**{"request-id": trigger})

    @router.get("/jobs/{jobid}/savepoints/{triggerid}")
    def savepoint_status(jobid: str, triggerid: str) -> dict[str, Any]:
        if not _HEX32.fullmatch(triggerid):
            raise DispatcherError(
                f"Cannot resolve path parameter (triggerid) from value {triggerid!r}"
            )
        view = dispatcher().trigger_status(job_id(jobid), triggerid)
        if view.status == "IN_PROGRESS":
            return {"status": {"id": "IN_PROGRESS"}, "operation": None}
        if view.status == "COMPLETED":
            return {"status": {"id": "COMPLETED"}, "operation": {"location": view.location}}
        return {
            "status": {"id": "COMPLETED"},
            "operation": {
                "failure-cause": {
                    "class": "java.lang.RuntimeException",
                    "stack-trace": f"java.lang.RuntimeException: {view.failure}",
                    # what Flink's CLI reads: the exception itself, as Java serializes it
                    "serialized-throwable": java_throwable.serialized_throwable(
                        view.failure or "the savepoint failed"
                    ),
                }
            },
        }

    app.include_router(router)
    app.include_router(router, prefix="/v1")

    @app.get("/metrics", response_class=Response)
    def metrics() -> Response:
        """Prometheus' text format: every job's figures, labelled by job."""
        return Response(
            prometheus.exposition(dispatcher().jobs), media_type=prometheus.CONTENT_TYPE
        )

    @app.exception_handler(DispatcherError)
    async def dispatcher_error(request: Request, exc: DispatcherError) -> Response:
        return _error(exc.status, str(exc))

    @app.exception_handler(_Unauthorized)
    async def unauthorized(request: Request, exc: _Unauthorized) -> Response:
        response = _error(401, f"{exc}: send 'Authorization: Bearer <token>'")
        response.headers["WWW-Authenticate"] = "Bearer"
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}"
            for e in exc.errors()
        )
        return _error(400, f"Bad request: {problems}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404:
            return _error(404, f"Not found: {request.url.path}")
        return _error(exc.status_code, str(exc.detail))

    mount_web_ui(app)
    app.add_middleware(BodyLimit, limit=max_body_bytes)
    return app


class _Unauthorized(Exception):
    pass


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(host: str) -> str:
    """The name or address of a Host header, without its port and brackets."""
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if ":" in host else host


def _canonical(format_type: str | None) -> None:
    if format_type == "NATIVE":
        raise DispatcherError("lockgate writes savepoints in the canonical format only")


def _trigger_id(given: str | None) -> str | None:
    if given is not None and not _HEX32.fullmatch(given):
        raise DispatcherError(f"triggerId {given!r} is not 32 lowercase hex digits")
    return given
