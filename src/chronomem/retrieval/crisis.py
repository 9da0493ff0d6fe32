"""Reading the causal graph for a read: what the links known at an instant reach, and the
causal events a crisis read fuses (DESIGN §4)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import numpy as np

from chronomem.analysis.scripts import language_of, reads
from chronomem.arrays import F32, F64, I64, Rows
from chronomem.clock import to_micros
from chronomem.config import CausalConfig
from chronomem.graph.ancestry import Reach, traverse
from chronomem.graph.boost import (
    Boost,
    causal_boost,
    effective,
    event_matrix,
    fallbacks,
    raise_by,
    raise_to,
    strongest,
    witness_boost,
)
from chronomem.graph.causal_events import causal_events
from chronomem.model.event import Event, Link
from chronomem.retrieval.columns import GATHER_COST, Columns
from chronomem.retrieval.index import AgentArrays
from chronomem.retrieval.languages import unread_rows
from chronomem.retrieval.query import Crisis
from chronomem.scoring.score import Scores, fallback_gate, fuse
from chronomem.stores.base import NEVER, SINCE_EVER, MemoryStore

__all__ = ["boost_rows", "build_crisis", "fuse_boost", "graph_at"]


def graph_at(
    store: MemoryStore,
    space: str,
    event_id: str,
    as_of: datetime,
    max_depth: int,
    *,
    upstream: bool = True,
) -> tuple[list[Link], dict[str, Reach], dict[str, Event]]:
    """The links known at ``as_of``, what they reach from ``event_id`` within ``max_depth``, and
    those events (recorded by ``as_of``)."""
    links, reach, events, _ = _graph_at(store, space, event_id, as_of, max_depth, upstream)
    return links, reach, events


def _graph_at(
    store: MemoryStore, space: str, event_id: str, as_of: datetime, max_depth: int,
    upstream: bool = True,
) -> tuple[list[Link], dict[str, Reach], dict[str, Event], Known]:  # fmt: skip
    """:func:`graph_at`, and what it saw of the instants at which links and events became
    known (every link's, and the reached events')."""
    known = Known(to_micros(as_of))
    links = [x for x in store.links(space) if known.by(x.created_at)]
    reach = traverse(
        [(x.cause, x.effect, x.weight) for x in links], event_id, max_depth, upstream=upstream
    )
    events = {e.id: e for e in store.get_events(space, sorted(reach)) if known.by(e.recorded_at)}
    return links, reach, events, known


class Known:
    """Whether links and events became known by an instant (µs), and the instants around it at
    which what is known changes: ``[since, until)``, where the same ones are known."""

    __slots__ = ("at", "since", "until")

    def __init__(self, at: int) -> None:
        self.at, self.since, self.until = at, SINCE_EVER, NEVER

    def by(self, instant: datetime) -> bool:
        us = to_micros(instant)
        if us <= self.at:
            self.since = max(self.since, us)
            return True
        self.until = min(self.until, us)
        return False


def build_crisis(
    store: MemoryStore,
    space: str,
    event: Event,
    as_of: datetime,
    causal: CausalConfig,
    model_id: str | None,
    languages: frozenset[str] | None = None,
    calibrated: float | None = None,
) -> Crisis:
    """The causal events of a crisis read at ``as_of``: the crisis's ancestors and the
    scope-fallback events, with the association threshold of the store's embedder (its
    ``calibrated`` one when the config has none for it). Where the
    embedder does not read an event's language (``languages``: what it reads; ``None``: every
    language), the event associates only with the records that witnessed it."""
    _, reach, events, known = _graph_at(store, space, event.id, as_of, causal.max_depth)
    scope_events: list[Event] = []
    if event.scope is not None and causal.fallback_window is not None:
        scope_events = [
            e
            for e in store.events_between(
                space,
                after_us=to_micros(event.occurred_at - causal.fallback_window),
                before_us=to_micros(event.occurred_at),
                scope=event.scope,
            )
            if known.by(e.recorded_at)
        ]
    wanted = [*events, *(e.id for e in scope_events)]
    vectors = store.event_embeddings(space, wanted)
    if languages is not None:
        texts = {e.id: e.text for e in (*events.values(), *scope_events)}
        vectors = {i: v for i, v in vectors.items() if reads(languages, language_of(texts[i]))}
    found = causal_events(
        crisis=event,
        reach=reach,
        events=events,
        vectors=vectors,
        scope_events=scope_events,
        config=causal,
    )
    return Crisis(
        event=event,
        events=tuple(found),
        matrix=event_matrix(found) if found else None,
        threshold=causal.association_threshold(model_id, calibrated),
        full=causal.full_association(model_id, calibrated),
        languages=languages,
        instants=(known.since, known.until),
    )


def boost_rows(
    cols: Columns,
    crisis: Crisis,
    rows: Rows | None = None,
    witness: tuple[F64, I64] | None = None,
    keys: I64 | None = None,
    *,
    gate: F64 | None = None,
    fallback_rows: Rows | None = None,
) -> Boost:
    """The causal boost of every row of ``cols``: each row's witness boost, raised by the
    cosines of ``rows`` (every row when ``None``) with the crisis's true ancestors and those
    of ``fallback_rows`` (``rows`` when ``None``) with its scope-fallback events — two
    products, so hundreds of fallback events cost only the rows that need them. ``gate``: every
    row's fallback gate (:func:`~chronomem.scoring.score.fallback_gate`; ``None``: none). ``keys``:
    ``cols.derived("event_keys")``, when the caller has it already."""
    events, matrix = list(crisis.events), crisis.matrix
    keys = cols.derived("event_keys") if keys is None else keys
    boost = causal_boost(keys, events, witness=witness, gate=gate)
    if matrix is None:  # no event has a vector: witnesses alone
        return boost
    band = (crisis.threshold, crisis.full)
    fallback = fallbacks(events)
    blocks: list[tuple[Rows | None, Rows | None]]
    if fallback_rows is None or rows is None or not fallback.any():
        blocks = [(rows, None)]
    else:
        blocks = [(rows, np.flatnonzero(~fallback)), (fallback_rows, np.flatnonzero(fallback))]
    unread = unread_rows(cols, crisis.languages)
    for chosen, columns_ in blocks:
        if chosen is not None and chosen.size == 0:
            continue
        part = matrix if columns_ is None else np.ascontiguousarray(matrix[:, columns_])
        if not (fallback if columns_ is None else fallback[columns_]).any():
            kept = _ancestry(cols, crisis, chosen, part, band, columns_)
            if kept is not None:
                top, best = kept
                raise_to(boost, *((top, best) if chosen is None else (top[chosen], best[chosen])),
                         chosen)  # fmt: skip
                continue
        cosines = cols.products(chosen, part, band)
        if unread is not None:  # their cosines are noise: no association
            cosines[unread if chosen is None else unread[chosen]] = 0.0
        raise_by(boost, cosines, events, threshold=crisis.threshold, full=crisis.full,
                 rows=chosen, columns=columns_)  # fmt: skip
    return boost


#: Most rows whose strongest true ancestor a crisis keeps for the next read at its instant.
_KEPT = 1 << 21
#: Most sets of agents a crisis remembers having been read over once.
_ASKED = 64


def _ancestry(
    cols: Columns,
    crisis: Crisis,
    rows: Rows | None,
    part: F32,
    band: tuple[float, float],
    columns: Rows | None,
) -> tuple[F64, I64] | None:
    """Every row's strongest true ancestor (contribution, event) — the ancestors' block of
    :func:`boost_rows`, which no query, gate, instant or record's other column changes —
    kept on the crisis per agent while its rows' vectors hold, so the agents of a simulation
    asking about one crisis pay the product once, tick after tick, touching reads and all: a
    later read computes only the rows added since (its cosines are band-exact: the same
    whichever rows were computed). ``None`` when ``rows`` are fewer than the rows to compute
    (their gather costs less) on the first read of these rows, or the agents are too large to
    keep."""
    key = tuple((a.n, a.vectors) for a in cols.arrays)
    whole = crisis.ancestry.get(key)
    if whole is not None:
        return whole
    held = [_held(crisis, a) for a in cols.arrays]
    have = [0 if p is None else p[0].shape[0] for p in held]  # rows only grow while it holds
    missing = cols.size - sum(have)
    few = rows is not None and rows.shape[0] * GATHER_COST < missing
    agents = tuple(a.vectors for a in cols.arrays)  # whatever rows they gained since
    if cols.size > _KEPT or (few and agents not in crisis.asked):
        if len(crisis.asked) >= _ASKED:
            crisis.asked.clear()
        crisis.asked.add(agents)  # a second read of these agents keeps them
        return None
    grown = [k for k, (a, h) in enumerate(zip(cols.arrays, have, strict=True)) if a.n > h]
    if grown:  # (none: every agent's were kept, by reads of other sets of agents)
        _extend(cols, crisis, held, have, grown, part, band, columns)
    if cols.size + sum(p[0].shape[0] for _, p in crisis.parts.values()) > _KEPT:
        crisis.parts.clear()  # keep only what these agents hold
    for a, p in zip(cols.arrays, held, strict=True):
        if p is not None:
            crisis.parts[a.agent] = (a.vectors, p)  # an older version's goes
    tops = [p[0] for p in held if p is not None]
    bests = [p[1] for p in held if p is not None]
    if len(tops) == 1:
        whole = (tops[0], bests[0])
    else:  # several agents, or none with rows
        whole = (
            np.concatenate([np.zeros(0), *tops]),
            np.concatenate([np.zeros(0, np.int64), *bests]),
        )
    crisis.ancestry.clear()
    crisis.ancestry[key] = whole
    return whole


def _held(crisis: Crisis, a: AgentArrays) -> tuple[F64, I64] | None:
    """What ``crisis`` keeps of agent ``a``'s rows, while they hold for its vectors."""
    kept = crisis.parts.get(a.agent)
    return None if kept is None or kept[0] != a.vectors else kept[1]


def _extend(
    cols: Columns,
    crisis: Crisis,
    held: list[tuple[F64, I64] | None],
    have: list[int],
    grown: list[int],
    part: F32,
    band: tuple[float, float],
    columns: Rows | None,
) -> None:
    """:func:`_ancestry`'s rows of agents ``grown`` past the ``have`` rows ``held`` for them,
    computed and appended to ``held`` (in place)."""
    missing = cols.size - sum(have)
    starts = cols.offsets.tolist()
    need = None if missing == cols.size else np.concatenate(
        [np.arange(starts[k] + have[k], starts[k + 1]) for k in grown]
    )  # fmt: skip
    cosines = cols.products(need, part, band)
    unread = unread_rows(cols, crisis.languages)
    if unread is not None:  # their cosines are noise: no association
        cosines[unread if need is None else unread[need]] = 0.0
    top, best = strongest(cosines, list(crisis.events), threshold=crisis.threshold,
                          full=crisis.full, columns=columns)  # fmt: skip
    at = 0
    for k in grown:
        p, got = held[k], cols.arrays[k].n - have[k]
        part_of = (top[at : at + got], best[at : at + got])
        at += got
        if p is not None:
            part_of = (np.concatenate((p[0], part_of[0])), np.concatenate((p[1], part_of[1])))
        held[k] = part_of


def fuse_boost(
    scores: Scores, cols: Columns, crisis: Crisis, k: int
) -> tuple[Scores, Boost, float]:
    """The crisis read's final scores (DESIGN §2 step 6) from the episodic ones, exact for the
    top ``k`` and for every row scoring at least the returned floor.

    The record × event cosines — the read's largest product, one column per causal event — are
    computed only for rows that can reach the top ``k``: a row's boost lies between its witness
    boost and the strongest contribution an event could give it (a true ancestor's effective
    strength; a fallback event's, times the row's gate), so its final score lies between the
    fusions of the two; rows whose best case stays below the ``k``-th best worst case keep the
    witness boost (their final score is below the floor, and so is their exact one). The two
    kinds of event are bounded apart: the gate makes a fallback event's bound tight, so a scope
    with hundreds of background events costs the rows they could lift, not every row."""
    c, config = scores.candidates, scores.config
    events = list(crisis.events)
    keys = cols.derived("event_keys")  # 400 agents: one concatenation, not two
    gate = fallback_gate(scores.final, config)
    witness = witness_boost(keys, events, gate)
    rows: Rows | None = None
    fallback_rows: Rows | None = None
    floor = -np.inf
    if events and crisis.matrix is not None:
        fallback, strength = fallbacks(events), effective(events).astype(np.float64)
        top = float(strength[~fallback].max(initial=0.0))
        top_fallback = float(strength[fallback].max(initial=0.0))
        weak = top_fallback if gate is None else gate * top_fallback
        lows = fuse(scores.final, witness[0], config)
        ancestor = fuse(scores.final, top, config)
        scoped = fuse(scores.final, weak, config)
        # The slope has the episodic's sign under multiplicative fusion: a bound either way.
        low = np.minimum(lows, fuse(scores.final, np.maximum(top, weak), config))
        n = low.shape[0]
        floor = float(-np.partition(-low, k - 1)[k - 1]) if n > k else -np.inf  # see rank()
        if np.isfinite(floor):
            rows = np.flatnonzero(np.maximum(lows, ancestor) >= floor)
            fallback_rows = np.flatnonzero(np.maximum(lows, scoped) >= floor)
        else:  # fewer than k candidates: every one of them
            floor, rows = -np.inf, np.flatnonzero(scores.final > -np.inf)
            fallback_rows = rows
    boost = boost_rows(cols, crisis, rows, witness, keys, gate=gate, fallback_rows=fallback_rows)
    final = fuse(scores.final, boost.value, config)
    return replace(scores, final=final, candidates=replace(c, boost=boost.value)), boost, floor
