"""One read, stage by stage (DESIGN §2): candidates (``columns.py``), relevance
(``relevance.py``), lifecycle factor, score, versions, causal boost, rank, dedup, hits.

This module reads the store and the in-memory arrays but never writes; touching is the engine's
job, after the hits are known.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt

from chronomem.analysis.scripts import LANGUAGES, reads
from chronomem.arrays import F64, I64, Mask, Rows
from chronomem.clock import to_micros
from chronomem.config import Normalisation, RecencyMode, RelevanceMode, ScoringConfig
from chronomem.graph.boost import Boost, association
from chronomem.lifecycle.rules import decay_factor, feedback_factor
from chronomem.model.record import Breakdown, CausalPart, Hit, Kind, Record
from chronomem.retrieval import compact
from chronomem.retrieval.codes import KIND_CODES
from chronomem.retrieval.columns import Columns, columns, visible
from chronomem.retrieval.crisis import fuse_boost
from chronomem.retrieval.cues import SpeakerCue, TimeCue, speaker_cue, time_cue
from chronomem.retrieval.filtering import filter_mask, kinds_named
from chronomem.retrieval.languages import Coverage, model_reads
from chronomem.retrieval.query import Crisis, Query
from chronomem.retrieval.relevance import gather_is_cheap, lexical, preselect, similarities
from chronomem.retrieval.similarity import by_similarity, similarity_of
from chronomem.retrieval.space import SpaceIndex
from chronomem.scoring.score import Candidates, Scores, rank, score
from chronomem.scoring.versions import adjust_versions, spread_sessions
from chronomem.stores.base import MemoryStore
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


@dataclass(frozen=True, slots=True)
class _Factors:
    """The multiplicative factors of DESIGN §2 step 5: the lifecycle's decay and feedback, and
    the question's time window (``cues.py``)."""

    decay: F64 | None
    feedback: F64 | None
    when: TimeCue | None = None

    @property
    def factor(self) -> F64 | None:
        parts = [f for f in (self.decay, self.feedback) if f is not None]
        if self.when is not None:
            parts.append(self.when.factor)
        if not parts:
            return None
        out = parts[0]
        for part in parts[1:]:
            out = out * part
        return out

    def at(self, row: int) -> dict[str, float]:
        out = {}
        named = (("decay", self.decay), ("feedback", self.feedback))
        for name, values in (
            *named,
            ("time_window", None if self.when is None else self.when.factor),
        ):
            if values is not None and values[row] != 1.0:
                out[name] = float(values[row])
        return out


def _lifecycle(cols: Columns, q: Query, when: TimeCue | None) -> _Factors:
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
    return _Factors(decay, feedback, when)


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


def _causal_part(cols: Columns, boost: Boost, crisis: Crisis, row: int, q: Query) -> CausalPart:
    causal = q.config.causal
    j = boost.event(row)
    if j < 0:
        return CausalPart(boost=0.0, fusion=causal.fusion.value, weight=causal.weight)
    event = crisis.events[j]
    part = int(np.searchsorted(cols.offsets, row, side="right")) - 1
    arrays, local = cols.arrays[part], row - int(cols.offsets[part])
    vector = None if arrays.emb is None else arrays.emb[local]
    if crisis.languages is not None and not reads(
        crisis.languages, LANGUAGES[int(arrays.language[local])]
    ):
        vector = None  # the model does not read the record's language (crisis.boost_rows)
    value, via = association(
        vector, arrays.event_ids[local], event, threshold=crisis.threshold, full=crisis.full
    )
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
    scores: Scores,
    cols: Columns,
    ids: npt.NDArray[np.str_],
    recorded_at: I64,
    q: Query,
    when: TimeCue | None,
) -> tuple[Scores, dict[int, dict[str, float]]]:
    """Version-aware ranking of the best candidates (needs vectors); returns the adjusted scores
    and, per adjusted row, the factors for explanations."""
    config = q.config.versions
    dims = {a.dim for a in cols.arrays if a.emb is not None and a.dim is not None}
    if config is None or not _versions_apply(q) or len(dims) != 1:
        return scores, {}
    rows = rank(scores.final, recorded_at, ids, config.window)
    if rows.size < 2:
        return scores, {}
    if asks_when_something_happened(q.text) or (when is not None and when.closed_before(q.as_of)):
        # the time of an event, or what held at a past time, is not a current state
        config = replace(config, band=0.0)
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
    return _spread(replace(scores, final=final), cols, ids, recorded_at, q, factors)


def _versions_apply(q: Query) -> bool:
    """Version-aware ranking needs the query's vector; a crisis read has none of it (it asks why
    something happened, not for the current state of anything: the band would hand the newest
    of the chain's memories a lead over its root)."""
    return q.vector is not None and q.crisis is None


def _spread(
    scores: Scores,
    cols: Columns,
    ids: npt.NDArray[np.str_],
    recorded_at: I64,
    q: Query,
    factors: dict[int, dict[str, float]],
) -> tuple[Scores, dict[int, dict[str, float]]]:
    """For a question that takes every piece of evidence ("how many", "before", "switched"):
    each session's best candidate ahead of its session's others (``spread_sessions``)."""
    config = q.config.versions
    if config is None or config.spread == 0.0 or asks_for_every_piece(q.text) is None:
        return scores, factors
    rows = rank(scores.final, recorded_at, ids, config.spread_window)
    spread = spread_sessions(
        scores.final[rows], cols.cat("occurred_at")[rows], config.session_gap // _ONE_US,
        config.spread,
    )  # fmt: skip
    final = scores.final.copy()
    final[rows] *= spread
    for row, value in zip(rows.tolist(), spread.tolist(), strict=True):
        if value != 1.0:
            factors.setdefault(row, {})["same_session"] = value
    return replace(scores, final=final), factors


def _breakdown(
    cols: Columns,
    scores: Scores,
    life: _Factors,
    boost: Boost | None,
    row: int,
    q: Query,
    versions: dict[int, dict[str, float]],
    chosen: Mask | None,
    speaker: SpeakerCue | None,
    coverage: Coverage,
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
        cues=_cues(speaker, life.when, q, coverage.question),
        unread_language=coverage.language_not_read(row),
        filter=None if q.filter is None else q.filter.describe(),
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


def _cues(
    speaker: SpeakerCue | None, when: TimeCue | None, q: Query, unread_question: str | None
) -> dict[str, str]:
    """What the question's words made the read favour, for every hit of the read."""
    out = {}
    if q.switched_to is not None:
        out["model"] = (
            f"the store switched to {q.switched_to} after this handle opened with another "
            "model: relevance from the words; reopen with the new model"
        )
    if unread_question is not None:
        out["language"] = (
            f"the embedding model does not read this question's language ({unread_question}): "
            "relevance from its words"
        )
    if speaker is not None:
        out["speaker"] = speaker.reason
    if when is not None:
        out["time"] = when.reason()
    every = asks_for_every_piece(q.text)
    versions = q.config.versions
    if every is not None and versions is not None and versions.spread and _versions_apply(q):
        out["every_piece"] = f'asks for every piece ("{every}"): each session\'s best first'
    return out


def _listing(cols: Columns, config: ScoringConfig) -> tuple[I64 | None, Mask | None]:
    """Where ordinal recency places equal access times: the store keys (insertion order) and
    the rows of the kinds listed after the others."""
    if config.recency is not RecencyMode.ORDINAL:
        return None, None
    after = np.isin(cols.cat("kind"), [KIND_CODES[k] for k in config.listed_after])
    return cols.cat("pk"), after


def _speaker_of(cols: Columns, row: int) -> str | None:
    part = int(np.searchsorted(cols.offsets, row, side="right")) - 1
    codes, names = cols.arrays[part].speakers()
    code = int(codes[row - int(cols.offsets[part])])
    return None if code < 0 else names[code]


def _compact_exact(
    index: SpaceIndex, cols: Columns, q: Query, chosen: Mask | None
) -> Callable[[Rows], F64] | None:
    """When the read scans the int8 copy: one agent of at least ``index.compact_records``
    records, a dense query without a crisis, pre-selection, float64 cosines or passages in
    play, and ``simsimd`` installed. Returns the exact cosines of given rows."""
    a = cols.arrays[0]
    vector = q.vector
    c = q.config
    if (
        index.compact_records is None
        or q.by_similarity
        or len(cols.arrays) != 1
        or a.n < index.compact_records
        or vector is None
        or q.crisis is not None
        or chosen is not None
        or c.float64_cosines
        or c.relevance is RelevanceMode.LEXICAL
        or not compact.linear_in_cosine(c)
        or (c.passages and a.pn)
        or a.emb is None
        or a.dim != vector.shape[0]
        or not compact.available()
    ):
        return None
    emb = a.emb
    return lambda rows: (emb[rows] @ vector).astype(np.float64)


def search(index: SpaceIndex, store: MemoryStore, space: str, q: Query) -> list[Hit]:
    """Run one read; returns at most ``q.k`` hits, best first. Never writes."""
    with store.snapshot():
        raw = q.config.float64_cosines and q.vector is not None
        cols = columns(index.arrays(q.agents, raw=raw))
        if cols.size == 0:
            return []
        mask = _visible(cols, q)
        if mask is not None and not mask.any():
            return []
        q, coverage = model_reads(cols, q)
        needs_lexical = q.vector is None or q.config.relevance is not RelevanceMode.DENSE
        lexical_scores = lexical(store, space, cols, q.text) if needs_lexical else None
        chosen = preselect(store, space, cols, q, lexical_scores, mask)
        computed = _narrowed(cols, q, mask, chosen)
        exact = _compact_exact(index, cols, q, computed)
        bound = None
        dense: F64 | None
        if exact is not None:  # a large one-agent read: scan the int8 copy (compact.py)
            a = cols.arrays[0]
            dense, bound = compact.cosines(a.compact(), a.n, q.vector)  # type: ignore[arg-type]
            if q.config.normalisation is not Normalisation.FIXED:
                compact.widen_extremes(dense, bound, mask, exact)
        elif q.vector is not None:
            dense = similarities(
                cols, q.vector, computed, passages=q.config.passages,
                float64=q.raw_vector if q.config.float64_cosines else None,
            )  # fmt: skip
        else:
            dense = None
        speaker = speaker_cue(cols, q)
        when = time_cue(cols, q, mask)
        life = _lifecycle(cols, q, when)
        recorded_at: I64 = cols.cat("recorded_at")
        ids: npt.NDArray[np.str_] = cols.cat("ids")
        inserted, listed_after = _listing(cols, q.config)
        candidates = Candidates(
            mask=mask,
            importance=cols.cat("importance"),
            last_accessed_at=cols.cat("last_accessed_at"),
            recorded_at=recorded_at,
            ids=ids,
            dense=dense,
            lexical=lexical_scores,
            factor=life.factor,
            speaker=None if speaker is None else speaker.match,
            inserted=inserted,
            listed_after=listed_after,
            unread=coverage.unread,
        )
        if exact is not None and bound is not None:
            window = 0 if q.config.versions is None else q.config.versions.window
            scores = compact.best_scores(
                candidates, q.config, to_micros(q.as_of), bound, exact, max(q.k, window)
            )
        else:
            scores = score(candidates, q.config, as_of_us=to_micros(q.as_of))
        episodic, boost, floor = scores, None, -np.inf
        if q.crisis is not None:  # exact from `floor` up: the top k and every row above it
            scores, boost, floor = fuse_boost(episodic, cols, q.crisis, q.k)
        scores, versions = _versions(scores, cols, ids, recorded_at, q, when)
        ranking = by_similarity(scores, cols, dense, chosen) if q.by_similarity else scores
        groups = _select(ranking, cols, ids, recorded_at, q.k, dedup=q.dedup)
        if q.crisis is not None and any(scores.final[g[0]] < floor for g in groups):
            # merged duplicates took the hits past the exact rows: fuse every row's boost
            scores, boost, _ = fuse_boost(episodic, cols, q.crisis, cols.size)
            groups = _select(scores, cols, ids, recorded_at, q.k, dedup=q.dedup)
        wanted = [str(ids[row]) for group in groups for row in group]
        records = {r.id: r for r in store.get_records(space, wanted)}
        similar = similarity_of(cols, dense, chosen, exact, [int(g[0]) for g in groups])
    hits: list[Hit] = []
    for group in groups:
        members: Sequence[Record] = [records[str(ids[row])] for row in group]
        hits.append(
            Hit(
                record=members[0],
                score=float(scores.final[group[0]]),
                breakdown=_breakdown(
                    cols,
                    scores,
                    life,
                    boost,
                    int(group[0]),
                    q,
                    versions,
                    chosen,
                    speaker,
                    coverage,
                )
                if q.explain
                else None,
                holders=tuple(m.agent for m in members),
                record_ids=tuple(m.id for m in members),
                similarity=similar[len(hits)],
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
