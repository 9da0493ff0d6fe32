"""Reads: recall, peek, recall-many, context, agents, stats, and an agent's core memory blocks."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from chronomem.context.block import ContextBlock
from chronomem.model.core import CoreBlock
from chronomem.model.keys import Scope
from chronomem.model.record import Hit
from chronomem.retrieval.options import ReadOptions
from chronomem.server import wire
from chronomem.server.routes.service import Credentials, Service, instant, token

__all__ = ["peek_hits", "recall_hits", "register"]


# The two read verbs, for their routes here and for the hot path (``server/hot.py``).
def recall_hits(service: Service, space: str, body: wire.RecallIn, key: str | None) -> list[Hit]:
    writes = body.touch or body.refresh_ttl
    caller = service.gate.caller(key, space, Scope.WRITE if writes else Scope.READ)
    options = ReadOptions.from_arguments({**body.model_dump(), "actor": caller.actor})
    with service.reader(space) as memory:
        return memory.recall(body.query, options=options, query_embedding=body.query_embedding)


def peek_hits(service: Service, space: str, body: wire.PeekIn, key: str | None) -> list[Hit]:
    caller = service.gate.caller(key, space, Scope.WRITE if body.refresh_ttl else Scope.READ)
    options = ReadOptions.from_arguments({**body.model_dump(), "actor": caller.actor})
    with service.reader(space) as memory:
        return memory.peek(body.query, options=options, query_embedding=body.query_embedding)


def register(v1: APIRouter, service: Service) -> None:
    """Add this module's routes to ``v1`` (``/v1/spaces/{space}``)."""

    # -- reads ----------------------------------------------------------------------------------
    @v1.post("/recall", tags=["reads"])
    def recall(space: str, body: wire.RecallIn, auth: Credentials) -> list[Hit]:
        return recall_hits(service, space, body, token(auth))

    @v1.post("/peek", tags=["reads"])
    def peek(space: str, body: wire.PeekIn, auth: Credentials) -> list[Hit]:
        return peek_hits(service, space, body, token(auth))

    @v1.post("/recall-many", tags=["reads"])
    def recall_many(space: str, body: wire.RecallManyIn, auth: Credentials) -> list[list[Hit]]:
        writes = body.touch or body.refresh_ttl
        caller = service.allow(auth, space, Scope.WRITE if writes else Scope.READ)
        options = ReadOptions.from_arguments({**body.model_dump(), "actor": caller.actor})
        with service.reader(space) as memory:
            return memory.recall_many(
                body.queries, options=options, query_embeddings=body.query_embeddings
            )

    @v1.post("/context", tags=["reads"])
    def context(space: str, body: wire.ContextIn, auth: Credentials) -> ContextBlock:
        service.allow(auth, space, Scope.WRITE if body.touch else Scope.READ)
        with service.reader(space) as memory:
            return memory.context(**body.model_dump())

    @v1.get("/agents", tags=["reads"])
    def agents(space: str, auth: Credentials) -> list[str]:
        service.allow(auth, space, Scope.READ)
        return service.memory(space).agents()

    @v1.get("/agents/{agent}/importance", tags=["reflection"])
    def accumulated_importance(space: str, agent: str, auth: Credentials) -> float:
        service.allow(auth, space, Scope.READ)
        return service.memory(space).accumulated_importance(agent)

    @v1.get("/stats", tags=["reads"])
    def stats(space: str, auth: Credentials) -> dict[str, Any]:
        service.allow(auth, space, Scope.READ)
        out = service.memory(space).stats()
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
        service.allow(auth, space, Scope.READ)
        return service.memory(space).core_blocks(agent, as_of=instant(as_of))

    @v1.post("/agents/{agent}/core/{label}/append", tags=["core memory"])
    def core_append(
        space: str, agent: str, label: str, body: wire.CoreAppendIn, auth: Credentials
    ) -> CoreBlock:
        caller = service.allow(auth, space, Scope.WRITE)
        return service.memory(space).core_append(
            agent, label, body.text, actor=caller.actor, limit=body.limit
        )

    @v1.post("/agents/{agent}/core/{label}/replace", tags=["core memory"])
    def core_replace(
        space: str, agent: str, label: str, body: wire.CoreReplaceIn, auth: Credentials
    ) -> CoreBlock:
        caller = service.allow(auth, space, Scope.WRITE)
        return service.memory(space).core_replace(
            agent, label, body.old, body.new, actor=caller.actor, limit=body.limit
        )
