"""A fixed scenario that exercises every kind of stored state, and a dump of everything a store
gives back for it — records with every field, audit, events, links, trigger sums and the results of
reads (rankings with explanations under several presets, lexical scores, ancestry, context).

``populate`` and ``reads`` use only the engine's verbs, so they run unchanged over the HTTP
clients (tests/server)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from chronomem import Memory, SimClock

from .conftest import T0, store_of, unit

QUERY = unit(1, 0.2, 0.1)


def populate(mem: Memory, clock: SimClock) -> None:
    """Records of two agents with every field set, touches, and lifecycle changes."""
    clock.set(T0 + timedelta(microseconds=123_457))
    base = mem.remember(
        "Maria agreed to decorate the cafe",
        agent="isabella",
        kind="observation",
        importance=6,
        occurred_at=T0 - timedelta(days=1, microseconds=3),
        domain="party",
        tags=("party", "maria"),
        metadata={"source": "chat", "turn": 7, "nested": {"ok": True}},
        embedding=unit(1, 0.1, 0.3),
    ).id
    for i in range(8):
        clock.advance(hours=1 + i * 3, microseconds=17 * i)
        mem.remember(
            f"note {i} about the cafe",
            agent="isabella",
            importance=1 + i,
            embedding=unit(1, i / 8, (i % 3) / 2),
        )
    mem.remember(
        "the cafe is where the neighbourhood gathers",
        agent="isabella",
        kind="reflection",
        importance=7,
        evidence=(base,),
        valid_from=T0,
        valid_until=T0 + timedelta(days=400),
        sensitivity="personal",
        embedding=unit(1, 0.5, 0.5),
    )
    # Access after creation, at irregular instants.
    for hours in (3, 11, 40):
        clock.advance(hours=hours, microseconds=999)
        mem.recall("q", agent="isabella", k=2, query_embedding=unit(1, hours / 40, 0))
    # Lifecycle state: a supersession, a closed record, a verification, ratings.
    fact = mem.remember(
        "the cafe opens at 8", agent="isabella", kind="fact",
        valid_until=T0 + timedelta(days=900), embedding=unit(0, 1, 0),
    ).id  # fmt: skip
    clock.advance(days=2)
    mem.supersede(fact, "the cafe opens at 7", reason="new hours", embedding=unit(0, 1, 0.2))
    doomed = mem.remember("the fridge is broken", agent="isabella", kind="fact",
                          embedding=unit(0, 0, 1)).id  # fmt: skip
    clock.advance(hours=1)
    mem.close_record(doomed, "repaired", actor="maria")
    mem.verify(base, actor="isabella")
    mem.feedback(base, "helpful", "useful for planning")
    mem.feedback(base, -0.25)
    clock.advance(hours=5)


def populate_graph(mem: Memory, clock: SimClock) -> str:
    """Events, weighted links, witnesses, another agent, a purge; returns the crisis id."""
    drought = mem.add_event("the spring drought", scope="valley", embedding=unit(0, 0.3, 1))
    clock.advance(days=3, microseconds=5)
    prices = mem.add_event("grain prices doubled at the market", embedding=unit(0.2, 0.3, 1))
    clock.advance(days=2)
    riot = mem.add_event(
        "a riot at the granary", kind="crisis", scope="valley", metadata={"district": 4},
        embedding=unit(0.5, 0.1, 1),
    )  # fmt: skip
    mem.link(drought.id, prices.id, 0.8)
    mem.link(prices.id, riot.id, 0.6)
    mem.link(drought.id, riot.id, 0.3, provenance="inferred", similarity=0.71)
    mem.remember("I saw the wells run dry", agent="tom", event_id=drought.id, importance=8,
                 embedding=unit(0.1, 0.2, 1))  # fmt: skip
    mem.remember("bread costs twice what it did", agent="tom", event_id=prices.id,
                 embedding=unit(0.3, 0.2, 1))  # fmt: skip
    secret = mem.remember("the granary key code is 4471", agent="tom", sensitivity="secret",
                          embedding=unit(0.4, 0.1, 1)).id  # fmt: skip
    clock.advance(hours=2)
    mem.forget(secret, "rotated")
    clock.advance(hours=1)
    return riot.id


def _list(vector: Any) -> list[float] | None:
    return None if vector is None else [float(x) for x in vector]


def dump(mem: Memory, crisis: str | None = None) -> dict[str, Any]:
    """Everything the store gives back, as plain data (read-only: nothing is touched)."""
    store, space = store_of(mem), mem.space
    now = mem.clock.now()
    with store.snapshot():
        records = [
            {**i.record.to_dict(), "embedding": _list(i.embedding)}
            for i in store.iter_records(space)
        ]
        events = [{**e.to_dict(), "embedding": _list(v)} for e, v in store.iter_events(space)]
    out: dict[str, Any] = {
        "records": records,
        "events": events,
        "links": [link.to_dict() for link in mem.links()],
        "audit": [
            (e.at, e.action, e.record_id, e.actor, e.reason, dict(e.detail)) for e in mem.audit()
        ],
        "agents": {a: mem.accumulated_importance(a) for a in mem.agents()},
        # ``last_change`` is the store's own feed: a copy's feed holds the copy being made
        "stats": {
            k: v
            for k, v in mem.stats().items()
            if k not in {"store", "bytes_on_disk", "schema_version", "candidates", "last_change"}
        },
    }
    out.update(reads(mem, now, crisis))
    return out


def reads(mem: Any, now: Any, crisis: str | None = None) -> dict[str, Any]:
    """The results of read-only reads at ``now``, through the verbs only."""
    out: dict[str, Any] = {}
    asked = [
        ("generative-agents", {}),
        ("generative-agents", {"as_of": now - timedelta(days=2, hours=3)}),
        ("generative-agents", {"include_history": True}),
        ("default", {}),
        ("current-facts", {"kinds": ["fact"], "include_history": True}),
    ]
    out["rankings"] = [
        [
            (h.record.id, h.score, None if h.breakdown is None else h.breakdown.to_dict())
            for h in mem.peek(
                "when does the cafe open", k=10, query_embedding=QUERY, explain=True,
                preset=preset, **kwargs,  # type: ignore[arg-type]
            )
        ]
        for preset, kwargs in asked
    ]  # fmt: skip
    out["lexical"] = [
        (h.record.id, h.score) for h in mem.peek("cafe notes about Maria", k=10, preset="default")
    ]
    listed = [r.id for r in mem.records(include_history=True, limit=1000)]
    out["get_many"] = [r.to_dict() for r in mem.get_many([*reversed(listed), "0" * 26])]
    out["dependants"] = {i: [d.to_dict() for d in mem.dependants(i)] for i in listed}
    out["not_due"] = mem.maybe_reflect(mem.agents()[0], as_of=now)
    if crisis is not None:
        out["ancestors"] = [a.to_dict() for a in mem.ancestors(crisis)]
        hits = mem.peek(
            "why the riot?", query_embedding=unit(0.4, 0.2, 1), crisis=crisis, explain=True,
            preset="tcmf",
        )  # fmt: skip
        out["crisis_read"] = [
            (h.record.id, h.score, h.breakdown.to_dict() if h.breakdown else None) for h in hits
        ]
        out["context"] = mem.context(
            "why the riot?", crisis=crisis, touch=False, preset="tcmf"
        ).text
    return out
