"""The ASGI application of ``chronomem serve`` (DESIGN §7; the route list is docs/http.md).

Every route under ``/v1/spaces/{space}`` is one verb of the engine: the handler authorises the
caller for the scope the verb needs, turns the body into the verb's arguments (read options into
a :class:`~chronomem.ReadOptions`, as the CLI does) and returns what the engine returns. Handlers
are plain functions, so the framework runs them in its worker thread pool and the event loop never
blocks on the engine. Errors are problem documents (``problems.py``).
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from chronomem.checks import parse_instant
from chronomem.clock import to_micros
from chronomem.context.block import ContextBlock
from chronomem.engine import Memory
from chronomem.errors import ChronomemError, InvalidInputError
from chronomem.model.audit import AuditEntry, ForgetResult
from chronomem.model.core import CoreBlock
from chronomem.model.event import Ancestor, Event, Link
from chronomem.model.keys import Scope
from chronomem.model.record import Hit, Kind, Record, WriteResult
from chronomem.model.reflection import ReflectionResult
from chronomem.model.transfer import ImportReport
from chronomem.retrieval.options import ReadOptions
from chronomem.server import problems, wire
from chronomem.server.auth import Caller, Denied, Gate
from chronomem.server.spaces import Spaces

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


def create_app(spaces: Spaces, *, loopback: bool, max_body_bytes: int = 16 << 20) -> FastAPI:
    """The service over ``spaces``. ``loopback``: the server listens on a loopback address only
    (it may then run without keys; see ``auth.py``). Bodies over ``max_body_bytes`` get 413."""
    from chronomem import __version__

    mcp_servers: list[Any] = []  # the MCP server, once mounted (its sessions run in the lifespan)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if not mcp_servers:
            yield
            return
        async with mcp_servers[0].session_manager.run():
            yield

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
    app.state.spaces = spaces
    app.add_middleware(_BodyLimit, limit=max_body_bytes)
    _errors(app)

    def allow(
        credentials: HTTPAuthorizationCredentials | None, space: str, needed: Scope
    ) -> Caller:
        return gate.caller(None if credentials is None else credentials.credentials, space, needed)

    def memory(space: str) -> Memory:
        return spaces.memory(space)

    @app.get("/v1/health", tags=["service"])
    def health() -> dict[str, Any]:
        """Liveness and the store: 200 when a query on the store answers."""
        return {"status": "ok", "schema_version": spaces.admin.schema_version()}

    v1 = APIRouter(prefix="/v1/spaces/{space}")

    # -- records --------------------------------------------------------------------------------
    @v1.post("/records", tags=["records"])
    def remember(space: str, body: wire.RememberIn, auth: Credentials) -> WriteResult:
        caller = allow(auth, space, Scope.WRITE)
        return memory(space).remember(**body.model_dump(exclude_unset=True), actor=caller.actor)

    @v1.post("/records/batch", tags=["records"])
    def remember_many(space: str, body: wire.BatchIn, auth: Credentials) -> list[WriteResult]:
        caller = allow(auth, space, Scope.WRITE)
        items = [item.model_dump(exclude_unset=True) for item in body.items]
        return memory(space).remember_many(
            items, agent=body.agent, kind=body.kind, actor=caller.actor
        )

    @v1.get("/records", tags=["records"])
    def records(
        space: str,
        auth: Credentials,
        agent: Annotated[list[str] | None, Query()] = None,
        kind: Annotated[list[Kind] | None, Query()] = None,
        domain: str | None = None,
        include_history: bool = False,
        since: Annotated[str | None, Query(description="ISO 8601 with offset")] = None,
        until: Annotated[str | None, Query(description="ISO 8601 with offset")] = None,
        as_of: Annotated[str | None, Query(description="ISO 8601 with offset")] = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Record]:
        """Browse without a query, newest first (``agent`` and ``kind`` repeat)."""
        allow(auth, space, Scope.READ)
        return memory(space).records(
            agents=agent, kinds=kind, domain=domain, include_history=include_history,
            since=_instant(since, "since"), until=_instant(until, "until"),
            as_of=_instant(as_of), limit=limit, offset=offset,
        )  # fmt: skip

    @v1.get("/records/{record_id}", tags=["records"])
    def get(space: str, record_id: str, auth: Credentials) -> Record:
        allow(auth, space, Scope.READ)
        return memory(space).get(record_id)

    @v1.get("/records/{record_id}/history", tags=["lifecycle"])
    def history(space: str, record_id: str, auth: Credentials) -> list[Record]:
        allow(auth, space, Scope.READ)
        return memory(space).history(record_id)

    @v1.get("/records/{record_id}/audit", tags=["lifecycle"])
    def record_audit(space: str, record_id: str, auth: Credentials) -> list[AuditEntry]:
        allow(auth, space, Scope.READ)
        return memory(space).audit(record_id)

    @v1.post("/records/{record_id}/supersede", tags=["lifecycle"])
    def supersede(
        space: str, record_id: str, body: wire.SupersedeIn, auth: Credentials
    ) -> WriteResult:
        caller = allow(auth, space, Scope.WRITE)
        fields = body.model_dump(exclude_unset=True)
        return memory(space).supersede(record_id, actor=caller.actor, **fields)

    @v1.post("/records/{record_id}/close", tags=["lifecycle"])
    def close_record(space: str, record_id: str, body: wire.CloseIn, auth: Credentials) -> Record:
        caller = allow(auth, space, Scope.WRITE)
        return memory(space).close_record(
            record_id, body.reason, valid_until=body.valid_until, actor=caller.actor
        )

    @v1.post("/records/{record_id}/verify", tags=["lifecycle"])
    def verify(space: str, record_id: str, body: wire.VerifyIn, auth: Credentials) -> Record:
        caller = allow(auth, space, Scope.WRITE)
        return memory(space).verify(record_id, actor=caller.actor, reason=body.reason)

    @v1.post("/records/{record_id}/feedback", tags=["lifecycle"])
    def feedback(space: str, record_id: str, body: wire.FeedbackIn, auth: Credentials) -> Record:
        caller = allow(auth, space, Scope.WRITE)
        return memory(space).feedback(record_id, body.signal, body.reason, actor=caller.actor)

    @v1.post("/records/{record_id}/forget", tags=["lifecycle"])
    def forget(space: str, record_id: str, body: wire.ForgetIn, auth: Credentials) -> ForgetResult:
        caller = allow(auth, space, Scope.ADMIN if body.purge else Scope.WRITE)
        return memory(space).forget(record_id, body.reason, purge=body.purge, actor=caller.actor)

    @v1.get("/audit", tags=["lifecycle"])
    def audit(space: str, auth: Credentials) -> list[AuditEntry]:
        allow(auth, space, Scope.READ)
        return memory(space).audit()

    # -- reads ----------------------------------------------------------------------------------
    @v1.post("/recall", tags=["reads"])
    def recall(space: str, body: wire.RecallIn, auth: Credentials) -> list[Hit]:
        allow(auth, space, Scope.WRITE if body.touch else Scope.READ)
        options = ReadOptions.from_arguments(body.model_dump())
        return memory(space).recall(
            body.query, options=options, query_embedding=body.query_embedding
        )

    @v1.post("/peek", tags=["reads"])
    def peek(space: str, body: wire.PeekIn, auth: Credentials) -> list[Hit]:
        allow(auth, space, Scope.READ)
        options = ReadOptions.from_arguments(body.model_dump())
        return memory(space).peek(body.query, options=options, query_embedding=body.query_embedding)

    @v1.post("/recall-many", tags=["reads"])
    def recall_many(space: str, body: wire.RecallManyIn, auth: Credentials) -> list[list[Hit]]:
        allow(auth, space, Scope.WRITE if body.touch else Scope.READ)
        options = ReadOptions.from_arguments(body.model_dump())
        return memory(space).recall_many(
            body.queries, options=options, query_embeddings=body.query_embeddings
        )

    @v1.post("/context", tags=["reads"])
    def context(space: str, body: wire.ContextIn, auth: Credentials) -> ContextBlock:
        allow(auth, space, Scope.WRITE if body.touch else Scope.READ)
        return memory(space).context(**body.model_dump())

    @v1.get("/agents", tags=["reads"])
    def agents(space: str, auth: Credentials) -> list[str]:
        allow(auth, space, Scope.READ)
        return memory(space).agents()

    @v1.get("/agents/{agent}/importance", tags=["reflection"])
    def accumulated_importance(space: str, agent: str, auth: Credentials) -> float:
        allow(auth, space, Scope.READ)
        return memory(space).accumulated_importance(agent)

    @v1.get("/stats", tags=["reads"])
    def stats(space: str, auth: Credentials) -> dict[str, Any]:
        allow(auth, space, Scope.READ)
        out = memory(space).stats()
        out.pop("store", None)  # the server's file or URL is not the caller's business
        return out

    # -- core memory blocks ---------------------------------------------------------------------
    @v1.get("/agents/{agent}/core", tags=["core memory"])
    def core_blocks(
        space: str,
        agent: str,
        auth: Credentials,
        as_of: Annotated[str | None, Query(description="ISO 8601 with offset")] = None,
    ) -> list[CoreBlock]:
        allow(auth, space, Scope.READ)
        return memory(space).core_blocks(agent, as_of=_instant(as_of))

    @v1.post("/agents/{agent}/core/{label}/append", tags=["core memory"])
    def core_append(
        space: str, agent: str, label: str, body: wire.CoreAppendIn, auth: Credentials
    ) -> CoreBlock:
        caller = allow(auth, space, Scope.WRITE)
        return memory(space).core_append(
            agent, label, body.text, actor=caller.actor, limit=body.limit
        )

    @v1.post("/agents/{agent}/core/{label}/replace", tags=["core memory"])
    def core_replace(
        space: str, agent: str, label: str, body: wire.CoreReplaceIn, auth: Credentials
    ) -> CoreBlock:
        caller = allow(auth, space, Scope.WRITE)
        return memory(space).core_replace(
            agent, label, body.old, body.new, actor=caller.actor, limit=body.limit
        )

    # -- causal graph ---------------------------------------------------------------------------
    @v1.post("/events", tags=["graph"])
    def add_event(space: str, body: wire.EventIn, auth: Credentials) -> Event:
        allow(auth, space, Scope.WRITE)
        return memory(space).add_event(**body.model_dump())

    @v1.get("/events/{event_id}", tags=["graph"])
    def get_event(space: str, event_id: str, auth: Credentials) -> Event:
        allow(auth, space, Scope.READ)
        return memory(space).get_event(event_id)

    @v1.get("/events/{event_id}/{direction}", tags=["graph"])
    def reach(
        space: str,
        event_id: str,
        direction: Literal["ancestors", "descendants"],
        auth: Credentials,
        max_depth: int = 4,
        as_of: Annotated[str | None, Query(description="ISO 8601 with offset")] = None,
    ) -> list[Ancestor]:
        """The event's causes (``ancestors``) or effects (``descendants``) within
        ``max_depth`` links."""
        allow(auth, space, Scope.READ)
        verb = memory(space).ancestors if direction == "ancestors" else memory(space).descendants
        return verb(event_id, max_depth, as_of=_instant(as_of))

    @v1.post("/events/{event_id}/auto-link", tags=["graph"])
    def auto_link(
        space: str, event_id: str, body: wire.AutoLinkIn, auth: Credentials
    ) -> list[Link]:
        allow(auth, space, Scope.WRITE)
        return memory(space).auto_link(event_id, **body.model_dump())

    @v1.get("/links", tags=["graph"])
    def links(space: str, auth: Credentials) -> list[Link]:
        allow(auth, space, Scope.READ)
        return memory(space).links()

    @v1.post("/links", tags=["graph"])
    def link(space: str, body: wire.LinkIn, auth: Credentials) -> Link:
        allow(auth, space, Scope.WRITE)
        return memory(space).link(
            body.cause, body.effect, body.weight, body.provenance, similarity=body.similarity
        )

    @v1.delete("/links/{cause}/{effect}", tags=["graph"])
    def unlink(space: str, cause: str, effect: str, auth: Credentials) -> bool:
        allow(auth, space, Scope.WRITE)
        return memory(space).unlink(cause, effect)

    # -- reflection -----------------------------------------------------------------------------
    @v1.post("/reflections", tags=["reflection"])
    def reflect(space: str, body: wire.ReflectIn, auth: Credentials) -> ReflectionResult:
        allow(auth, space, Scope.WRITE)
        return memory(space).reflect(body.agent, as_of=body.as_of, touch=body.touch)

    @v1.post("/embed-passages", tags=["records"])
    def embed_passages(space: str, auth: Credentials) -> int:
        allow(auth, space, Scope.ADMIN)
        return memory(space).embed_passages()

    # -- moving data in and out (admin) -----------------------------------------------------------
    @v1.get("/export", tags=["transfer"], response_class=FileResponse)
    def export(space: str, auth: Credentials) -> FileResponse:
        allow(auth, space, Scope.ADMIN)
        folder = Path(tempfile.mkdtemp(prefix="chronomem-export-"))
        archive = folder / f"{space}.jsonl"
        memory(space).export(archive)
        return FileResponse(
            archive,
            media_type="application/x-ndjson",
            filename=archive.name,
            background=BackgroundTask(_remove, folder),
        )

    @v1.post("/import", tags=["transfer"])
    async def import_(space: str, request: Request, auth: Credentials) -> ImportReport:
        await run_in_threadpool(allow, auth, space, Scope.ADMIN)
        body = await request.body()
        return await run_in_threadpool(_import, memory(space), body)

    # -- the space's clock ----------------------------------------------------------------------
    @v1.get("/clock", tags=["clock"])
    def clock(space: str, auth: Credentials) -> wire.ClockOut:
        allow(auth, space, Scope.READ)
        clock = spaces.clock(space)
        return wire.ClockOut(now=clock.now(), simulated=clock.is_simulated)

    @v1.put("/clock", tags=["clock"])
    def set_clock(space: str, body: wire.ClockIn, auth: Credentials) -> wire.ClockOut:
        allow(auth, space, Scope.ADMIN)
        now = None if body.now is None else to_micros(body.now)
        spaces.admin.set_space_clock(space, now)
        return clock(space, auth)

    @v1.post("/clock/advance", tags=["clock"])
    def advance_clock(space: str, body: wire.AdvanceIn, auth: Credentials) -> wire.ClockOut:
        allow(auth, space, Scope.ADMIN)
        if body.by.total_seconds() <= 0:
            raise InvalidInputError("a simulated clock only moves forward; by must be positive",
                                    field="by")  # fmt: skip
        current = spaces.clock(space)
        if not current.is_simulated:
            raise InvalidInputError(
                "the space follows the wall clock; PUT /clock a simulated instant first",
                field="by",
            )
        spaces.admin.set_space_clock(space, to_micros(current.now() + body.by))
        return clock(space, auth)

    app.include_router(v1)
    try:
        from chronomem.server.mcp_mount import mount
    except ImportError:  # the mcp extra is not installed: no MCP endpoint
        log.info("MCP endpoint off: install chronomem[mcp]")
    else:
        mcp_servers.append(mount(app, spaces, gate))
    return app


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


def _instant(text: str | None, name: str = "as_of") -> Any:
    return None if text is None else parse_instant(text, name)


def _import(memory: Memory, body: bytes) -> ImportReport:
    with tempfile.TemporaryDirectory(prefix="chronomem-import-") as folder:
        archive = Path(folder) / "archive.jsonl"
        archive.write_bytes(body)
        return memory.import_(archive)


def _remove(folder: Path) -> None:
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()


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
        found = exc.errors()
        first = found[0] if found else {}
        where = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path")]
        detail = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body')}: {e.get('msg')}"
            for e in found
        )
        return _problem(
            problems.problem(422, "InvalidInputError", detail, field=".".join(where) or None)
        )

    @app.exception_handler(HTTPException)
    def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        name = {404: "NotFound", 405: "MethodNotAllowed", 413: "PayloadTooLarge"}.get(
            exc.status_code, "HTTPError"
        )
        return _problem(problems.problem(exc.status_code, name, str(exc.detail)))

    @app.exception_handler(Exception)
    def crashed(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return _problem(problems.problem(500, "InternalError", "the server failed; see its log"))


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
    document = problems.problem(413, "PayloadTooLarge", f"the request body is over {limit} bytes")
    response = _problem(document)
    await send({"type": "http.response.start", "status": 413, "headers": response.raw_headers})
    await send({"type": "http.response.body", "body": response.body})
