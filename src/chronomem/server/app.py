"""The ASGI application of ``chronomem serve`` (DESIGN §7; the route list is docs/http.md).

Every route under ``/v1/spaces/{space}`` is one verb of the engine: the handler authorises the
caller for the scope the verb needs, turns the body into the verb's arguments (read options into
a :class:`~chronomem.ReadOptions`, as the CLI does) and returns what the engine returns. Handlers
are plain functions, so the framework runs them in its worker thread pool and the event loop never
blocks on the engine. Errors are problem documents (``problems.py``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from chronomem.errors import ChronomemError, ConfigError
from chronomem.model.keys import Scope
from chronomem.server import problems
from chronomem.server.auth import Denied, Gate
from chronomem.server.hot import HotReads, send_document
from chronomem.server.observe import REQUEST_ID_KEY, Metrics, Observed
from chronomem.server.routes import admin, changes, graph, reads, records
from chronomem.server.routes.service import Routes, Service
from chronomem.server.spaces import SharedEmbedder, Spaces
from chronomem.server.webhooks import Deliverer

__all__ = ["create_app"]

log = logging.getLogger("chronomem.server")
_bearer = HTTPBearer(auto_error=False, description="an API key: cmk_<id>_<secret>")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
    Awaitable[None],
]


def _problem(document: dict[str, Any]) -> JSONResponse:
    return JSONResponse(document, status_code=document["status"], media_type=problems.MEDIA_TYPE)


def create_app(
    spaces: Spaces,
    *,
    loopback: bool,
    max_body_bytes: int = 16 << 20,
    hot_reads: bool = True,
    metrics: bool = True,
    webhooks: bool = True,
    webhook_lease: float = 30.0,
) -> FastAPI:
    """The service over ``spaces``. ``loopback``: the server listens on a loopback address only
    (it may then run without keys; see ``auth.py``). Bodies over ``max_body_bytes`` get 413.
    ``hot_reads=False`` sends recall and peek through the framework's routes too (``hot.py``;
    the answers are the same, which the tests check). ``metrics``: keep Prometheus metrics at
    ``/metrics`` (when ``prometheus_client`` is installed; ``observe.py``). ``webhooks``: deliver
    the webhook subscriptions while the app runs (its lifespan; ``server/webhooks.py``), each
    leased for ``webhook_lease`` seconds."""
    from chronomem import __version__

    mcp_servers: list[Any] = []  # the MCP server, once mounted (its sessions run in the lifespan)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        deliverer = Deliverer(spaces.admin, lease=webhook_lease) if webhooks else None
        if deliverer is not None:
            deliverer.start()
        try:
            if not mcp_servers:
                yield
                return
            async with mcp_servers[0].session_manager.run():
                yield
        finally:
            if deliverer is not None:
                await run_in_threadpool(deliverer.stop)  # it may wait for a POST to end

    app = FastAPI(
        title="chronomem",
        version=__version__,
        description="A memory engine for LLM agents: every verb of the engine, per-space keys.",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    _docs(app)
    gate = Gate(spaces.admin, loopback=loopback)
    service = Service(spaces=spaces, gate=gate)
    app.state.spaces = spaces
    if hot_reads:
        app.add_middleware(HotReads, service=service)
    app.add_middleware(_BodyLimit, limit=max_body_bytes)
    kept = _metrics(spaces) if metrics else None
    app.add_middleware(Observed, metrics=kept)  # added last: it runs first
    _errors(app)

    @app.get("/metrics", include_in_schema=False)
    def scrape(auth: Credentials) -> Response:
        """The service's metrics in Prometheus' text format (admin scope)."""
        gate.caller(None if auth is None else auth.credentials, None, Scope.ADMIN)
        if kept is None:
            detail = "metrics are off: install chronomem[observe]" if metrics else "metrics are off"
            return _problem(problems.problem(404, "NotFound", detail))
        content, media_type = kept.render()
        return Response(content, media_type=media_type)

    @app.get("/v1/health", tags=["service"])
    def health() -> dict[str, Any]:
        """Liveness and the store: 200 when a query on the store answers."""
        return {"status": "ok", "schema_version": spaces.admin.schema_version()}

    v1 = Routes(prefix="/v1/spaces/{space}")

    for routes in (records, reads, graph, admin, changes):
        routes.register(v1, service)
    app.include_router(v1)
    changes.register_service(app, service)
    from chronomem.server.ui import mount_ui

    mount_ui(app, spaces, gate)
    try:
        from chronomem.server.mcp_mount import mount
    except ImportError:  # the mcp extra is not installed: no MCP endpoint
        log.info("MCP endpoint off: install chronomem[mcp]")
    else:
        mcp_servers.append(mount(app, spaces, gate))
    return app


def _metrics(spaces: Spaces) -> Metrics | None:
    """The service's metrics, the shared embedder reporting its runs to them; ``None`` when
    ``prometheus_client`` is missing."""
    try:
        kept = Metrics(spaces)
    except ConfigError as exc:
        log.info("metrics off: %s", exc)
        return None
    if isinstance(spaces.embedder, SharedEmbedder) and spaces.embedder.on_run is None:
        spaces.embedder.on_run = kept.batches.observe
    return kept


def _docs(app: FastAPI) -> None:
    """Interactive docs at ``/docs`` from the vendored Swagger UI (no CDN: works offline)."""
    app.mount("/static", StaticFiles(directory=Path(__file__).parent / "static"), name="static")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="chronomem API",
            swagger_js_url="/static/swagger-ui/swagger-ui-bundle.js",
            swagger_css_url="/static/swagger-ui/swagger-ui.css",
            swagger_favicon_url="",
        )


def _errors(app: FastAPI) -> None:
    """Every error a problem document: chronomem's, the gate's, the framework's, and the rest."""

    @app.exception_handler(ChronomemError)
    def chronomem_error(request: Request, exc: ChronomemError) -> JSONResponse:
        return _problem(problems.from_error(exc))

    @app.exception_handler(Denied)
    def denied(request: Request, exc: Denied) -> JSONResponse:
        return _problem(problems.problem(exc.status, exc.error, exc.detail))

    @app.exception_handler(RequestValidationError)
    def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        detail, field = _validation_detail(exc.errors(), request.headers.get("content-type"))
        return _problem(problems.problem(422, "InvalidInputError", detail, field=field))

    @app.exception_handler(HTTPException)
    def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return _problem(problems.from_http(exc.status_code, str(exc.detail)))

    @app.exception_handler(Exception)
    def crashed(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        answer = _problem(problems.problem(500, "InternalError", "the server failed; see its log"))
        request_id = request.scope.get(REQUEST_ID_KEY)
        if request_id is not None:  # written outside ``Observed``, which names every other answer
            answer.headers["X-Request-Id"] = request_id
        return answer


_JSON_HINT = (
    "send the body as JSON with the header Content-Type: application/json (curl: --json "
    "'{...}', or -H 'Content-Type: application/json' -d '{...}')"
)


def _validation_detail(found: Sequence[Any], content_type: str | None) -> tuple[str, str | None]:
    """A 422's message and field from pydantic's errors, said for a person: a body that is not
    JSON says where it broke, a body that was not sent as JSON says how to send it, and the
    field is a name (never a character position)."""
    first = found[0] if found else {}
    kind = first.get("type")
    if kind == "json_invalid":
        where = next((p for p in first.get("loc", ())[1:] if isinstance(p, int)), None)
        at = f" at character {where}" if where is not None else ""
        reason = (first.get("ctx") or {}).get("error") or first.get("msg")
        return f"the body is not valid JSON{at}: {reason}", None
    sent_json = (content_type or "").split(";")[0].strip().lower().endswith("json")
    if tuple(first.get("loc", ())) == ("body",) and not sent_json:
        got = f"it came as {content_type}" if content_type else "it came with no Content-Type"
        return f"the body must be a JSON object ({got}): {_JSON_HINT}", None
    parts = []
    for e in found:
        path = ".".join(str(p) for p in e.get("loc", ()) if p not in ("body", "query", "path"))
        parts.append(f"{path}: {e.get('msg')}" if path else str(e.get("msg")))
    names = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path")]
    return "; ".join(parts), ".".join(names) or None


class _BodyLimit:
    """Refuses request bodies over ``limit`` bytes with 413, whether they declare their length or
    stream it."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _too_large(self.limit, send)
            return
        seen = 0

        async def limited() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise HTTPException(413, f"the request body is over {self.limit} bytes")
            return message

        await self.app(scope, limited, send)


async def _too_large(limit: int, send: Callable[[Any], Awaitable[None]]) -> None:
    await send_document(send, problems.from_http(413, f"the request body is over {limit} bytes"))
