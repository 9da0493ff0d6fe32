"""One read, stage by stage (DESIGN §2): candidates, components, lifecycle factor, score, rank,
dedup, hits.

This module reads the store and the in-memory arrays but never writes; touching is the engine's
job, after the hits are known.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.clock import to_micros
from chronomem.config import Normalisation, RelevanceMode, ScoringConfig
from chronomem.graph.boost import Boost, CausalEvent, association, causal_boost, event_matrix
from chronomem.lifecycle.rules import decay_factor, feedback_factor
from chronomem.model.event import Event
from chronomem.model.record import Breakdown, CausalPart, Hit, Kind, Record
from chronomem.retrieval.index import KIND_CODES, AgentArrays, SpaceIndex
from chronomem.scoring.score import Candidates, Scores, rank, score
from chronomem.scoring.versions import adjust_versions
from chronomem.stores.base import MemoryStore
from chronomem.text import asks_when_something_happened, refers_to_self

__all__ = ["Columns", "Crisis", "Query", "columns", "recent", "search", "visible"]

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
# A cosine for a gathered row costs about as much as this many rows of the contiguous product
# (measured with numpy on 200k × 384: 10% of the rows gathered took 0.6 × the whole product).
# Pre-selection is worth it only while the gather costs under half the product: the index scan
# takes the other half.
_GATHER_COST = 6


def _gather_is_cheap(rows: int, namespace: int) -> bool:
    return rows * _GATHER_COST * 2 < namespace


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    """A validated read request.

    ``vector`` is the unit-normalised query embedding, or ``None`` (lexical relevance only).
    ``valid_at`` is the world-time instant for validity windows (default: ``as_of``).
    ``asker`` is who asks (a transcript speaker name): first-person queries refer to them.
    """

    text: str
    vector: F32 | None
    agents: tuple[str, ...]
    k: int
    as_of: datetime
    config: ScoringConfig
    kinds: frozenset[Kind] | None = None
    include_history: bool = False
    valid_at: datetime | None = None
    explain: bool = False
    crisis: Crisis | None = None
    asker: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Crisis:
    """A crisis read's causal inputs: the events that may lift records (ancestors, then scope
    fallbacks) and the association threshold of this store's embedder."""

    event: Event
    events: tuple[CausalEvent, ...]
    threshold: float


@dataclass(frozen=True, slots=True)
class Columns:
    """The loaded agents' columns side by side (views when there is one agent)."""

    arrays: list[AgentArrays]
    offsets: npt.NDArray[np.intp]

    def cat(self, name: str) -> npt.NDArray[Any]:
        parts = [getattr(a, name)[: a.n] for a in self.arrays]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def derived(self, method: str, *args: Any) -> npt.NDArray[Any]:
        parts = [getattr(a, method)(*args) for a in self.arrays]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    @property
    def size(self) -> int:
        return int(self.offsets[-1])

    def vectors(self, rows: npt.NDArray[np.intp], dim: int) -> F32:
        """The unit vectors of ``rows`` (zeros where a record has none)."""
        out = np.zeros((rows.shape[0], dim), dtype=np.float32)
        parts = np.searchsorted(self.offsets, rows, side="right") - 1
        for k, (row, part) in enumerate(zip(rows.tolist(), parts.tolist(), strict=True)):
            a = self.arrays[part]
            if a.emb is not None and a.dim == dim:
                out[k] = a.emb[row - int(self.offsets[part])]
        return out


def visible(
    cols: Columns,
    *,
    as_of_us: int,
    valid_at_us: int,
    include_history: bool,
    kinds: frozenset[Kind] | None,
    exclude_kinds: frozenset[Kind] = frozenset(),
    exclude_text: str | None = None,
) -> Mask | None:
    """DESIGN §2 step 1: recorded by ``as_of`` and, unless ``include_history``, inside the
    world-time window at ``valid_at`` as that window was known at ``as_of`` (closing a record
    ends its window; before the closing, the window it had applies).

    Returns ``None`` when every row is a candidate (found from per-agent bounds, without a pass
    over the rows).
    """
    filtered = kinds is not None or bool(exclude_kinds) or bool(exclude_text)
    if not filtered and all(
        b.max_recorded <= as_of_us
        and (include_history or (b.max_valid_from <= valid_at_us < b.min_valid_until))
        for b in (a.bounds() for a in cols.arrays)
    ):
        return None
    mask: Mask = cols.cat("recorded_at") <= as_of_us
    if not include_history:
        closed = cols.cat("superseded_at") <= as_of_us
        until = np.where(closed, cols.cat("valid_until"), cols.cat("valid_until_before"))
        mask &= until > valid_at_us
        mask &= cols.cat("valid_from") <= valid_at_us
    kind = cols.cat("kind")
    if kinds is not None:
        mask &= np.isin(kind, [KIND_CODES[k] for k in kinds])
    if exclude_kinds:
        mask &= ~np.isin(kind, [KIND_CODES[k] for k in exclude_kinds])
    if exclude_text:
        mask &= ~cols.derived("contains", exclude_text)
    return mask


def _visible(cols: Columns, q: Query) -> Mask | None:
    as_of_us = to_micros(q.as_of)
    return visible(
        cols,
        as_of_us=as_of_us,
        valid_at_us=as_of_us if q.valid_at is None else to_micros(q.valid_at),
        include_history=q.include_history,
        kinds=q.kinds,
        exclude_kinds=q.config.exclude_kinds,
        exclude_text=q.config.exclude_text,
    )


@dataclass(frozen=True, slots=True)
class _Lifecycle:
    decay: F64 | None
    feedback: F64 | None

    @property
    def factor(self) -> F64 | None:
        if self.decay is None:
            return self.feedback
        return self.decay if self.feedback is None else self.decay * self.feedback

    def at(self, row: int) -> dict[str, float]:
        out = {}
        if self.decay is not None and self.decay[row] != 1.0:
            out["decay"] = float(self.decay[row])
        if self.feedback is not None and self.feedback[row] != 1.0:
            out["feedback"] = float(self.feedback[row])
        return out


def _lifecycle(cols: Columns, q: Query) -> _Lifecycle:
    """DESIGN §2 step 5, skipped entirely when no row can have a factor other than 1."""
    life = q.config.lifecycle
    bounds = [a.bounds() for a in cols.arrays]
    decay = None
    if any(b.kinds & life.decay_kinds for b in bounds):
        decays = np.isin(cols.cat("kind"), [KIND_CODES[k] for k in life.decay_kinds])
        decay = decay_factor(
            cols.cat("last_accessed_at"),
            cols.cat("last_verified_at"),
            to_micros(q.as_of),
            decays,
            life,
        )
    feedback = None
    if life.feedback_strength != 0.0 and any(b.any_feedback for b in bounds):
        feedback = feedback_factor(cols.cat("feedback_score"), life)
    return _Lifecycle(decay, feedback)


def _preselect(
    store: MemoryStore,
    space: str,
    cols: Columns,
    q: Query,
    lexical: F64 | None,
    visible: Mask | None,
) -> Mask | None:
    """The rows whose cosine is computed when a store's vector index pre-selects (``None``: every
    row's is): the index's nearest records, plus every record matching a query term — so the
    hybrid score is exact for every lexical match, and only records matching no term and outside
    the nearest lose their dense relevance. Only for reads whose score is absolute (``fixed``
    normalisation), without a crisis, that use dense relevance: min-max ranges and causal
    association need every cosine. When most of the nearest are not candidates of this read
    (other kinds, superseded, later than ``as_of``), the visible records beyond them would all
    lose their cosine: then every row is scored too. The index holds record vectors only, so a
    read whose preset uses passages, over records that have them, is exact as well."""
    c = q.config
    if (
        q.vector is None
        or q.crisis is not None
        or c.normalisation is not Normalisation.FIXED
        or c.relevance is RelevanceMode.LEXICAL
        or (c.passages and any(a.pn for a in cols.arrays))
    ):
        return None
    matches = 0 if lexical is None else int(np.count_nonzero(lexical))
    if not _gather_is_cheap(matches, cols.size):
        return None  # the lexical matches' cosines alone cost about the whole product
    agents = [a.agent for a in cols.arrays]
    pks = store.nearest(space, agents, q.vector, namespace=cols.size, k=q.k)
    if pks is None:
        return None
    chosen = np.zeros(cols.size, dtype=np.bool_)
    for a, offset in zip(cols.arrays, cols.offsets[:-1], strict=True):
        if a.n == 0:
            continue
        keys = a.pk[: a.n]
        at = np.minimum(np.searchsorted(keys, pks), a.n - 1)
        found = keys[at] == pks
        chosen[offset + at[found]] = True
    nearest = int(np.count_nonzero(chosen if visible is None else chosen & visible))
    if nearest < max(q.k, pks.size // 2):
        return None
    if lexical is not None:
        chosen |= lexical > 0.0
    if not _gather_is_cheap(int(np.count_nonzero(chosen)), cols.size):
        return None
    return chosen


def _similarities(
    cols: Columns,
    vector: F32 | None,
    crisis: Crisis | None,
    chosen: Mask | None = None,
    *,
    passages: bool = False,
) -> tuple[F64 | None, list[F32 | None]]:
    """The query cosines (``None`` without a query vector) and, for a crisis read, each part's
    record × causal-event cosines — from one pass over each agent's vectors: ``E @ [q | M]``.
    With ``passages``, a record's query cosine is the best of its own and its passages'.

    With ``chosen`` (pre-selected rows, never with a crisis, nor with passages over records that
    have them: see :func:`_preselect`), only those rows' cosines are computed; the others are 0."""
    dense, event_parts = _record_similarities(cols, vector, crisis, chosen)
    if passages and dense is not None and vector is not None:
        for a, offset in zip(cols.arrays, cols.offsets[:-1].tolist(), strict=True):
            if a.dim == vector.shape[0]:
                a.raise_to_passages(dense[offset : offset + a.n], vector)
    return dense, event_parts


def _record_similarities(
    cols: Columns, vector: F32 | None, crisis: Crisis | None, chosen: Mask | None
) -> tuple[F64 | None, list[F32 | None]]:
    events = event_matrix(list(crisis.events)) if crisis is not None and crisis.events else None
    dense_parts: list[F64] = []
    event_parts: list[F32 | None] = []
    for a, offset in zip(cols.arrays, cols.offsets[:-1].tolist(), strict=True):
        emb = None if a.emb is None else a.emb[: a.n]
        q = vector if emb is not None and vector is not None and a.dim == vector.shape[0] else None
        m = events if emb is not None and events is not None and a.dim == events.shape[0] else None
        if emb is not None and q is not None and m is None and chosen is not None:
            dense = np.zeros(a.n, dtype=np.float64)
            local = np.flatnonzero(chosen[offset : offset + a.n])
            dense[local] = emb[local] @ q
            dense_parts.append(dense)
            event_parts.append(None)
            continue
        if emb is not None and q is not None and m is None:  # the common case: a GEMV
            dense_parts.append((emb @ q).astype(np.float64))
            event_parts.append(None)
            continue
        blocks = [x for x in (None if q is None else q[:, None], m) if x is not None]
        both = emb @ np.hstack(blocks) if emb is not None and blocks else None
        if both is not None and q is not None:
            dense_parts.append(both[:, 0].astype(np.float64))
            both = both[:, 1:]
        else:
            dense_parts.append(np.zeros(a.n, dtype=np.float64))
        event_parts.append(None if both is None or m is None else np.ascontiguousarray(both))
    if vector is None:
        return None, event_parts
    dense = dense_parts[0] if len(dense_parts) == 1 else np.concatenate(dense_parts)
    return dense, event_parts


def _speaker_match(cols: Columns, q: Query) -> F64 | None:
    """1.0 for the asker's own transcript lines when the query speaks in the first person ("what
    do I ..."), else 0; ``None`` when no row matches.

    Only the asker: a speaker *named* in a question is no such evidence — the other party talks
    about them too, and LoCoMo's adversarial questions name the wrong one (boosting named
    speakers cost 0.19 of their recall@10 for +0.005 elsewhere)."""
    if q.config.speaker_weight == 0.0 or q.asker is None or not refers_to_self(q.text):
        return None
    asker = q.asker.strip().casefold()
    parts = []
    for a in cols.arrays:
        code = a.speaker_names.get(asker, -2)  # -1 is "no speaker"
        parts.append((a.speakers()[0] == code).astype(np.float64))
    match = parts[0] if len(parts) == 1 else np.concatenate(parts)
    return match if match.any() else None


def _lexical(store: MemoryStore, space: str, cols: Columns, text: str) -> F64:
    out = np.zeros(cols.size, dtype=np.float64)
    matches = store.lexical(space, [a.agent for a in cols.arrays], text)
    if matches.pk.size == 0:
        return out
    for a, offset in zip(cols.arrays, cols.offsets[:-1], strict=True):
        if a.n == 0:
            continue
        keys = a.pk[: a.n]
        at = np.minimum(np.searchsorted(keys, matches.pk), a.n - 1)
        found = keys[at] == matches.pk
        out[offset + at[found]] = matches.score[found]
    return out


def _select(
    scores: Scores, cols: Columns, ids: npt.NDArray[np.str_], recorded_at: I64, k: int
) -> list[npt.NDArray[np.intp]]:
    """Ranked row groups: one group per hit. Multi-agent reads collapse equal texts (step 8)."""
    if len(cols.arrays) == 1:
        return [np.asarray([p]) for p in rank(scores.final, recorded_at, ids, k)]
    keys = cols.derived("text_keys")
    candidates = scores.final > -np.inf
    n_candidates = int(np.count_nonzero(candidates))
    window = k
    while True:
        ranked = rank(scores.final, recorded_at, ids, window)
        _, first = np.unique(keys[ranked], return_index=True)
        if first.size >= k or window >= n_candidates:
            break
        window = min(n_candidates, window * 2)
    groups = []
    for row in ranked[np.sort(first)][:k]:
        same = np.flatnonzero(candidates & (keys == keys[row]))
        others = same[same != row]
        groups.append(np.concatenate(([row], others[np.argsort(ids[others])])))
    return groups


def _boost(cols: Columns, crisis: Crisis, cosines: list[F32 | None] | None = None) -> Boost:
    if cosines is None:
        cosines = _similarities(cols, None, crisis)[1]
    return causal_boost(
        cosines, [a.event_keys() for a in cols.arrays], list(crisis.events),
        threshold=crisis.threshold,
    )  # fmt: skip


def _causal_part(cols: Columns, boost: Boost, crisis: Crisis, row: int, q: Query) -> CausalPart:
    causal = q.config.causal
    j = boost.event(row)
    if j < 0:
        return CausalPart(boost=0.0, fusion=causal.fusion.value, weight=causal.weight)
    event = crisis.events[j]
    part = int(np.searchsorted(cols.offsets, row, side="right")) - 1
    arrays, local = cols.arrays[part], row - int(cols.offsets[part])
    vector = None if arrays.emb is None else arrays.emb[local]
    value, via = association(vector, arrays.event_ids[local], event, threshold=crisis.threshold)
    return CausalPart(
        boost=float(boost.value[row]),
        fusion=causal.fusion.value,
        weight=causal.weight,
        event_id=event.event_id,
        association=value,
        via=None if via is None else via.value,
        depth=event.depth or None,
        path_strength=event.strength,
        effective_strength=event.effective,
        fallback=event.fallback,
        path=event.path,
    )


def _versions(
    scores: Scores, cols: Columns, ids: npt.NDArray[np.str_], recorded_at: I64, q: Query
) -> tuple[Scores, dict[int, dict[str, float]]]:
    """Version-aware ranking of the best candidates (needs vectors); returns the adjusted scores
    and, per adjusted row, the factors for explanations."""
    config = q.config.versions
    dims = {a.dim for a in cols.arrays if a.emb is not None and a.dim is not None}
    if config is None or q.vector is None or len(dims) != 1:
        return scores, {}
    rows = rank(scores.final, recorded_at, ids, config.window)
    if rows.size < 2:
        return scores, {}
    if asks_when_something_happened(q.text):
        config = replace(config, band=0.0)  # the time of an event is not a current state
    adjustment = adjust_versions(
        scores.final[rows], cols.vectors(rows, dims.pop()), recorded_at[rows], config
    )
    final = scores.final.copy()
    final[rows] = adjustment.scores
    factors: dict[int, dict[str, float]] = {}
    for k, row in enumerate(rows.tolist()):
        parts = {
            "older_version": float(adjustment.demoted[k]) if adjustment.demoted[k] != 1.0 else None,
            "newer_version_bonus": float(adjustment.inherited[k]) or None,
            "recent_in_band_bonus": float(adjustment.recent[k]) or None,
        }
        factors[row] = {name: value for name, value in parts.items() if value is not None}
    return replace(scores, final=final), factors


def _breakdown(
    cols: Columns,
    scores: Scores,
    life: _Lifecycle,
    boost: Boost | None,
    row: int,
    q: Query,
    versions: dict[int, dict[str, float]],
    chosen: Mask | None,
) -> Breakdown:
    c = q.config
    parts = scores.components(row)
    outside = chosen is not None and not chosen[row]
    return Breakdown(
        preset=c.name,
        normalisation=c.normalisation.value,
        relevance_mode=scores.relevance_mode.value,
        relevance_dense=None if outside else parts.dense,
        preselected=None if chosen is None else not outside,
        relevance_lexical=parts.lexical,
        speaker=_speaker_of(cols, row) if parts.speaker else None,
        relevance=parts.relevance,
        recency_mode=c.recency.value,
        age=timedelta(microseconds=parts.age_us),
        recency_raw=parts.recency_raw,
        recency=parts.recency,
        importance_raw=parts.importance_raw,
        importance=parts.importance,
        weights=c.weights,
        episodic=parts.episodic,
        factors={**life.at(row), **versions.get(row, {})},
        final=parts.final,
        causal=None
        if boost is None or q.crisis is None
        else _causal_part(cols, boost, q.crisis, row, q),
    )


def _speaker_of(cols: Columns, row: int) -> str | None:
    part = int(np.searchsorted(cols.offsets, row, side="right")) - 1
    codes, names = cols.arrays[part].speakers()
    code = int(codes[row - int(cols.offsets[part])])
    return None if code < 0 else names[code]


def columns(arrays: list[AgentArrays]) -> Columns:
    sizes = np.fromiter((a.n for a in arrays), dtype=np.intp, count=len(arrays))
    return Columns(arrays, np.concatenate(([0], np.cumsum(sizes))))


def search(index: SpaceIndex, store: MemoryStore, space: str, q: Query) -> list[Hit]:
    """Run one read; returns at most ``q.k`` hits, best first. Never writes."""
    with store.snapshot():
        cols = columns(index.arrays(q.agents))
        if cols.size == 0:
            return []
        mask = _visible(cols, q)
        if mask is not None and not mask.any():
            return []
        needs_lexical = q.vector is None or q.config.relevance is not RelevanceMode.DENSE
        lexical = _lexical(store, space, cols, q.text) if needs_lexical else None
        chosen = _preselect(store, space, cols, q, lexical, mask)
        dense, event_cosines = _similarities(
            cols, q.vector, q.crisis, chosen, passages=q.config.passages
        )
        speaker = _speaker_match(cols, q)
        life = _lifecycle(cols, q)
        boost = None if q.crisis is None else _boost(cols, q.crisis, event_cosines)
        recorded_at: I64 = cols.cat("recorded_at")
        ids: npt.NDArray[np.str_] = cols.cat("ids")
        candidates = Candidates(
            mask=mask,
            importance=cols.cat("importance"),
            last_accessed_at=cols.cat("last_accessed_at"),
            recorded_at=recorded_at,
            ids=ids,
            dense=dense,
            lexical=lexical,
            factor=life.factor,
            boost=None if boost is None else boost.value,
            speaker=speaker,
        )
        scores = score(candidates, q.config, as_of_us=to_micros(q.as_of))
        scores, versions = _versions(scores, cols, ids, recorded_at, q)
        groups = _select(scores, cols, ids, recorded_at, q.k)
        wanted = [str(ids[row]) for group in groups for row in group]
        records = {r.id: r for r in store.get_records(space, wanted)}
    hits = []
    for group in groups:
        members: Sequence[Record] = [records[str(ids[row])] for row in group]
        hits.append(
            Hit(
                record=members[0],
                score=float(scores.final[group[0]]),
                breakdown=_breakdown(cols, scores, life, boost, int(group[0]), q, versions, chosen)
                if q.explain
                else None,
                holders=tuple(m.agent for m in members),
                record_ids=tuple(m.id for m in members),
            )
        )
    return hits


def recent(
    index: SpaceIndex, store: MemoryStore, space: str, agent: str, as_of: datetime, n: int
) -> list[Record]:
    """The agent's ``n`` most recently recorded records visible at ``as_of``, oldest first."""
    with store.snapshot():
        cols = columns(index.arrays([agent]))
        if cols.size == 0:
            return []
        as_of_us = to_micros(as_of)
        mask = visible(
            cols, as_of_us=as_of_us, valid_at_us=as_of_us, include_history=False, kinds=None
        )
        recorded: I64 = cols.cat("recorded_at")
        ids: npt.NDArray[np.str_] = cols.cat("ids")
        final = recorded.astype(np.float64)
        if mask is not None:
            final[~mask] = -np.inf
        rows = rank(final, recorded, ids, n)[::-1]
        return store.get_records(space, [str(ids[r]) for r in rows])
