"""Curation and administration: the review queue, the access log, export and import, the
space's clock."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from chronomem.clock import to_micros
from chronomem.engine import Memory
from chronomem.errors import InvalidInputError
from chronomem.model.keys import Scope
from chronomem.model.review import Access, Proposal
from chronomem.model.transfer import ImportReport
from chronomem.server import wire
from chronomem.server.routes.service import Credentials, Service, instant

__all__ = ["register"]


def register(v1: APIRouter, service: Service) -> None:
    """Add this module's routes to ``v1`` (``/v1/spaces/{space}``)."""

    # -- review and the access log -------------------------------------------------------------
    @v1.get("/review", tags=["review"])
    def review(
        space: str,
        auth: Credentials,
        agent: str | None = None,
        as_of: Annotated[str | None, Query(description="ISO 8601 with offset")] = None,
    ) -> list[Proposal]:
        """Find and queue the open proposals (nothing is applied)."""
        service.allow(auth, space, Scope.WRITE)
        return service.memory(space).review(agent, as_of=instant(as_of))

    @v1.get("/review/proposals", tags=["review"])
    def proposals(space: str, auth: Credentials, status: str | None = None) -> list[Proposal]:
        service.allow(auth, space, Scope.READ)
        return service.memory(space).proposals(status)

    @v1.post("/review/{proposal_id}/approve", tags=["review"])
    def approve(space: str, proposal_id: str, auth: Credentials) -> Proposal:
        caller = service.allow(auth, space, Scope.WRITE)
        return service.memory(space).approve(proposal_id, actor=caller.actor)

    @v1.post("/review/{proposal_id}/reject", tags=["review"])
    def reject(space: str, proposal_id: str, body: wire.RejectIn, auth: Credentials) -> Proposal:
        caller = service.allow(auth, space, Scope.WRITE)
        return service.memory(space).reject(proposal_id, body.reason, actor=caller.actor)

    @v1.put("/access-log", tags=["review"])
    def set_access_log(space: str, body: wire.AccessLogIn, auth: Credentials) -> bool:
        service.allow(auth, space, Scope.ADMIN)
        service.memory(space).set_access_log(body.on)
        return body.on

    @v1.get("/accesses", tags=["review"])
    def accesses(
        space: str, auth: Credentials, record_id: str | None = None, limit: int = 100
    ) -> list[Access]:
        service.allow(auth, space, Scope.READ)
        return service.memory(space).accesses(record_id, limit=limit)

    # -- moving data in and out (admin) -----------------------------------------------------------
    @v1.get("/export", tags=["transfer"], response_class=FileResponse)
    def export(space: str, auth: Credentials) -> FileResponse:
        service.allow(auth, space, Scope.ADMIN)
        folder = Path(tempfile.mkdtemp(prefix="chronomem-export-"))
        archive = folder / f"{space}.jsonl"
        service.memory(space).export(archive)
        return FileResponse(
            archive,
            media_type="application/x-ndjson",
            filename=archive.name,
            background=BackgroundTask(_remove, folder),
        )

    @v1.post("/import", tags=["transfer"])
    async def import_(space: str, request: Request, auth: Credentials) -> ImportReport:
        await run_in_threadpool(service.allow, auth, space, Scope.ADMIN)
        body = await request.body()
        return await run_in_threadpool(_import, service.memory(space), body)

    # -- the space's clock ----------------------------------------------------------------------
    @v1.get("/clock", tags=["clock"])
    def clock(space: str, auth: Credentials) -> wire.ClockOut:
        service.allow(auth, space, Scope.READ)
        clock = service.spaces.clock(space)
        return wire.ClockOut(now=clock.now(), simulated=clock.is_simulated)

    @v1.put("/clock", tags=["clock"])
    def set_clock(space: str, body: wire.ClockIn, auth: Credentials) -> wire.ClockOut:
        service.allow(auth, space, Scope.ADMIN)
        now = None if body.now is None else to_micros(body.now)
        service.spaces.admin.set_space_clock(space, now)
        return clock(space, auth)

    @v1.post("/clock/advance", tags=["clock"])
    def advance_clock(space: str, body: wire.AdvanceIn, auth: Credentials) -> wire.ClockOut:
        service.allow(auth, space, Scope.ADMIN)
        if body.by.total_seconds() <= 0:
            raise InvalidInputError("a simulated clock only moves forward; by must be positive",
                                    field="by")  # fmt: skip
        current = service.spaces.clock(space)
        if not current.is_simulated:
            raise InvalidInputError(
                "the space follows the wall clock; PUT /clock a simulated instant first",
                field="by",
            )
        try:
            later = current.now() + body.by
        except OverflowError:
            raise InvalidInputError(f"{body.by} is past the last instant", field="by") from None
        service.spaces.admin.set_space_clock(space, to_micros(later))
        return clock(space, auth)


def _import(memory: Memory, body: bytes) -> ImportReport:
    with tempfile.TemporaryDirectory(prefix="chronomem-import-") as folder:
        archive = Path(folder) / "archive.jsonl"
        archive.write_bytes(body)
        return memory.import_(archive)


def _remove(folder: Path) -> None:
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
