"""The causal graph and crisis reads (DESIGN §4): events, links, ancestry, auto-linking and
context blocks. Traversal and the boost are pure (``graph/``); the crisis inputs of a read are
``retrieval/crisis.py``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from chronomem.analysis.scripts import language_of, reads
from chronomem.arrays import unit_vector
from chronomem.checks import metadata_dict
from chronomem.clock import to_micros
from chronomem.context.block import (
    ContextBlock,
    Relevant,
    TokenCounter,
    build_block,
    chain_links,
    relevant,
)  # fmt: skip
from chronomem.embedders.base import as_vector, model_languages
from chronomem.engine import read
from chronomem.engine.handle import Handle
from chronomem.errors import (
    CausalCycleError,
    CausalLinkError,
    CauseAfterEffectError,
    ConfigError,
    InvalidInputError,
)
from chronomem.graph.ancestry import path_between
from chronomem.model.event import Ancestor, Event, EventKind, Link, Provenance
from chronomem.model.record import Hit
from chronomem.retrieval.crisis import graph_at
from chronomem.retrieval.options import ReadOptions

__all__ = ["add_event", "auto_link", "context", "link", "reach"]


def add_event(
    h: Handle,
    text: str,
    *,
    now: datetime,
    occurred_at: datetime | None,
    kind: EventKind,
    scope: str | None,
    metadata: Mapping[str, Any] | None,
    embedding: Sequence[float] | np.ndarray | None,
) -> Event:
    h.require_model()
    vector = None if embedding is None else as_vector(embedding, dim=h.meta.dim)
    if vector is None and h.embedder is not None:
        vector = h.embedder.embed([text])[0]
    if vector is not None:
        h.fix_dim(int(vector.shape[0]))
    event = Event(
        id=h.ids.new_id(now),
        space=h.space,
        text=text,
        kind=kind,
        scope=scope,
        occurred_at=occurred_at or now,
        recorded_at=now,
        metadata=metadata_dict(metadata),
        has_embedding=vector is not None,
    )
    h.store.insert_event(h.space, event, vector)
    return event


def link(
    h: Handle,
    cause: str,
    effect: str,
    *,
    now: datetime,
    weight: float,
    provenance: Provenance,
    similarity: float | None,
) -> Link:
    """Write ``cause -> effect``; an inferred link never replaces an explicit one (which is
    returned unchanged). Refuses a cause that occurred after its effect and a link that would
    close a cycle (:class:`CausalLinkError`), writing nothing."""
    if cause == effect:
        raise InvalidInputError(
            f"effect must differ from cause: an event cannot cause itself ({cause})",
            field="effect",
        )
    with h.writing(now):
        _check_link(h, h.event(cause), h.event(effect))
        existing = h.store.get_link(h.space, cause, effect)
        if (
            existing is not None
            and existing.provenance is Provenance.EXPLICIT
            and provenance is not Provenance.EXPLICIT
        ):
            return existing
        new = Link(
            cause=cause,
            effect=effect,
            weight=float(weight),
            provenance=provenance,
            created_at=now,
            similarity=similarity,
        )
        h.store.put_link(h.space, new)
    return new


def _check_link(h: Handle, cause: Event, effect: Event) -> None:
    if cause.occurred_at > effect.occurred_at:
        raise CauseAfterEffectError(
            f"{_named(cause)} occurred after its effect {_named(effect)}: a cause precedes "
            f"its effect (or is simultaneous)",
            cause=cause.id,
            effect=effect.id,
        )
    path = path_between(((x.cause, x.effect) for x in h.store.links(h.space)), effect.id, cause.id)
    if path is not None:
        chain = " -> ".join(path)
        raise CausalCycleError(
            f"linking {_named(cause)} -> {_named(effect)} would close a cycle: {chain} is "
            f"already linked",
            cause=cause.id,
            effect=effect.id,
            path=path,
        )


def _named(event: Event) -> str:
    return f"event {event.id} ({event.text!r}, {event.occurred_at.isoformat()})"


def reach(
    h: Handle, event_id: str, max_depth: int, *, as_of: datetime, upstream: bool
) -> list[Ancestor]:
    """Ancestors (``upstream``) or descendants of an event within ``max_depth``, nearest first."""
    h.event(event_id)
    _, found, events = graph_at(h.store, h.space, event_id, as_of, max_depth, upstream=upstream)
    out = [
        Ancestor(
            event=events[i],
            depth=r.depth,
            strength=r.strength,
            path=r.path() if upstream else tuple(reversed(r.path())),
        )
        for i, r in found.items()
        if i in events
    ]
    return sorted(out, key=lambda a: (a.depth, -a.strength, a.event.occurred_at, a.event.id))


def auto_link(
    h: Handle,
    event_id: str,
    *,
    now: datetime,
    window: timedelta,
    threshold: float | None,
    weight_scale: float,
) -> list[Link]:
    """Inferred links into ``event_id`` from similar earlier events (see
    :meth:`Memory.auto_link`); ``threshold`` defaults to the preset's for this embedder."""
    if threshold is None:
        threshold = h.preset.causal.association_threshold(h.meta.model, h.calibrated("association"))
    effect = h.event(event_id)
    earlier = [
        e
        for e in h.store.events_between(
            h.space,
            after_us=to_micros(effect.occurred_at - window),
            before_us=to_micros(effect.occurred_at),
        )
        if e.id != effect.id
    ]
    vectors = h.store.event_embeddings(h.space, [effect.id, *(e.id for e in earlier)])
    if effect.id not in vectors:
        raise ConfigError(
            f"auto_link needs event vectors; event {effect.id} has none (open the store with an "
            f"embedder, or pass embedding= to add_event)"
        )
    languages = model_languages(h.embedder)
    asked = language_of(effect.text)
    if not reads(languages, asked):
        raise ConfigError(
            f"auto_link infers links from the embedding model's cosines, and {h.meta.model} "
            f"does not read this event's language ({asked}); link its causes with link()"
        )
    target = unit_vector(vectors[effect.id])
    made = []
    for cause in earlier:
        vector = vectors.get(cause.id)
        if vector is None or not reads(languages, language_of(cause.text)):
            continue
        similarity = float(np.dot(unit_vector(vector), target))
        if similarity < threshold:
            continue
        try:
            written = link(
                h,
                cause.id,
                effect.id,
                now=now,
                weight=weight_scale * max(similarity, 0.0),
                provenance=Provenance.INFERRED,
                similarity=similarity,
            )
        except CausalLinkError:
            continue  # never proposes a link that closes a cycle
        if written.provenance is Provenance.INFERRED:
            made.append(written)
    return made


def context(
    h: Handle,
    query: str | None,
    options: ReadOptions,
    *,
    now: datetime,
    budget_tokens: int | None,
    count_tokens: TokenCounter,
    min_relevance: float | None,
) -> ContextBlock:
    """The prompt-ready block of a read (see :meth:`Memory.context`): the hits explained, so
    the relevance cut (``context/block.relevant``) sees each one's relevance and causal part;
    the hits left out are not touched."""
    at = now if options.as_of is None else options.as_of
    cuts: list[Relevant] = []

    def keep(hits: list[Hit]) -> list[Hit]:
        cuts.append(relevant(hits, min_relevance))
        return cuts[-1].kept

    explained = replace(options, explain=True)
    hits = read.recall_many(h, [query or ""], None, explained, now=now, keep=keep)[0]
    event = None if options.crisis is None else h.event(options.crisis)
    chain = []
    if event is not None:
        depth = read.config_of(h, options).causal.max_depth
        links, found, events = graph_at(h.store, h.space, event.id, at, depth)
        depth_of = {i: r.depth for i, r in found.items() if i in events}
        chain = chain_links(event, links, depth_of, events)
    question = query if query and query.strip() else (event.text if event else "")
    return build_block(
        question=question,
        as_of=at,
        hits=hits,
        crisis=event,
        chain=chain,
        budget_tokens=budget_tokens,
        count_tokens=count_tokens,
        cut=cuts[0],
    )
