"""The causal graph (events, links, ancestry, auto-linking) and reflection."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from chronomem.extraction.policy import ExtractionPolicy
from chronomem.extraction.report import ExtractionReport
from chronomem.model.audit import ScrubResult
from chronomem.model.event import Ancestor, Event, EventKind, Link
from chronomem.model.keys import Scope
from chronomem.model.reflection import ReflectionResult
from chronomem.server import wire
from chronomem.server.routes.service import Credentials, Service, instant
from chronomem.writing.calibration import Calibration

__all__ = ["register"]


def register(v1: APIRouter, service: Service) -> None:
    """Add this module's routes to ``v1`` (``/v1/spaces/{space}``)."""

    # -- causal graph ---------------------------------------------------------------------------
    @v1.post("/events", tags=["graph"])
    def add_event(space: str, body: wire.EventIn, auth: Credentials) -> Event:
        service.allow(auth, space, Scope.WRITE)
        return service.memory(space).add_event(**body.model_dump())

    @v1.get("/events", tags=["graph"])
    def events(
        space: str,
        auth: Credentials,
        kind: Annotated[list[EventKind] | None, Query()] = None,
        scope: str | None = None,
        since: Annotated[str | None, Query(description="ISO 8601 with offset")] = None,
        until: Annotated[str | None, Query(description="ISO 8601 with offset")] = None,
        as_of: Annotated[str | None, Query(description="ISO 8601 with offset")] = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Event]:
        """Browse the events by ``occurred_at`` (``kind`` repeats)."""
        service.allow(auth, space, Scope.READ)
        return service.memory(space).events(
            kinds=kind, scope=scope, since=instant(since, "since"),
            until=instant(until, "until"), as_of=instant(as_of), limit=limit, offset=offset,
        )  # fmt: skip

    @v1.get("/events/{event_id}", tags=["graph"])
    def get_event(space: str, event_id: str, auth: Credentials) -> Event:
        service.allow(auth, space, Scope.READ)
        return service.memory(space).get_event(event_id)

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
        service.allow(auth, space, Scope.READ)
        verb = (
            service.memory(space).ancestors
            if direction == "ancestors"
            else service.memory(space).descendants
        )
        return verb(event_id, max_depth, as_of=instant(as_of))

    @v1.post("/events/{event_id}/auto-link", tags=["graph"])
    def auto_link(
        space: str, event_id: str, body: wire.AutoLinkIn, auth: Credentials
    ) -> list[Link]:
        service.allow(auth, space, Scope.WRITE)
        return service.memory(space).auto_link(event_id, **body.model_dump())

    @v1.get("/links", tags=["graph"])
    def links(space: str, auth: Credentials) -> list[Link]:
        service.allow(auth, space, Scope.READ)
        return service.memory(space).links()

    @v1.post("/links", tags=["graph"])
    def link(space: str, body: wire.LinkIn, auth: Credentials) -> Link:
        service.allow(auth, space, Scope.WRITE)
        return service.memory(space).link(
            body.cause, body.effect, body.weight, body.provenance, similarity=body.similarity
        )

    @v1.delete("/links/{cause}/{effect}", tags=["graph"])
    def unlink(space: str, cause: str, effect: str, auth: Credentials) -> bool:
        service.allow(auth, space, Scope.WRITE)
        return service.memory(space).unlink(cause, effect)

    # -- reflection -----------------------------------------------------------------------------
    @v1.post("/reflections", tags=["reflection"])
    def reflect(space: str, body: wire.ReflectIn, auth: Credentials) -> ReflectionResult:
        service.allow(auth, space, Scope.WRITE)
        return service.memory(space).reflect(body.agent, as_of=body.as_of, touch=body.touch)

    @v1.post("/extractions", tags=["reflection"])
    def extract(space: str, body: wire.ExtractIn, auth: Credentials) -> ExtractionReport:
        """Memories an LLM proposes from the agent's new turns, through the lifecycle."""
        service.allow(auth, space, Scope.WRITE)
        policy = ExtractionPolicy(mode=body.mode, trusted_speakers=frozenset(body.trusted_speakers))
        return service.memory(space).extract(body.agent, session=body.session, policy=policy)

    @v1.post("/reflections/if-due", tags=["reflection"])
    def maybe_reflect(
        space: str, body: wire.MaybeReflectIn, auth: Credentials
    ) -> ReflectionResult | None:
        """Reflect if the agent's accumulated importance reached the threshold; ``null`` if
        not."""
        service.allow(auth, space, Scope.WRITE)
        return service.memory(space).maybe_reflect(body.agent, as_of=body.as_of)

    @v1.post("/embed-passages", tags=["records"])
    def embed_passages(space: str, auth: Credentials) -> int:
        service.allow(auth, space, Scope.ADMIN)
        return service.memory(space).embed_passages()

    @v1.post("/embed-records", tags=["records"])
    def embed_records(space: str, auth: Credentials) -> int:
        service.allow(auth, space, Scope.ADMIN)
        return service.memory(space).embed_records()

    @v1.post("/calibrate", tags=["records"])
    def calibrate(space: str, auth: Credentials) -> Calibration:
        service.allow(auth, space, Scope.ADMIN)
        measured = service.memory(space).calibrate()
        service.spaces.renew()  # the read handles load the new thresholds
        return measured

    @v1.post("/scrub", tags=["records"])
    def scrub(space: str, auth: Credentials) -> ScrubResult:
        service.allow(auth, space, Scope.ADMIN)
        return service.memory(space).scrub()
