"""Reads (DESIGN §2): a batch of queries scored on one snapshot (or one after another), touching
or read-only. The scoring itself is ``retrieval/recall.py``; this module resolves the options,
embeds the queries in one call, builds each :class:`~chronomem.retrieval.recall.Query` and
touches what was returned."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from chronomem.arrays import F32, unit_vector
from chronomem.checks import MAX_QUERY_CHARS, check_text, shown
from chronomem.clock import to_micros
from chronomem.config import RelevanceMode, ScoringConfig, resolve_preset
from chronomem.embedders.base import Embedder, as_vector, is_thread_safe, model_languages
from chronomem.engine.handle import Handle
from chronomem.errors import InvalidInputError
from chronomem.lifecycle.rules import settled
from chronomem.model.event import Event
from chronomem.model.record import Hit, Kind, Record
from chronomem.model.review import Access
from chronomem.retrieval.crisis import build_crisis
from chronomem.retrieval.options import ReadOptions
from chronomem.retrieval.query import Crisis, Query
from chronomem.retrieval.recall import search
from chronomem.stores.base import Touch
from chronomem.telemetry.tracing import stage

__all__ = [
    "ACCESS_LOG",
    "QueryVectors",
    "check_queries",
    "config_of",
    "embed_ahead",
    "log_accesses",
    "recall_many",
    "refreshed",
]

#: The space setting that turns the access log on (``"on"``).
ACCESS_LOG = "access_log"


def config_of(h: Handle, options: ReadOptions) -> ScoringConfig:
    """The preset a read uses: its own, else the handle's."""
    return h.preset if options.preset is None else resolve_preset(options.preset)


def check_queries(
    queries: object, embeddings: object, crisis: bool
) -> tuple[list[str], list[Any] | None]:
    """The queries and their optional vectors as lists: each query a non-empty string unless it
    comes with a vector or a crisis."""
    if isinstance(queries, str | bytes) or not isinstance(queries, Iterable):
        raise InvalidInputError("queries must be a list of strings", field="queries")
    texts = list(queries)
    vectors = None
    if embeddings is not None:
        if isinstance(embeddings, str | bytes) or not isinstance(embeddings, Iterable):
            raise InvalidInputError(
                "query_embeddings must be a list of vectors", field="query_embeddings"
            )
        vectors = list(embeddings)
        if len(vectors) != len(texts):
            raise InvalidInputError(
                f"query_embeddings must have one vector per query ({len(texts)}); got "
                f"{len(vectors)}",
                field="query_embeddings",
            )
    for i, text in enumerate(texts):
        if not isinstance(text, str) or (
            not text.strip() and not crisis and (vectors is None or vectors[i] is None)
        ):
            raise InvalidInputError(
                "query must be a non-empty string (or come with query_embedding or crisis)",
                field="query",
            )
        check_text(text, "query")
        if len(text) > MAX_QUERY_CHARS:
            raise InvalidInputError(
                f"query has {len(text):,} characters; at most {MAX_QUERY_CHARS:,} are accepted: "
                f"{shown(text)}",
                field="query",
            )
    return texts, vectors


@dataclass(frozen=True, slots=True)
class QueryVectors:
    """Query vectors made before the handle's lock (:func:`embed_ahead`), and the embedder that
    made them: under the lock they serve only if the handle still embeds with it (this
    handle's ``reembed`` may have adopted another model meanwhile)."""

    vectors: list[F32 | None]
    embedder: Embedder


def embed_ahead(
    h: Handle, queries: list[str], embeddings: Sequence[Any] | None, options: ReadOptions
) -> QueryVectors | None:
    """Before the handle's lock: the query vectors :func:`recall_many` would make, when the
    embedder may be called from several threads at once (a model run then holds up no other
    call). ``None`` (embed under the lock) with the caller's vectors, with a crisis (it may
    replace an empty query by its text) or an embedder that is not thread-safe."""
    embedder = h.embedder
    if (
        embedder is None
        or embeddings is not None
        or options.crisis is not None
        or not is_thread_safe(embedder)
    ):
        return None
    return QueryVectors(_query_vectors(h, embedder, queries, None, config_of(h, options)), embedder)


def recall_many(
    h: Handle,
    queries: Sequence[str],
    embeddings: Sequence[Any] | None,
    options: ReadOptions,
    *,
    now: datetime,
    ready: QueryVectors | None = None,
    keep: Callable[[list[Hit]], list[Hit]] | None = None,
    deferred: list[Touch] | None = None,
) -> list[list[Hit]]:
    """One list of hits per query (see :meth:`Memory.recall_many`); ``ready``: the queries'
    vectors from :func:`embed_ahead`; ``keep``: the hits of each query the caller keeps (only
    they are touched, logged and returned); ``deferred``: where the read's last touch goes
    instead of the store, for the caller to write after the handle's lock
    (:class:`~chronomem.engine.touches.TouchWriter`)."""
    config = config_of(h, options)
    h.sync_model()
    if ready is not None and (h.switched_to is not None or ready.embedder is not h.embedder):
        ready = None  # made by a model the store (or this handle) no longer embeds with
    at = now if options.as_of is None else options.as_of
    if options.touch and at > now:
        # A touch stamps last_accessed_at = as_of: in the future it would pin the record's
        # recency at its best until then (docs/scoring.md, step 8).
        raise InvalidInputError(
            f"a touching read at as_of={at.isoformat()} is after the clock's now "
            f"({now.isoformat()}) and would stamp last_accessed_at in the future; read without "
            f"touching (peek; the CLI's --no-touch), or advance the clock",
            field="as_of",
        )
    crisis = None
    texts = list(queries)
    if options.crisis is not None:
        event = h.event(options.crisis)
        crisis = _crisis(h, event, at, config)
        texts = [t if t.strip() else event.text for t in texts]
    agents = tuple(h.store.agents(h.space)) if options.agents is None else tuple(options.agents)
    vectors = (
        _query_vectors(h, h.embedder, texts, embeddings, config) if ready is None else ready.vectors
    )
    built = [
        Query(
            text=text,
            vector=None if vector is None else unit_vector(vector),
            raw_vector=vector,
            agents=agents,
            k=config.default_k if options.k is None else options.k,
            as_of=at,
            config=config,
            kinds=None if options.kinds is None else frozenset(map(Kind, options.kinds)),
            include_history=options.include_history,
            valid_at=options.valid_at,
            explain=options.explain,
            crisis=crisis,
            asker=options.asker,
            dedup=options.dedup,
            by_similarity=options.rank_by == "similarity",
            languages=model_languages(h.embedder) if vector is not None else None,
            switched_to=h.switched_to,
            filter=options.parsed_filter,
        )
        for text, vector in zip(texts, vectors, strict=True)
    ]
    sequential = config.sequential_touch if options.sequential is None else options.sequential
    backwards = config.touch_backwards
    results: list[list[Hit]] = []
    pending: dict[str, None] = {}
    for n, q in enumerate(built):
        hits = search(h.index, h.store, h.space, q)
        if keep is not None:
            hits = keep(hits)
        results.append(hits)
        if options.touch:
            ids = [i for hit in hits for i in hit.record_ids]
            if sequential and n < len(built) - 1:  # the next query sees this one's touch
                with stage("read.touch", space=h.space, records=len(ids)):
                    h.store.touch(h.space, [Touch(tuple(ids), to_micros(at), backwards)])
            else:
                pending.update(dict.fromkeys(ids))
    if options.touch and pending:
        touch = Touch(tuple(pending), to_micros(at), backwards)
        if deferred is not None:
            deferred.append(touch)
        else:
            with stage("read.touch", space=h.space, records=len(pending)):
                h.store.touch(h.space, [touch])
    log_accesses(h, built, results, options, now=now)
    return _as_they_stand(h, results, refresh=options.refresh_ttl, now=now)


def _crisis(h: Handle, event: Event, at: datetime, config: ScoringConfig) -> Crisis:
    """The causal inputs of a crisis read at ``at``: built from the graph, or those of an
    earlier read of this crisis when the graph has not changed since (``graph_seq``; records
    may have) and knew the same links and events at ``at`` (``Crisis.instants``): a
    simulation's agents asking at each tick, touching reads. One ``graph_seq`` query instead
    of the graph's reads."""
    model, languages = h.meta.model, model_languages(h.embedder)
    calibrated = h.calibrated("association")
    key = (event.id, h.store.graph_seq(h.space), model, calibrated)
    us = to_micros(at)
    for held, causal, crisis in h.crises:
        since, until = crisis.instants
        if (
            held == key and since <= us < until and causal == config.causal
            and crisis.languages == languages
        ):  # fmt: skip
            return crisis
    crisis = build_crisis(
        h.store, h.space, event, at, config.causal, model, languages, calibrated
    )  # fmt: skip
    h.crises.append((key, config.causal, crisis))  # the oldest goes beyond CRISES_KEPT
    return crisis


def refreshed(h: Handle, records: Sequence[Record]) -> list[Record]:
    """``records`` after moving the expiry of those with a time to live (still open and
    unexpired now) to now plus their ``ttl``."""
    moved = h.store.refresh_expiry(h.space, [r.id for r in records], to_micros(h.now()))
    if not moved:
        return list(records)
    fresh = {r.id: r for r in h.records([r.id for r in records])}
    return [fresh.get(r.id, r) for r in records]


def _as_they_stand(
    h: Handle, results: list[list[Hit]], *, refresh: bool, now: datetime
) -> list[list[Hit]]:
    """The hits with their records as they stand after the read: expiries extended with
    ``refresh`` (every holder's record), and a record whose time to live ran out shown closed
    (a read with history)."""
    records = [hit.record for hits in results for hit in hits]
    holders = dict.fromkeys(i for hits in results for hit in hits for i in hit.record_ids)
    if refresh and h.store.refresh_expiry(h.space, list(holders), to_micros(now)):
        shown = {r.id: r for r in h.records([r.id for r in records])}
    elif any(r.expires_at is not None and r.expires_at <= now for r in records):
        shown = {r.id: r for r in settled(records, now)}
    else:
        return results
    return [[replace(hit, record=shown[hit.record.id]) for hit in hits] for hits in results]


def log_accesses(
    h: Handle, queries: Sequence[Query], results: Sequence[Sequence[Hit]], options: ReadOptions,
    *, now: datetime,
) -> None:  # fmt: skip
    """When the space's access log is on, one entry per returned record: who read it, when,
    evaluated at which instant, with which query (DESIGN §3)."""
    if h.store.space_setting(h.space, ACCESS_LOG) != "on":
        return
    verb = "recall" if options.touch else "peek"
    entries = [
        Access(seq=0, at=now, as_of=q.as_of, record_id=rid, actor=options.actor, verb=verb,
               query=q.text or None)
        for q, hits in zip(queries, results, strict=True)
        for hit in hits
        for rid in hit.record_ids
    ]  # fmt: skip
    h.store.log_access(h.space, entries)


def _query_vectors(
    h: Handle,
    embedder: Embedder | None,
    texts: list[str],
    given: Sequence[Any] | None,
    config: ScoringConfig,
) -> list[F32 | None]:
    """Query vectors, not yet normalised: the given ones, else ``embedder``'s (the handle's, as
    the caller read it) in one batch (``None`` when relevance is lexical or there is none)."""
    if given is not None:
        return [
            None if g is None else as_vector(g, dim=h.meta.dim, name="query_embedding")
            for g in given
        ]
    if embedder is None or h.switched_to is not None or config.relevance is RelevanceMode.LEXICAL:
        return [None] * len(texts)
    with stage("read.embed", space=h.space, queries=len(texts)):
        return list(embedder.embed(texts))
