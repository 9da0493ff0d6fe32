"""The MCP server on ``chronomem serve``: streamable HTTP at
``/v1/spaces/{space}/agents/{agent}/mcp``, behind the service's keys. The URL binds the space and
the agent; the key must see the space with the ``write`` scope (a refused key gets the service's
problem document before any MCP exchange)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio.to_thread
from fastapi.responses import JSONResponse
from mcp.server.mcpserver import Context, MCPServer
from starlette.routing import Route

from chronomem.model.keys import Scope
from chronomem.server import problems
from chronomem.server.auth import Caller, Denied, Gate
from chronomem.server.mcp_server import Binding, build_server, client_name
from chronomem.server.spaces import Spaces

__all__ = ["MCP_PATH", "mount"]

MCP_PATH = "/v1/spaces/{space}/agents/{agent}/mcp"
_CALLER = "chronomem.caller"
Scope_ = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]


def _binding(spaces: Spaces) -> Callable[[Context], Binding]:
    def bind(ctx: Context) -> Binding:
        request = ctx.request_context.request
        scope = request.scope  # type: ignore[union-attr]
        caller: Caller = scope[_CALLER]
        space, agent = scope["path_params"]["space"], scope["path_params"]["agent"]
        key = "" if caller.key is None else f"@key:{caller.key.id}"
        return Binding(
            memory=spaces.memory(space), agent=agent, actor=f"mcp:{client_name(ctx)}:{agent}{key}"
        )

    return bind


class _Gate:
    """Authenticates every MCP request with the service's keys before the MCP app sees it."""

    def __init__(self, app: Callable[[Scope_, Receive, Send], Awaitable[None]], gate: Gate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Scope_, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        raw = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, token = raw.partition(" ")
        space = scope["path_params"]["space"]
        try:
            caller = await anyio.to_thread.run_sync(
                self.gate.caller, token.strip() if scheme.lower() == "bearer" else None, space,
                Scope.WRITE,
            )  # fmt: skip
        except Denied as exc:
            document = problems.problem(exc.status, exc.error, exc.detail)
            await JSONResponse(document, status_code=exc.status, media_type=problems.MEDIA_TYPE)(
                scope, receive, send
            )
            return
        scope[_CALLER] = caller
        await self.app(scope, receive, send)


def mount(app: Any, spaces: Spaces, gate: Gate) -> MCPServer:
    """Serve the MCP server on ``app`` at :data:`MCP_PATH` (with or without a trailing slash)
    and return it (its session manager must run in the app's lifespan)."""
    server = build_server(_binding(spaces))
    server.streamable_http_app()  # creates the session manager the endpoint hands requests to
    endpoint = _Gate(server.session_manager.handle_request, gate)
    app.router.routes.append(Route(MCP_PATH, endpoint=endpoint))
    app.mount(MCP_PATH, endpoint)
    return server
