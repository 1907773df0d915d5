"""The Dispatcher's Web UI: one page (``/``) with its script and style (``/web/<file>``),
which reads everything it shows through the REST API (Flink's endpoints and lockgate's job
report) and changes jobs through it with the user's token.

The files hold no job data, so they are served without the token even where every API
request needs one (off loopback): the page asks for the token and sends it with its
requests. Their Content-Security-Policy lets the page run its own script only and talk to
this Dispatcher only, a second line behind the script's escaping of job names and
exception texts.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

PAGE = "index.html"
# what the page loads from /web/, with its media type
ASSETS = {"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8"}
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",  # an upgraded Dispatcher serves its own files at once
}


def mount_web_ui(app: FastAPI) -> None:
    """Serve the Web UI from ``app``: its page at ``/``, its files under ``/web/``."""
    here = files(__name__)
    page = (here / PAGE).read_bytes()
    assets = {name: ((here / name).read_bytes(), media) for name, media in ASSETS.items()}

    async def index(request: Request) -> Response:
        return Response(page, media_type="text/html; charset=utf-8", headers=HEADERS)

    async def asset(request: Request) -> Response:
        found = assets.get(request.path_params["name"])
        if found is None:
            raise HTTPException(404)
        content, media_type = found
        return Response(content, media_type=media_type, headers=HEADERS)

    # Starlette's routes, not the API's: outside its token dependency and its OpenAPI paths
    app.router.routes.append(Route("/", index, methods=["GET"]))
    app.router.routes.append(Route("/web/{name}", asset, methods=["GET"]))
