"""The read verbs' hot path: ``POST /v1/spaces/{space}/recall`` and ``…/peek`` answered by a plain
ASGI handler in front of the framework.

A read is what agents send most, and what they wait for. Through FastAPI it also pays for the
framework's request machinery (the middleware stack, matching ~80 routes, solving dependencies,
building a request object): about as much CPU as the transport itself (``bench/serve.py``,
docs/http.md). Here the same read runs with the same body model (pydantic), the same key gate,
the same engine call (``routes/reads.py``) and the same serialiser for ``list[Hit]``, in one trip
through the worker threads.

The FastAPI routes stay: they are the schema (``/openapi.json``), and they answer everything this
path hands on. A body that is not JSON or does not validate is handed to the framework with the
body replayed, so its 422 is written by one piece of code. Refusals by the gate and errors raised
by the engine are written here with the same documents as the framework's handlers
(``problems.py``): the engine may already have touched records, so a read is never run twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio.to_thread
from fastapi.security.utils import get_authorization_scheme_param
from pydantic import TypeAdapter, ValidationError
from starlette.exceptions import HTTPException

from chronomem.errors import ChronomemError
from chronomem.model.record import Hit
from chronomem.server import problems, wire
from chronomem.server.auth import Denied
from chronomem.server.observe import ROUTE
from chronomem.server.routes.reads import peek_hits, recall_hits
from chronomem.server.routes.service import Service

__all__ = ["HotReads", "send_document"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_PATH = re.compile(r"/v1/spaces/([^/]+)/(recall|peek)")
_HITS = TypeAdapter(list[Hit])
_Read = Callable[[Service, str, Any, "str | None"], list[Hit]]
_VERBS: dict[str, tuple[type[wire.PeekIn], _Read]] = {
    "recall": (wire.RecallIn, recall_hits),
    "peek": (wire.PeekIn, peek_hits),
}


class HotReads:
    """ASGI middleware: answers well-formed recall and peek requests itself, passes the rest on to
    ``app``."""

    def __init__(self, app: ASGIApp, service: Service) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = None
        if scope["type"] == "http" and scope["method"] == "POST":
            match = _PATH.fullmatch(scope["path"])
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"] if match else ():
            headers.setdefault(name, value)  # the first of a repeated header, as Starlette reads
        if match is None or not _is_json(headers.get(b"content-type", b"")):
            await self.app(scope, receive, send)
            return
        try:
            content = await _body(receive)
        except HTTPException as exc:  # over the size limit (the _BodyLimit middleware)
            await send_document(send, problems.from_http(exc.status_code, str(exc.detail)))
            return
        if content is None:  # the client left before its body arrived: nothing is read
            return
        space, verb = match.groups()
        scope[ROUTE] = f"/v1/spaces/{{space}}/{verb}"
        scope["path_params"] = {"space": space}
        model, read = _VERBS[verb]
        try:
            body = model.model_validate_json(content)
        except ValidationError:  # the framework writes the 422, from the same model
            await self.app(scope, _replay(content, receive), send)
            return
        key = _bearer(headers.get(b"authorization"))

        def run() -> bytes:
            return _HITS.dump_json(read(self.service, space, body, key), by_alias=True)

        try:
            answer = await anyio.to_thread.run_sync(run)
        except Denied as exc:
            await send_document(send, problems.problem(exc.status, exc.error, exc.detail))
        except ChronomemError as exc:
            await send_document(send, problems.from_error(exc))
        else:
            await _send(send, 200, answer, b"application/json")


def _is_json(content_type: bytes) -> bool:
    """A body FastAPI reads as JSON: no content type, ``application/json`` or
    ``application/*+json``. (Others go to the framework, which decides.)"""
    kind = content_type.split(b";", 1)[0].strip().lower()
    return kind in (b"", b"application/json") or (
        kind.startswith(b"application/") and kind.endswith(b"+json")
    )


def _bearer(authorization: bytes | None) -> str | None:
    """The key of an ``Authorization: Bearer`` header, as FastAPI's ``HTTPBearer`` reads it."""
    if not authorization:
        return None
    scheme, credentials = get_authorization_scheme_param(authorization.decode("latin-1"))
    return credentials if scheme.lower() == "bearer" and credentials else None


async def _body(receive: Receive) -> bytes | None:
    """The whole request body, or ``None`` when the client disconnects first (a touching read
    must not run for a client that is gone, as the framework's routes do not)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(content: bytes, then: Receive) -> Receive:
    """A ``receive`` that gives ``content`` again, then hands on to the client's."""
    sent = False

    async def receive() -> Any:
        nonlocal sent
        if sent:
            return await then()
        sent = True
        return {"type": "http.request", "body": content, "more_body": False}

    return receive


async def send_document(send: Send, document: dict[str, Any]) -> None:
    """A problem document as the whole response."""
    content = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
    await _send(send, int(document["status"]), content, problems.MEDIA_TYPE.encode())


async def _send(send: Send, status: int, content: bytes, media_type: bytes) -> None:
    headers = [(b"content-length", str(len(content)).encode()), (b"content-type", media_type)]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})
