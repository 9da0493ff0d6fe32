"""The change feed (docs/design/change-feed.md): read from a position, long-polled or streamed as
Server-Sent Events, and the webhook subscriptions that push it.

Both ways of waiting poll the store's feed head (one indexed lookup every ``POLL_S``), so they see
changes committed by other processes and other replicas over the same database, not only by this
one; a waiting request holds no worker thread."""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Annotated

from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from chronomem.checks import MAX_INT
from chronomem.errors import InvalidInputError, NotFoundError
from chronomem.model.change import (
    MAX_CHANGES,
    MAX_WAIT_S,
    SERVICE_FEED,
    Change,
    Webhook,
    WebhookFailure,
)
from chronomem.model.keys import Scope
from chronomem.server import wire
from chronomem.server.auth import Denied
from chronomem.server.routes.service import Credentials, Service
from chronomem.server.spaces import Spaces
from chronomem.server.webhooks import check_url, delivery_body, new_webhook
from chronomem.stores.base import MemoryStore

__all__ = [
    "HEARTBEAT_S",
    "POLL_S",
    "After",
    "register",
    "register_service",
    "resume_from",
    "stream",
]

#: How often a waiting read asks the store whether the feed moved.
POLL_S = 0.2
#: A stream's comment line this often keeps proxies from closing an idle connection.
HEARTBEAT_S = 15.0

After = Annotated[
    int, Query(ge=0, le=MAX_INT, description="changes after this seq (0: from the start)")
]
Limit = Annotated[int, Query(ge=1, le=MAX_CHANGES, description="the most changes returned")]
Wait = Annotated[
    float,
    Query(ge=0, le=MAX_WAIT_S, description="seconds to wait for a change when there is none yet"),
]


async def _moved(
    store: MemoryStore, feed: str, after: int, until: float, request: Request,
    stopping: threading.Event,
) -> bool:  # fmt: skip
    """Wait until ``feed`` has a change after ``after`` (``True``), ``until`` passes, the
    client goes away or the server begins to stop (``False``)."""
    while (
        time.monotonic() < until and not stopping.is_set() and not await request.is_disconnected()
    ):
        if await run_in_threadpool(store.feed_head, feed) > after:
            return True
        await asyncio.sleep(min(POLL_S, max(0.0, until - time.monotonic())))
    return False


async def _long_poll(
    service: Service, feed: str, after: int, limit: int, wait: float, request: Request
) -> list[Change]:
    store, stopping = service.spaces.admin, service.spaces.stopping
    until = time.monotonic() + wait
    while True:
        found = await run_in_threadpool(store.changes, feed, after, limit)
        if found or not await _moved(store, feed, after, until, request, stopping):
            return found


def resume_from(request: Request, after: int) -> int:
    """The position a stream starts after: a reconnecting client's ``Last-Event-ID`` wins."""
    last = request.headers.get("last-event-id")
    if last is None:
        return after
    if not last.isdigit() or int(last) > MAX_INT:
        raise InvalidInputError(f"Last-Event-ID must be a seq; got {last!r:.40}", field="after")
    return int(last)


def stream(
    spaces: Spaces, feed: str, after: int, request: Request, allowed: Callable[[], object]
) -> StreamingResponse:
    """``feed``'s changes after ``after`` as Server-Sent Events, then each as it commits, until
    the client goes away, ``allowed`` (the caller's key, checked again before each wait for a
    change) refuses — a revoked key's stream ends — or the server begins to stop (the client
    reconnects, from the last event's id, to whichever serves next). The API's stream and the
    web UI's."""
    store, stopping = spaces.admin, spaces.stopping

    async def events() -> AsyncIterator[bytes]:
        position = after
        yield b"retry: 2000\n\n"
        while not stopping.is_set() and not await request.is_disconnected():
            try:
                await run_in_threadpool(allowed)
            except Denied:
                return
            found = await run_in_threadpool(store.changes, feed, position, 100)
            for change in found:
                data = delivery_body(change)
                yield b"id: %d\nevent: change\ndata: %s\n\n" % (change.seq, data)
                position = change.seq
            if not found and not await _moved(
                store, feed, position, time.monotonic() + HEARTBEAT_S, request, stopping
            ):
                yield b": keep-alive\n\n"

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(events(), media_type="text/event-stream", headers=headers)


def register(v1: APIRouter, service: Service) -> None:
    """Add the feed's routes to ``v1`` (``/v1/spaces/{space}``)."""

    @v1.get("/changes", tags=["changes"])
    async def changes(
        space: str, request: Request, auth: Credentials, after: After = 0, limit: Limit = 100,
        wait: Wait = 0.0,
    ) -> list[Change]:  # fmt: skip
        """The space's changes after ``after``, oldest first; with ``wait``, a long poll: when
        there is none yet, the answer comes as soon as one commits (or empty after ``wait`` s)."""
        await run_in_threadpool(service.allow, auth, space, Scope.READ)
        return await _long_poll(service, space, after, limit, wait, request)

    @v1.get("/changes/stream", tags=["changes"], response_class=StreamingResponse)
    async def change_stream(
        space: str, request: Request, auth: Credentials, after: After = 0
    ) -> StreamingResponse:
        """The space's changes as Server-Sent Events (``event: change``, ``id:`` its seq), from
        ``after`` or a reconnecting client's ``Last-Event-ID``, then each as it commits."""
        await run_in_threadpool(service.allow, auth, space, Scope.READ)
        allowed = functools.partial(service.allow, auth, space, Scope.READ)
        return stream(service.spaces, space, resume_from(request, after), request, allowed)

    @v1.post("/webhooks", tags=["changes"], status_code=201)
    def add_webhook(space: str, body: wire.WebhookIn, auth: Credentials) -> Webhook:
        """Subscribe a URL to the space's changes; the answer shows the secret, once."""
        service.allow(auth, space, Scope.ADMIN)
        store = service.spaces.admin
        head = store.feed_head(space)
        if body.after is not None and body.after > head:
            raise InvalidInputError(
                f"after {body.after} is past the feed's newest change ({head})", field="after"
            )
        after = head if body.after is None else body.after
        hook = new_webhook(space, check_url(body.url), body.secret, after=after)
        store.insert_webhook(hook)
        return hook

    @v1.get("/webhooks", tags=["changes"])
    def list_webhooks(space: str, auth: Credentials) -> list[Webhook]:
        """The space's subscriptions: cursor, failures in a row, last error (no secrets)."""
        service.allow(auth, space, Scope.ADMIN)
        return service.spaces.admin.webhooks(space)

    def _hook(space: str, webhook_id: str) -> Webhook:
        hook = service.spaces.admin.get_webhook(webhook_id)
        if hook is None or hook.space != space:
            raise NotFoundError(f"no webhook {webhook_id!r} in space {space!r}")
        return hook

    @v1.get("/webhooks/{webhook_id}", tags=["changes"])
    def get_webhook(space: str, webhook_id: str, auth: Credentials) -> Webhook:
        service.allow(auth, space, Scope.ADMIN)
        return _hook(space, webhook_id)

    @v1.get("/webhooks/{webhook_id}/failures", tags=["changes"])
    def webhook_failures(space: str, webhook_id: str, auth: Credentials) -> list[WebhookFailure]:
        """The subscription's failed delivery attempts (the newest 100), oldest first."""
        service.allow(auth, space, Scope.ADMIN)
        return service.spaces.admin.webhook_failures(_hook(space, webhook_id).id)

    @v1.delete("/webhooks/{webhook_id}", tags=["changes"], status_code=204)
    def remove_webhook(space: str, webhook_id: str, auth: Credentials) -> Response:
        service.allow(auth, space, Scope.ADMIN)
        if not service.spaces.admin.delete_webhook(space, webhook_id):
            raise NotFoundError(f"no webhook {webhook_id!r} in space {space!r}")
        return Response(status_code=204)


def register_service(app: FastAPI, service: Service) -> None:
    """The service's own feed: changes of keys bound to no space (admin scope)."""

    @app.get("/v1/changes", tags=["changes"])
    async def service_changes(
        request: Request, auth: Credentials, after: After = 0, limit: Limit = 100,
        wait: Wait = 0.0,
    ) -> list[Change]:  # fmt: skip
        """Changes of the service itself (admin keys' creation and revocation), as
        ``/v1/spaces/{space}/changes`` reads a space's; for admin keys of every space."""
        caller = await run_in_threadpool(service.allow, auth, None, Scope.ADMIN)
        if caller.key is not None and caller.key.space is not None:
            raise Denied(403, "Forbidden", "the service's feed is for admin keys of every space")
        return await _long_poll(service, SERVICE_FEED, after, limit, wait, request)
