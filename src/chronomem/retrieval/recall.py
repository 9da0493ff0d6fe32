"""One read as the named stages of DESIGN §2, each a function of one :class:`ReadState`
(``state.py``): candidates → components (relevance: lexical, pre-selection, and the dense
cosines — exact, or the int8 copy's scan as a strategy) → cues and lifecycle factors → score
(normalisation, episodic score, factors) → causal boost → versions → rank (with dedup) → the
crisis's re-fuse → hits (with explanations, ``explain.py``).

This module reads the store and the in-memory arrays but never writes; touching is the engine's
job, after the hits are known.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt

from chronomem.arrays import F32, F64, I64, Mask, Rows
from chronomem.clock import to_micros
from chronomem.config import Normalisation, RecencyMode, RelevanceMode, ScoringConfig
from chronomem.lifecycle.rules import decay_factor, feedback_factor
from chronomem.model.record import Hit, Kind, Record
from chronomem.retrieval import compact
from chronomem.retrieval.codes import KIND_CODES
from chronomem.retrieval.columns import Columns, columns, visible
from chronomem.retrieval.crisis import fuse_boost
from chronomem.retrieval.cues import TimeCue, speaker_cue, time_cue
from chronomem.retrieval.explain import breakdown
from chronomem.retrieval.filtering import filter_mask, kinds_named
from chronomem.retrieval.index import AgentArrays
from chronomem.retrieval.languages import model_reads
from chronomem.retrieval.query import Crisis, Query
from chronomem.retrieval.relevance import gather_is_cheap, lexical, preselect, similarities
from chronomem.retrieval.similarity import by_similarity, similarity_of
from chronomem.retrieval.space import SpaceIndex
from chronomem.retrieval.state import Factors, ReadState
from chronomem.scoring.score import Candidates, Scores, rank, score
from chronomem.scoring.versions import adjust_versions, spread_sessions
from chronomem.stores.base import MemoryStore
from chronomem.telemetry.tracing import stage
from chronomem.text import asks_for_every_piece, asks_when_something_happened

__all__ = ["Crisis", "Query", "recent", "search"]

_ONE_US = timedelta(microseconds=1)
# Core memory blocks are in an agent's context already: reads leave them out unless asked.
CORE = frozenset({Kind.CORE})


def _visible(cols: Columns, q: Query) -> Mask | None:
    """The candidates (DESIGN §2 step 1): visible at the read's instants, of its kinds, selected
    by its filter; ``None``: every row."""
    as_of_us = to_micros(q.as_of)
    named = q.kinds if q.kinds is not None else kinds_named(q.filter)
    mask = visible(
        cols,
        as_of_us=as_of_us,
        valid_at_us=as_of_us if q.valid_at is None else to_micros(q.valid_at),
        include_history=q.include_history,
        kinds=q.kinds,
        exclude_kinds=q.config.exclude_kinds | (CORE if named is None else frozenset()),
        exclude_key=q.config.exclude_key,
    )
    if q.filter is None:
        return mask
    selected = filter_mask(cols, q.filter, as_of_us=as_of_us)
    return selected if mask is None else mask & selected


def _narrowed(cols: Columns, q: Query, mask: Mask | None, chosen: Mask | None) -> Mask | None:
    """The rows whose cosines a filtered read computes: only the filter's candidates, when
    gathering them costs less than the whole product (a narrow filter makes a read cheaper,
    never dearer); ``chosen`` (pre-selected rows) otherwise. Not under float64 cosines, which
    compute every row the reference code's way."""
    if q.filter is None or mask is None or q.config.float64_cosines:
        return chosen
    if not gather_is_cheap(int(np.count_nonzero(mask)), cols.size):
        return chosen
    return mask if chosen is None else mask & chosen


def _lifecycle(cols: Columns, q: Query, when: TimeCue | None) -> Factors:
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
    return Factors(decay, feedback, when)


def _select(
    scores: Scores,
    cols: Columns,
    ids: npt.NDArray[np.str_],
    recorded_at: I64,
    k: int,
    *,
    dedup: bool = True,
) -> list[Rows]:
    """Ranked row groups: one group per hit. Multi-agent reads collapse equal texts (step 8)
    unless ``dedup`` is off."""
    positions = scores.positions
    if len(cols.arrays) == 1 or not dedup:
        return [
            np.asarray([p]) for p in rank(scores.final, recorded_at, ids, k, positions=positions)
        ]
    keys = cols.derived("text_keys")
    candidates = scores.final > -np.inf
    n_candidates = int(np.count_nonzero(candidates))
    window = k
    while True:
        ranked = rank(scores.final, recorded_at, ids, window, positions=positions)
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


def _versions(state: ReadState) -> None:
    """Version-aware ranking of the best candidates (needs vectors): adjusts the scores and
    keeps, per adjusted row, the factors for explanations."""
    q, cols, scores = state.q, state.cols, state.scored
    config = q.config.versions
    dims = {a.dim for a in cols.arrays if a.emb is not None and a.dim is not None}
    if config is None or not q.ranks_versions or len(dims) != 1:
        return
    rows = rank(scores.final, state.recorded_at, state.ids, config.window)
    if rows.size < 2:
        return
    when = state.life.when
    if asks_when_something_happened(q.text) or (when is not None and when.closed_before(q.as_of)):
        # the time of an event, or what held at a past time, is not a current state
        config = replace(config, band=0.0)
    adjustment = adjust_versions(
        scores.final[rows], cols.vectors(rows, dims.pop()), state.recorded_at[rows], config
    )
    final = scores.final.copy()
    final[rows] = adjustment.scores
    for k, row in enumerate(rows.tolist()):
        parts = {
            "older_version": float(adjustment.demoted[k]) if adjustment.demoted[k] != 1.0 else None,
            "newer_version_bonus": float(adjustment.inherited[k]) or None,
            "recent_in_band_bonus": float(adjustment.recent[k]) or None,
        }
        state.versions[row] = {name: value for name, value in parts.items() if value is not None}
    state.scores = replace(scores, final=final)
    _spread(state)


def _spread(state: ReadState) -> None:
    """For a question that takes every piece of evidence ("how many", "before", "switched"):
    each session's best candidate ahead of its session's others (``spread_sessions``)."""
    q, scores = state.q, state.scored
    config = q.config.versions
    if config is None or config.spread == 0.0 or asks_for_every_piece(q.text) is None:
        return
    rows = rank(scores.final, state.recorded_at, state.ids, config.spread_window)
    state.lowest = min(state.lowest, float(scores.final[rows].min(initial=np.inf)))
    spread = spread_sessions(
        scores.final[rows], state.cols.cat("occurred_at")[rows], config.session_gap // _ONE_US,
        config.spread,
    )  # fmt: skip
    final = scores.final.copy()
    final[rows] *= spread
    for row, value in zip(rows.tolist(), spread.tolist(), strict=True):
        if value != 1.0:
            state.versions.setdefault(row, {})["same_session"] = value
    state.scores = replace(scores, final=final)


def _listing(cols: Columns, config: ScoringConfig) -> tuple[I64 | None, Mask | None]:
    """Where ordinal recency places equal access times: the store keys (insertion order) and
    the rows of the kinds listed after the others."""
    if config.recency is not RecencyMode.ORDINAL:
        return None, None
    after = np.isin(cols.cat("kind"), [KIND_CODES[k] for k in config.listed_after])
    return cols.cat("pk"), after


def _compact_exact(
    index: SpaceIndex, cols: Columns, q: Query, chosen: Mask | None
) -> Callable[[Rows], F64] | None:
    """When the read scans the int8 copy: one agent of at least ``index.compact_records``
    records, a dense query without a crisis, pre-selection or float64 cosines in play, and
    ``simsimd`` installed. Returns the exact cosines of given rows (their own vectors';
    :func:`_int8_cosines` adds their passages')."""
    a = cols.arrays[0]
    vector = q.vector
    c = q.config
    if (
        q.by_similarity
        or len(cols.arrays) != 1
        or not index.scans_int8(a)
        or vector is None
        or q.crisis is not None
        or chosen is not None
        or c.float64_cosines
        or c.relevance is RelevanceMode.LEXICAL
        or not compact.boundable(c)
        or a.dim != vector.shape[0]
    ):
        return None
    emb = a.emb
    assert emb is not None  # (scans_int8)
    return lambda rows: (emb[rows] @ vector).astype(np.float64)


def search(index: SpaceIndex, store: MemoryStore, space: str, q: Query) -> list[Hit]:
    """Run one read; returns at most ``q.k`` hits, best first. Never writes."""
    with store.snapshot():
        with stage("read.candidates", space=space, agents=len(q.agents), k=q.k) as span:
            state = _candidates(index, q)
            span.set(candidates=0 if state is None else state.cols.size)
        if state is None:
            return []
        with stage("read.relevance", space=space, mode=q.config.relevance.value):
            _components(state, index, store, space)
        with stage("read.scoring", space=space, int8=state.exact is not None):
            _factors(state)
            _score(state, _exact_rows(q))
        if q.crisis is not None:
            with stage("read.causal", space=space):
                _causal(state)
        with stage("read.ranking", space=space):
            _versions(state)
            _rank(state)
            _refuse(state)
            while state.lowest < state.ceiling:  # only over the int8 copy: see _score
                _score(state, 4 * state.exact_rows)
                state.versions.clear()
                state.lowest = np.inf
                _versions(state)
                _rank(state)
        with stage("read.hits", space=space, k=q.k) as span:
            hits = _hits(state, store, space)
            span.set(hits=len(hits))
        return hits


def _candidates(index: SpaceIndex, q: Query) -> ReadState | None:
    """Stage 1: the rows visible at the read's instants, of its kinds, that its filter selects;
    the query as the model reads it. ``None``: no candidate."""
    raw = q.config.float64_cosines and q.vector is not None
    with stage("read.sync", agents=len(q.agents)):  # the index brought up to date with the store
        arrays = index.arrays(q.agents, raw=raw)
    cols = columns(arrays)
    if cols.size == 0:
        return None
    mask = _visible(cols, q)
    if mask is not None and not mask.any():
        return None
    q, coverage = model_reads(cols, q)
    return ReadState(
        q=q, cols=cols, mask=mask, coverage=coverage, recorded_at=cols.cat("recorded_at"),
        ids=cols.cat("ids"),
    )  # fmt: skip


def _components(state: ReadState, index: SpaceIndex, store: MemoryStore, space: str) -> None:
    """Stage 2, relevance: BM25 when lexical relevance counts, pgvector's pre-selection, and the
    dense cosines of the rows a read computes — by the int8 copy's scan when it serves the read
    (:func:`_compact_exact`), exactly otherwise."""
    q, cols = state.q, state.cols
    if q.vector is None or q.config.relevance is not RelevanceMode.DENSE:
        state.lexical = lexical(store, space, cols, q.text)
    state.chosen = preselect(store, space, cols, q, state.lexical, state.mask)
    state.computed = _narrowed(cols, q, state.mask, state.chosen)
    state.exact = _compact_exact(index, cols, q, state.computed)
    if state.exact is not None and q.vector is not None:
        _int8_cosines(state, state.exact, q.vector)
    elif q.vector is not None:
        state.dense = similarities(
            cols, q.vector, state.computed, passages=q.config.passages,
            float64=q.raw_vector if q.config.float64_cosines else None,
        )  # fmt: skip


def _int8_cosines(state: ReadState, exact: Callable[[Rows], F64], vector: F32) -> None:
    """The int8 copy's cosines of a large one-agent read and their error bound (``compact.py``),
    the candidates' extremes made exact for min-max normalisation. With passages, a row's
    cosine is the best of its own and its passages', each from its int8 copy: the best of
    several values moves by no more than the one furthest off, so the larger of the two bounds
    holds, and ``state.exact`` gives the exact best of both."""
    a = state.cols.arrays[0]
    state.dense, state.bound = compact.cosines(a.compact(), a.n, vector)
    if state.q.config.passages and a.pn:
        passages = a.raise_to_passages_approx(state.dense, vector)
        state.bound = max(state.bound, passages)
        state.exact = exact = _with_passages(exact, a, vector)
    if state.q.config.normalisation is not Normalisation.FIXED:
        compact.widen_extremes(state.dense, state.bound, state.mask, exact)


def _with_passages(
    own: Callable[[Rows], F64], a: AgentArrays, vector: F32
) -> Callable[[Rows], F64]:
    return lambda rows: np.maximum(own(rows), a.passage_cosines(rows, vector))


def _factors(state: ReadState) -> None:
    """What the question's words favour (who it asks about, when) and the lifecycle's factors
    (stage 5's inputs)."""
    state.speaker = speaker_cue(state.cols, state.q)
    state.life = _lifecycle(state.cols, state.q, time_cue(state.cols, state.q, state.mask))


def _score(state: ReadState, exact_rows: int) -> None:
    """Stages 3–5: normalisation, the episodic score and its factors — over the int8 copy's
    cosines, the exact scores of every row that can reach the best ``exact_rows``
    (``compact.best_scores``) and the ceiling no other row reaches.

    The version-aware stages lower some of those rows' scores (an older version, a session's
    second hit): when a ranking after them takes in a score below the ceiling, a row left with
    its approximate score might belong there, and :func:`search` scores more rows exactly."""
    q, cols = state.q, state.cols
    inserted, listed_after = _listing(cols, q.config)
    candidates = Candidates(
        mask=state.mask, importance=cols.cat("importance"),
        last_accessed_at=cols.cat("last_accessed_at"), recorded_at=state.recorded_at,
        ids=state.ids, dense=state.dense, lexical=state.lexical, factor=state.life.factor,
        speaker=None if state.speaker is None else state.speaker.match, inserted=inserted,
        listed_after=listed_after, unread=state.coverage.unread,
    )  # fmt: skip
    as_of_us = to_micros(q.as_of)
    if state.exact is not None and state.bound is not None:
        state.scores, state.ceiling = compact.best_scores(
            candidates, q.config, as_of_us, state.bound, state.exact, exact_rows
        )
        state.exact_rows = exact_rows
    else:
        state.scores = score(candidates, q.config, as_of_us=as_of_us)
    state.episodic = state.scores


def _exact_rows(q: Query) -> int:
    """How many of the best rows a read over the int8 copy must score exactly: its hits and
    every row the version-aware stages rank (``_versions``, ``_spread``)."""
    v = q.config.versions
    if v is None:
        return q.k
    return max(q.k, v.window, v.spread_window if v.spread else 0)


def _causal(state: ReadState) -> None:
    """Stage 6: a crisis read's boost, exact from ``state.floor`` up (the top k and every row
    above it)."""
    if state.q.crisis is not None:
        state.scores, state.boost, state.floor = fuse_boost(
            state.scored, state.cols, state.q.crisis, state.q.k
        )


def _rank(state: ReadState) -> None:
    """Stages 7–8: rank by score (or by raw cosine, ``rank_by="similarity"``), collapsing equal
    texts of a multi-agent read."""
    q = state.q
    ranking = state.scored
    if q.by_similarity:
        ranking = by_similarity(ranking, state.cols, state.dense, state.chosen)
    state.groups = _select(ranking, state.cols, state.ids, state.recorded_at, q.k, dedup=q.dedup)
    firsts = np.asarray([g[0] for g in state.groups], dtype=np.intp)
    state.lowest = min(state.lowest, float(ranking.final[firsts].min(initial=np.inf)))


def _refuse(state: ReadState) -> None:
    """A crisis read whose merged duplicates took the hits past its exact rows: every row's
    boost fused, and ranked again."""
    q, scores = state.q, state.scored
    if q.crisis is None or not any(scores.final[g[0]] < state.floor for g in state.groups):
        return
    assert state.episodic is not None
    state.scores, state.boost, _ = fuse_boost(state.episodic, state.cols, q.crisis, state.cols.size)
    state.groups = _select(
        state.scored, state.cols, state.ids, state.recorded_at, q.k, dedup=q.dedup
    )


def _hits(state: ReadState, store: MemoryStore, space: str) -> list[Hit]:
    """The hits: each group's records (the first its best), score, similarity and, when asked,
    explanation."""
    ids, groups = state.ids, state.groups
    wanted = [str(ids[row]) for group in groups for row in group]
    records = {r.id: r for r in store.get_records(space, wanted)}
    similar = similarity_of(
        state.cols, state.dense, state.chosen, state.exact, [int(g[0]) for g in groups]
    )
    hits: list[Hit] = []
    for group, similarity in zip(groups, similar, strict=True):
        members: Sequence[Record] = [records[str(ids[row])] for row in group]
        hits.append(
            Hit(
                record=members[0],
                score=float(state.scored.final[group[0]]),
                breakdown=breakdown(state, int(group[0])) if state.q.explain else None,
                holders=tuple(m.agent for m in members),
                record_ids=tuple(m.id for m in members),
                similarity=similarity,
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
            cols, as_of_us=as_of_us, valid_at_us=as_of_us, include_history=False, kinds=None,
            exclude_kinds=CORE,
        )  # fmt: skip
        recorded: I64 = cols.cat("recorded_at")
        ids: npt.NDArray[np.str_] = cols.cat("ids")
        final = recorded.astype(np.float64)
        if mask is not None:
            final[~mask] = -np.inf
        rows = rank(final, recorded, ids, n)[::-1]
        return store.get_records(space, [str(ids[r]) for r in rows])
