"""Reading the causal graph for a read: what the links known at an instant reach, and the
causal events a crisis read fuses (DESIGN §4)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import numpy as np

from chronomem.analysis.scripts import language_of, reads
from chronomem.arrays import F64, I64, Rows
from chronomem.clock import to_micros
from chronomem.config import CausalConfig, Fusion
from chronomem.graph.ancestry import Reach, traverse
from chronomem.graph.boost import Boost, causal_boost, effective, event_matrix, witness_boost
from chronomem.graph.causal_events import causal_events
from chronomem.model.event import Event, Link
from chronomem.retrieval.columns import Columns
from chronomem.retrieval.languages import unread_rows
from chronomem.retrieval.query import Crisis
from chronomem.scoring.score import Scores, fuse
from chronomem.stores.base import MemoryStore

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
    links = store.links(space, as_of_us=to_micros(as_of))
    reach = traverse(
        [(x.cause, x.effect, x.weight) for x in links], event_id, max_depth, upstream=upstream
    )
    events = {e.id: e for e in store.get_events(space, sorted(reach)) if e.recorded_at <= as_of}
    return links, reach, events


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
    _, reach, events = graph_at(store, space, event.id, as_of, causal.max_depth)
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
            if e.recorded_at <= as_of
        ]
    wanted = [*events, *(e.id for e in scope_events)]
    vectors = store.event_embeddings(space, wanted)
    if languages is not None:
        texts = {e.id: e.text for e in (*events.values(), *scope_events)}
        vectors = {i: v for i, v in vectors.items() if reads(languages, language_of(texts[i]))}
    return Crisis(
        event=event,
        events=tuple(
            causal_events(
                crisis=event,
                reach=reach,
                events=events,
                vectors=vectors,
                scope_events=scope_events,
                config=causal,
            )
        ),
        threshold=causal.association_threshold(model_id, calibrated),
        full=causal.full_association(model_id, calibrated),
        languages=languages,
    )


def boost_rows(
    cols: Columns,
    crisis: Crisis,
    rows: Rows | None = None,
    witness: tuple[F64, I64] | None = None,
    keys: I64 | None = None,
) -> Boost:
    """The causal boost of every row of ``cols``, computed from the cosines of ``rows`` (every
    row when ``None``) with the crisis's events; the other rows get their witness boost.
    ``keys``: ``cols.derived("event_keys")``, when the caller has it already."""
    events = list(crisis.events)
    matrix = event_matrix(events) if events else None
    cosines = None if matrix is None else cols.products(rows, matrix)
    unread = unread_rows(cols, crisis.languages)
    if cosines is not None and unread is not None:  # their cosines are noise: no association
        cosines[unread if rows is None else unread[rows]] = 0.0
    return causal_boost(
        cosines, cols.derived("event_keys") if keys is None else keys, events,
        threshold=crisis.threshold, full=crisis.full, rows=rows, witness=witness,
    )  # fmt: skip


def fuse_boost(
    scores: Scores, cols: Columns, crisis: Crisis, k: int
) -> tuple[Scores, Boost, float]:
    """The crisis read's final scores (DESIGN §2 step 6) from the episodic ones, exact for the
    top ``k`` and for every row scoring at least the returned floor.

    The record × event cosines — the read's largest product, one column per causal event — are
    computed only for rows that can reach the top ``k``: a row's boost lies between its witness
    boost and the strongest event's effective strength, so its final score lies between the
    two fusions; rows whose best case stays below the ``k``-th best worst case keep the witness
    boost (their final score is below the floor, and so is their exact one)."""
    c, config = scores.candidates, scores.config
    events = list(crisis.events)
    keys = cols.derived("event_keys")  # 400 agents: one concatenation, not two
    witness = witness_boost(keys, events)
    lower = witness[0]
    rows: Rows | None = None
    floor = -np.inf
    if events and event_matrix(events) is not None:
        top = float(effective(events).max())
        low, high = fuse(scores.final, lower, config), fuse(scores.final, top, config)
        if config.causal.fusion is not Fusion.ADDITIVE:  # the slope has the episodic's sign
            low, high = np.minimum(low, high), np.maximum(low, high)
        n = low.shape[0]
        floor = float(-np.partition(-low, k - 1)[k - 1]) if n > k else -np.inf  # see rank()
        if np.isfinite(floor):
            rows = np.flatnonzero(high >= floor)
        else:  # fewer than k candidates: every one of them
            floor, rows = -np.inf, np.flatnonzero(scores.final > -np.inf)
    boost = boost_rows(cols, crisis, rows, witness, keys)
    final = fuse(scores.final, boost.value, config)
    return replace(scores, final=final, candidates=replace(c, boost=boost.value)), boost, floor
