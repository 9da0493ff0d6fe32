"""The web UI at ``/ui`` (DESIGN §7): server-rendered pages with a little JavaScript, behind the
service's keys, working offline (every asset is in the package). People see what an agent knew
at an instant (the timeline), what replaced what and why (the record page), why a memory ranked
where it did (the recall explorer), which causes led to a crisis (the causal view), and what a
curator should decide (the review queue).

A browser authenticates by pasting a key on ``/ui/login``: it is kept in an HttpOnly,
SameSite=Strict cookie and checked on every request exactly as the API checks it. On a loopback
server without keys the pages are open, as the API is.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import numpy as np
from fastapi import FastAPI, Form, Request
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from chronomem.analysis.scripts import language_of
from chronomem.checks import parse_instant
from chronomem.clock import to_micros
from chronomem.config import PRESETS
from chronomem.engine import Memory
from chronomem.errors import ChronomemError
from chronomem.lifecycle.rules import decay_factor
from chronomem.model.keys import Scope
from chronomem.model.record import Record, Status
from chronomem.retrieval.options import ReadOptions
from chronomem.server import problems
from chronomem.server.auth import Caller, Denied, Gate
from chronomem.server.routes import changes as feed
from chronomem.server.spaces import Spaces
from chronomem.text import clip

__all__ = ["COOKIE", "mount_ui"]

COOKIE = "chronomem_key"
_SHOWN = 500  # the timeline lists the newest records up to this many
_GRAPH_EVENTS = 2_000  # the causal page draws at most this many events
_CITES = "cites it as evidence"
_PAD = timedelta(hours=1)  # the as-of control's margin when a space's records span no time
_MINUTE = timedelta(minutes=1)
#: The recall explorer's legend: each part of a score as ``Breakdown.contributions()`` names it,
#: in the order the bars draw them, and what it is.
_PARTS = {
    "relevance": "how well the text matches the question (dense, lexical or hybrid) × its weight",
    "recency": "how lately it was last read, by elapsed time × its weight",
    "importance": "its importance, 1 to 10 × its weight",
    "causal boost": "the lift from a cause of the crisis it is tied to",
    "newer version": "part of the score of the older version it updates",
    "latest in its band": "preferring the later of close-scoring versions of one fact",
}
_TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))


def _lang(text: str) -> str:
    """An HTML ``lang`` attribute for a record's text in Korean, Japanese or Chinese (so the
    browser picks that language's glyphs for the characters they share), else nothing."""
    found = language_of(text)
    return f' lang="{found}"' if found in ("ko", "ja", "zh") else ""


def _minute(at: datetime) -> str:
    """An instant as the timeline labels it, ``2025-03-01 09:00 UTC`` (the year always four
    digits, as the browser's ``toISOString`` writes it)."""
    plain = at.astimezone(UTC).replace(tzinfo=None)
    return plain.isoformat(sep=" ", timespec="minutes") + " UTC"


_TEMPLATES.env.filters["lang"] = _lang
_TEMPLATES.env.filters["minute"] = _minute


@dataclass(frozen=True, slots=True)
class _Row:
    """A record as the timeline shows it at an instant."""

    record: Record
    state: str  # open, superseded, closed
    markers: tuple[str, ...]


def _state_at(record: Record, at: datetime) -> str:
    if record.superseded_at is not None and record.superseded_at <= at:
        return "superseded" if record.status is Status.SUPERSEDED else "closed"
    return "open"


def _rows(memory: Memory, records: list[Record], at: datetime) -> list[_Row]:
    life = memory.preset.lifecycle
    if not records:
        return []
    decays = np.array([r.kind in life.decay_kinds for r in records])
    accessed = np.array([to_micros(min(r.last_accessed_at, at)) for r in records], np.int64)
    verified = np.array(
        [to_micros(r.last_verified_at) if r.last_verified_at else -(2**62) for r in records],
        np.int64,
    )
    factor = decay_factor(accessed, verified, to_micros(at), decays, life)
    out = []
    for record, decay in zip(records, factor.tolist(), strict=True):
        state = _state_at(record, at)
        markers = [state] if state != "open" else []
        if decay < 0.999:
            markers.append(f"decayed ×{decay:.2f}")
        if record.feedback_score < 0:
            markers.append(f"pushed down ({record.feedback_score:g})")
        out.append(_Row(record, state, tuple(markers)))
    return out


def _instant(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return parse_instant(value if "+" in value[10:] or value.endswith("Z") else value + "Z",
                             "as_of")  # fmt: skip
    except ChronomemError:
        return None


def _span(memory: Memory, now: datetime, requested: datetime | None) -> tuple[datetime, datetime]:
    """The instants the timeline's as-of control runs between: the space's first recording to
    its last (every agent's, so the control stays put when the agent changes), widened by a
    fiftieth of that span either side — an hour when the span is nil or the space is empty
    (then around ``now``) — so the first record is seen to appear and the ends differ; and
    widened to an instant the address asks for. Whole minutes, the control's step."""
    newest = memory.records(include_history=True, limit=1)
    if newest:
        counts = memory.stats()["agents"]
        total = sum(n for kinds in counts.values() for kind, n in kinds.items() if kind != "core")
        oldest = memory.records(include_history=True, limit=1, offset=max(total - 1, 0))
        first, last = (oldest or newest)[0].recorded_at, newest[0].recorded_at
    else:
        first = last = now
    pad = (last - first) / 50 if last > first else _PAD
    first, last = first - max(pad, _MINUTE), last + max(pad, _MINUTE)
    if requested is not None:
        first, last = min(first, requested), max(last, requested)
    return _to_minute(first, up=False), _to_minute(last, up=True)


def _to_minute(at: datetime, *, up: bool) -> datetime:
    whole = at.replace(second=0, microsecond=0)
    return whole + _MINUTE if up and whole < at else whole


def _seconds(at: datetime) -> int:
    return math.floor(at.timestamp())


def mount_ui(app: FastAPI, spaces: Spaces, gate: Gate) -> None:
    """Add the pages to ``app`` (the assets are served from ``/static``)."""

    def caller(request: Request, space: str | None, needed: Scope = Scope.READ) -> Caller:
        return gate.caller(request.cookies.get(COOKIE), space, needed)

    def page(request: Request, name: str, space: str | None, **context: Any) -> HTMLResponse:
        return _TEMPLATES.TemplateResponse(
            request, name, {"space": space, "presets": sorted(PRESETS), **context},
            status_code=context.get("status", 200),
        )  # fmt: skip

    @app.exception_handler(Denied)
    async def denied(request: Request, exc: Denied) -> Response:
        if request.url.path.startswith("/ui"):
            if exc.status == 401:
                target = quote(
                    request.url.path + (f"?{request.url.query}" if request.url.query else "")
                )
                return RedirectResponse(f"/ui/login?next={target}", status_code=303)
            return page(request, "error.html", None, status=exc.status, message=exc.detail)
        document = problems.problem(exc.status, exc.error, exc.detail)
        return JSONResponse(document, status_code=exc.status, media_type=problems.MEDIA_TYPE)

    @app.get("/ui", include_in_schema=False)
    def home(request: Request) -> Response:
        who = caller(request, None)
        if who.key is not None and who.key.space is not None:
            return RedirectResponse(f"/ui/spaces/{quote(who.key.space)}", status_code=303)
        return page(request, "spaces.html", None, spaces=spaces.admin.spaces())

    @app.get("/ui/login", include_in_schema=False)
    def login_form(request: Request, next: str = "/ui", error: str | None = None) -> HTMLResponse:
        return page(request, "login.html", None, next=next, error=error)

    @app.post("/ui/login", include_in_schema=False)
    def login(key: Annotated[str, Form()], next: Annotated[str, Form()] = "/ui") -> Response:
        try:
            gate.caller(key.strip(), None, Scope.READ)
        except Denied:
            return RedirectResponse(
                f"/ui/login?error=unknown+or+revoked+key&next={quote(next)}", status_code=303
            )
        target = next if next.startswith("/ui") else "/ui"
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(COOKIE, key.strip(), httponly=True, samesite="strict", path="/ui")
        return response

    @app.post("/ui/logout", include_in_schema=False)
    def logout() -> Response:
        response = RedirectResponse("/ui/login", status_code=303)
        response.delete_cookie(COOKIE, path="/ui")
        return response

    def timeline_context(
        space: str, agent: str | None, as_of: str | None, history: bool
    ) -> dict[str, Any]:
        memory = spaces.memory(space)
        agents = memory.agents()
        chosen = agent if agent in agents else (agents[0] if agents else None)
        requested = _instant(as_of)
        at = requested or memory.clock.now()
        rows: list[_Row] = []
        if chosen is not None:
            seen = memory.records(agent=chosen, include_history=True, as_of=at, limit=_SHOWN)
            rows = _rows(memory, seen, at)
        shown = [r for r in rows if history or r.state == "open"]
        return {
            "agents": agents, "agent": chosen, "at": at, "is_now": requested is None,
            "rows": shown, "hidden": len(rows) - len(shown), "history": history,
            "limited": len(rows) == _SHOWN,
        }  # fmt: skip

    def timeline(
        request: Request, space: str, agent: str | None = None, as_of: str | None = None,
        history: bool = False,
    ) -> HTMLResponse:  # fmt: skip
        """The page at ``/ui/spaces/{space}``, and its list alone at ``…/timeline`` (what the
        as-of control fetches)."""
        caller(request, space)
        fragment = request.scope["route"].path.endswith("/timeline")  # not a space's name
        context = timeline_context(space, agent, as_of, history)
        if fragment:
            return page(request, "timeline_items.html", space, **context)
        at = context["at"]
        first, last = _span(spaces.memory(space), at, None if context["is_now"] else at)
        return page(
            request, "timeline.html", space, first=first, last=last, at_s=_seconds(at),
            first_s=_seconds(first), last_s=_seconds(last),
            last_change=spaces.admin.feed_head(space), **context,
        )  # fmt: skip

    for path in ("/ui/spaces/{space}", "/ui/spaces/{space}/timeline"):
        app.add_api_route(path, timeline, methods=["GET"], include_in_schema=False)

    @app.get("/ui/spaces/{space}/changes", include_in_schema=False)
    async def changes(request: Request, space: str, after: feed.After = 0) -> StreamingResponse:
        """The space's change feed for the pages (the session's key; ``EventSource`` sends
        no header): the timeline redraws from it instead of reloading."""
        await run_in_threadpool(caller, request, space)
        start = feed.resume_from(request, after)
        return feed.stream(spaces, space, start, request, lambda: caller(request, space))

    @app.get("/ui/spaces/{space}/records/{record_id}", include_in_schema=False)
    def record_page(request: Request, space: str, record_id: str) -> HTMLResponse:
        caller(request, space)
        memory = spaces.memory(space)
        try:
            record = memory.get(record_id)
        except ChronomemError as exc:
            return page(request, "error.html", space, status=404, message=str(exc))
        cited = memory.get_many(record.evidence)
        citing = memory.get_many(
            [d.record_id for d in memory.dependants(record.id) if d.relation == _CITES]
        )
        chain = memory.history(record.id)
        # The chain's lifecycle is one story: a supersession is logged on the version it closed.
        audit = sorted((e for r in chain for e in memory.audit(r.id)), key=lambda e: e.at)
        return page(
            request, "record.html", space, record=record, fields=record.to_dict(),
            chain=chain, audit=audit, cited=cited, citing=citing,
            accesses=memory.accesses(record.id, limit=50),
            ratings=[e for e in audit if e.action == "feedback" and e.record_id == record.id],
        )  # fmt: skip

    @app.get("/ui/spaces/{space}/explore", include_in_schema=False)
    def explore(
        request: Request, space: str, q: str = "", as_of: str | None = None,
        preset: str = "default", agent: str = "", touch: bool = False, k: int = 10,
    ) -> HTMLResponse:  # fmt: skip
        who = caller(request, space, Scope.WRITE if touch else Scope.READ)
        memory = spaces.memory(space)
        hits, error = [], None
        if q.strip():
            try:
                options = ReadOptions.from_arguments({
                    "agent": agent or None, "as_of": _instant(as_of), "k": max(1, min(k, 50)),
                    "explain": True, "preset": preset if preset in PRESETS else None,
                    "touch": touch, "actor": who.actor,
                })  # fmt: skip
                hits = memory.recall(q, options=options)
            except ChronomemError as exc:
                error = str(exc)
        top = max((h.score for h in hits), default=1.0) or 1.0
        drawn = {name for h in hits if h.breakdown for name in h.breakdown.contributions()}
        legend = [(name, meaning) for name, meaning in _PARTS.items() if name in drawn]
        legend += [(name, "") for name in sorted(drawn - _PARTS.keys())]
        return page(
            request, "explore.html", space, q=q, as_of=as_of or "", preset=preset, agent=agent,
            touch=touch, k=k, hits=hits, top=top, error=error, agents=memory.agents(),
            legend=legend,
        )  # fmt: skip

    @app.get("/ui/spaces/{space}/causal", include_in_schema=False)
    def causal(request: Request, space: str, crisis: str | None = None) -> HTMLResponse:
        who = caller(request, space)
        memory = spaces.memory(space)
        events = memory.events(limit=_GRAPH_EVENTS)
        links = memory.links()
        chosen = next((e for e in events if e.id == crisis), None)
        ancestors = memory.ancestors(chosen.id) if chosen else []
        block = memory.context(crisis=chosen.id, touch=False) if chosen else None
        witnesses: dict[str, list[Record]] = {}
        if chosen is not None:  # the memories a crisis read lifts, by the cause they are tied to
            options = ReadOptions.from_arguments(
                {"crisis": chosen.id, "k": 50, "explain": True, "actor": who.actor}
            )
            for hit in memory.peek(chosen.text, options=options):
                part = hit.breakdown.causal if hit.breakdown else None
                if part is not None and part.event_id and part.boost > 0:
                    witnesses.setdefault(part.event_id, []).append(hit.record)
        graph = {
            "nodes": [
                {"data": {"id": e.id, "label": clip(e.text, 40), "kind": e.kind.value}}
                for e in events
            ],
            "edges": [
                {
                    "data": {
                        "id": f"{x.cause}>{x.effect}",
                        "source": x.cause,
                        "target": x.effect,
                        "weight": round(x.weight, 2),
                    }
                }
                for x in links
            ],
            "crisis": None if chosen is None else chosen.id,
            "ancestors": {a.event.id: round(a.strength, 3) for a in ancestors},
        }
        return page(
            request, "causal.html", space, events=events, crisis=chosen, ancestors=ancestors,
            witnesses=witnesses, block=block, graph=json.dumps(graph),
        )  # fmt: skip

    @app.get("/ui/spaces/{space}/review", include_in_schema=False)
    def review_page(request: Request, space: str, note: str | None = None) -> HTMLResponse:
        who = caller(request, space)
        memory = spaces.memory(space)
        # Reviewing queues proposals, so it takes a write key (as GET /review); a read key sees
        # the queue as it was last reviewed.
        curator = who.scope.allows(Scope.WRITE)
        proposals = memory.review() if curator else memory.proposals("open")
        records = {
            r.id: r for r in memory.get_many(sorted({i for p in proposals for i in p.record_ids}))
        }
        return page(
            request, "review.html", space, proposals=proposals, records=records, note=note,
            curator=curator,
        )  # fmt: skip

    @app.post("/ui/spaces/{space}/review/{proposal_id}/{decision}", include_in_schema=False)
    def decide(
        request: Request, space: str, proposal_id: str, decision: str,
        reason: Annotated[str, Form()] = "",
    ) -> Response:  # fmt: skip
        who = caller(request, space, Scope.WRITE)
        memory = spaces.memory(space)
        try:
            if decision == "approve":
                memory.approve(proposal_id, actor=who.actor)
                note = "approved"
            else:
                memory.reject(
                    proposal_id, reason or "rejected in the review queue", actor=who.actor
                )
                note = "rejected"
        except ChronomemError as exc:
            note = f"not applied: {exc}"
        return RedirectResponse(
            f"/ui/spaces/{quote(space)}/review?note={quote(note)}", status_code=303
        )


def _get(memory: Memory, record_id: str) -> Record | None:
    try:
        return memory.get(record_id)
    except ChronomemError:
        return None
