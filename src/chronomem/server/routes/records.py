"""Records and their lifecycle: remember, browse, get, history, audit, supersede, close,
verify, feedback, forget."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from chronomem.model.audit import AuditEntry, BulkResult, ForgetResult
from chronomem.model.keys import Scope
from chronomem.model.record import Dependant, Kind, Record, Status, WriteResult
from chronomem.server import wire
from chronomem.server.routes.service import Credentials, Service, instant, json_object
from chronomem.verbs import PARAMS

__all__ = ["register"]


def register(v1: APIRouter, service: Service) -> None:
    """Add this module's routes to ``v1`` (``/v1/spaces/{space}``)."""

    # -- records --------------------------------------------------------------------------------
    @v1.post("/records", tags=["records"])
    def remember(space: str, body: wire.RememberIn, auth: Credentials) -> WriteResult:
        caller = service.allow(auth, space, Scope.WRITE)
        return service.memory(space).remember(
            **body.model_dump(exclude_unset=True), actor=caller.actor
        )

    @v1.post("/records/batch", tags=["records"])
    def remember_many(space: str, body: wire.BatchIn, auth: Credentials) -> list[WriteResult]:
        caller = service.allow(auth, space, Scope.WRITE)
        items = [item.model_dump(exclude_unset=True) for item in body.items]
        return service.memory(space).remember_many(
            items, agent=body.agent, kind=body.kind, session=body.session, actor=caller.actor
        )

    @v1.post("/messages", tags=["records"])
    def remember_messages(
        space: str, body: wire.MessagesIn, auth: Credentials
    ) -> list[WriteResult]:
        """A conversation's turns as chat records, one result per message (idempotent)."""
        caller = service.allow(auth, space, Scope.WRITE)
        return service.memory(space).remember_messages(
            body.messages, agent=body.agent, session=body.session, actor=caller.actor
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
        status: Status | None = None,
        filter: Annotated[
            str | None, Query(description="a filter as JSON: " + PARAMS["filter"].doc)
        ] = None,
        session: Annotated[str | None, Query(description=PARAMS["session"].doc)] = None,
        refresh_ttl: Annotated[
            bool, Query(description=PARAMS["refresh_ttl"].doc + " (a write: needs write scope)")
        ] = False,
    ) -> list[Record]:
        """Browse without a query, newest first (``agent`` and ``kind`` repeat; ``status``:
        open, closed or superseded at ``as_of``)."""
        service.allow(auth, space, Scope.WRITE if refresh_ttl else Scope.READ)
        return service.memory(space).records(
            agents=agent, kinds=kind, domain=domain, include_history=include_history,
            since=instant(since, "since"), until=instant(until, "until"),
            as_of=instant(as_of), limit=limit, offset=offset, status=status,
            filter=json_object(filter, "filter"), session=session, refresh_ttl=refresh_ttl,
        )  # fmt: skip

    @v1.get("/records/{record_id}", tags=["records"])
    def get(space: str, record_id: str, auth: Credentials) -> Record:
        service.allow(auth, space, Scope.READ)
        return service.memory(space).get(record_id)

    @v1.post("/records/get-many", tags=["records"])
    def get_many(space: str, body: wire.GetManyIn, auth: Credentials) -> list[Record]:
        """The records with these ids, whatever their status, in the order asked."""
        service.allow(auth, space, Scope.READ)
        return service.memory(space).get_many(body.record_ids)

    @v1.get("/records/{record_id}/dependants", tags=["lifecycle"])
    def dependants(space: str, record_id: str, auth: Credentials) -> list[Dependant]:
        """What depends on the record, as ``forget`` weighs it."""
        service.allow(auth, space, Scope.READ)
        return service.memory(space).dependants(record_id)

    @v1.get("/records/{record_id}/history", tags=["lifecycle"])
    def history(space: str, record_id: str, auth: Credentials) -> list[Record]:
        service.allow(auth, space, Scope.READ)
        return service.memory(space).history(record_id)

    @v1.get("/records/{record_id}/audit", tags=["lifecycle"])
    def record_audit(space: str, record_id: str, auth: Credentials) -> list[AuditEntry]:
        service.allow(auth, space, Scope.READ)
        return service.memory(space).audit(record_id)

    @v1.post("/records/{record_id}/supersede", tags=["lifecycle"])
    def supersede(
        space: str, record_id: str, body: wire.SupersedeIn, auth: Credentials
    ) -> WriteResult:
        caller = service.allow(auth, space, Scope.WRITE)
        fields = body.model_dump(exclude_unset=True)
        return service.memory(space).supersede(record_id, actor=caller.actor, **fields)

    @v1.post("/records/{record_id}/close", tags=["lifecycle"])
    def close_record(space: str, record_id: str, body: wire.CloseIn, auth: Credentials) -> Record:
        caller = service.allow(auth, space, Scope.WRITE)
        return service.memory(space).close_record(
            record_id, body.reason, valid_until=body.valid_until, actor=caller.actor
        )

    @v1.post("/records/{record_id}/verify", tags=["lifecycle"])
    def verify(space: str, record_id: str, body: wire.VerifyIn, auth: Credentials) -> Record:
        caller = service.allow(auth, space, Scope.WRITE)
        return service.memory(space).verify(record_id, actor=caller.actor, reason=body.reason)

    @v1.post("/records/{record_id}/feedback", tags=["lifecycle"])
    def feedback(space: str, record_id: str, body: wire.FeedbackIn, auth: Credentials) -> Record:
        caller = service.allow(auth, space, Scope.WRITE)
        return service.memory(space).feedback(
            record_id, body.signal, body.reason, actor=caller.actor
        )

    @v1.post("/records/{record_id}/forget", tags=["lifecycle"])
    def forget(space: str, record_id: str, body: wire.ForgetIn, auth: Credentials) -> ForgetResult:
        caller = service.allow(auth, space, Scope.ADMIN if body.purge else Scope.WRITE)
        return service.memory(space).forget(
            record_id, body.reason, purge=body.purge, actor=caller.actor
        )

    # -- changes by filter (one transaction each) -------------------------------------------------
    @v1.post("/records/close-where", tags=["lifecycle"])
    def close_where(space: str, body: wire.CloseWhereIn, auth: Credentials) -> BulkResult:
        caller = service.allow(auth, space, Scope.WRITE)
        return service.memory(space).close_where(
            body.filter, body.reason, agent=body.agent, agents=body.agents,
            valid_until=body.valid_until, dry_run=body.dry_run, actor=caller.actor,
        )  # fmt: skip

    @v1.post("/records/verify-where", tags=["lifecycle"])
    def verify_where(space: str, body: wire.VerifyWhereIn, auth: Credentials) -> BulkResult:
        caller = service.allow(auth, space, Scope.WRITE)
        return service.memory(space).verify_where(
            body.filter, agent=body.agent, agents=body.agents, reason=body.reason,
            dry_run=body.dry_run, actor=caller.actor,
        )  # fmt: skip

    @v1.post("/records/forget-where", tags=["lifecycle"])
    def forget_where(space: str, body: wire.ForgetWhereIn, auth: Credentials) -> BulkResult:
        caller = service.allow(auth, space, Scope.ADMIN if body.purge else Scope.WRITE)
        return service.memory(space).forget_where(
            body.filter, body.reason, agent=body.agent, agents=body.agents, purge=body.purge,
            dry_run=body.dry_run, actor=caller.actor,
        )  # fmt: skip

    @v1.post("/expire", tags=["lifecycle"])
    def expire(space: str, auth: Credentials) -> list[str]:
        """Store the close of every record whose time to live ran out; their ids."""
        service.allow(auth, space, Scope.WRITE)
        return service.memory(space).expire()

    @v1.get("/audit", tags=["lifecycle"])
    def audit(space: str, auth: Credentials) -> list[AuditEntry]:
        service.allow(auth, space, Scope.READ)
        return service.memory(space).audit()
