"""The episodic score and the deterministic ranking (DESIGN §2 steps 3, 4, 5 hook, 7).

``score`` computes the final score of every row as one weighted sum over the raw components,
with each normalisation folded in as an affine map (the Generative Agents preset sums in its
code's own arithmetic instead); normalised values are computed per row only
for explanations (:meth:`Scores.components`). ``rank`` picks the top k by final score, then
``recorded_at`` descending, then id — identical inputs give identical output, and the order rows
arrive in never matters.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import numpy as np
import numpy.typing as npt

from chronomem.arrays import F64, I64, Mask, Rows
from chronomem.config import (
    Fusion,
    Normalisation,
    RecencyMode,
    RelevanceMode,
    ScoringConfig,
)
from chronomem.scoring.components import (
    IDENTITY,
    Affine,
    elapsed_recency,
    fixed_lexical,
    minmax,
    ordinal_positions,
    ordinal_recency,
    value_range,
)

__all__ = [
    "Candidates", "Components", "Scores", "effective_relevance", "fallback_gate", "floored",
    "fuse", "rank", "score",
]  # fmt: skip

_ONE_US = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidates:
    """Columns for every row that might be scored; ``mask`` marks the actual candidates
    (``None``: every row is one).

    ``dense`` is the raw cosine to the query (``None`` without a query vector); ``lexical`` the raw
    BM25 (``None`` when lexical relevance is not used). ``factor`` multiplies the episodic score
    (the lifecycle factor, DESIGN §2 step 5); ``None`` means 1. ``boost`` is the causal boost in
    [0, 1] fused by ``config.causal`` (DESIGN §2 step 6); ``None`` means no crisis. ``speaker``
    is 1 for records whose speaker the query refers to (``None``: none); relevance gains
    ``config.speaker_weight`` for them. ``inserted`` (the store keys, growing with every write)
    and ``listed_after`` (rows of ``config.listed_after`` kinds) place equal access times in
    ordinal recency; without them, the later recorded comes first. ``unread`` marks the rows in
    a language the query vector's model does not read: under hybrid relevance their relevance is
    their lexical one alone (the cosine of a language the model cannot read is noise).
    """

    mask: Mask | None
    importance: F64
    last_accessed_at: I64
    recorded_at: I64
    ids: npt.NDArray[np.str_]
    dense: F64 | None
    lexical: F64 | None
    factor: F64 | None = None
    boost: F64 | None = None
    speaker: F64 | None = None
    inserted: I64 | None = None
    listed_after: Mask | None = None
    unread: Mask | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Components:
    """One row's components, raw and normalised (for explanations)."""

    dense: float | None
    lexical: float | None
    speaker: float
    relevance: float
    age_us: int
    recency_raw: float
    recency: float
    importance_raw: float
    importance: float
    episodic: float
    factor: float
    boost: float | None
    final: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Scores:
    """The final score per row (``-inf`` outside the candidates) and what is needed to explain
    any row: raw columns and the normalisation maps. ``positions`` (ordinal recency only) is
    each candidate's place in the reference code's list, which also orders equal scores."""

    relevance_mode: RelevanceMode
    config: ScoringConfig
    candidates: Candidates
    as_of_us: int
    dense_used: F64 | None
    lexical_used: F64 | None
    recency_raw: F64
    norm_dense: Affine
    norm_lexical: Affine
    norm_recency: Affine
    norm_importance: Affine
    final: F64
    positions: I64 | None = None

    def components(self, row: int) -> Components:
        c, cfg = self.candidates, self.config
        dense = None if c.dense is None else float(c.dense[row])
        lexical = None if c.lexical is None else float(c.lexical[row])
        d = 0.0 if self.dense_used is None else self.norm_dense.at(self.dense_used[row])
        lx = 0.0 if self.lexical_used is None else self.norm_lexical.at(self.lexical_used[row])
        mode = self.relevance_mode
        if mode is RelevanceMode.DENSE:
            relevance = d
        elif mode is RelevanceMode.LEXICAL or (c.unread is not None and c.unread[row]):
            relevance = lx
        else:
            relevance = max(cfg.dense_floor * d, cfg.dense_share * d + (1.0 - cfg.dense_share) * lx)
        spoke = 0.0 if c.speaker is None else float(c.speaker[row])
        relevance += cfg.speaker_weight * spoke
        recency = self.norm_recency.at(self.recency_raw[row])
        importance = self.norm_importance.at(c.importance[row])
        w = cfg.weights
        episodic = w.relevance * relevance + w.recency * recency + w.importance * importance
        factor = 1.0 if c.factor is None else float(c.factor[row])
        boost = None if c.boost is None else float(c.boost[row])
        return Components(
            dense=dense,
            lexical=lexical,
            speaker=spoke,
            relevance=relevance,
            age_us=max(0, self.as_of_us - int(c.last_accessed_at[row])),
            recency_raw=float(self.recency_raw[row]),
            recency=recency,
            importance_raw=float(c.importance[row]),
            importance=importance,
            episodic=episodic,
            factor=factor,
            boost=boost,
            final=float(self.final[row]),
        )


def effective_relevance(mode: RelevanceMode, *, has_query_vector: bool) -> RelevanceMode:
    """Dense and hybrid relevance degrade to lexical when there is no query vector."""
    return mode if has_query_vector else RelevanceMode.LEXICAL


def score(c: Candidates, config: ScoringConfig, *, as_of_us: int) -> Scores:
    """Score every row under ``config`` at ``as_of_us`` (integer microseconds)."""
    n = c.importance.shape[0]
    mask = c.mask
    fixed = config.normalisation is Normalisation.FIXED
    mode = effective_relevance(config.relevance, has_query_vector=c.dense is not None)
    w = config.weights

    # (raw column, coefficient) pairs of the folded weighted sum, plus its constant.
    terms: list[tuple[F64, float]] = []
    constant = 0.0

    def add(values: F64, weight: float, norm: Affine) -> None:
        nonlocal constant
        constant += weight * norm.shift
        if weight * norm.scale != 0.0:
            terms.append((values, weight * norm.scale))

    dense_share = {RelevanceMode.DENSE: 1.0, RelevanceMode.LEXICAL: 0.0}.get(
        mode, config.dense_share
    )
    dense_used, norm_dense = None, Affine(0.0, 0.0)
    if dense_share > 0.0:
        assert c.dense is not None
        dense_used = np.clip(c.dense, 0.0, 1.0) if fixed else c.dense
        norm_dense = IDENTITY if fixed else minmax(dense_used, mask)
    norm_lexical, lexical_used = Affine(0.0, 0.0), None
    if dense_share < 1.0:
        lexical = c.lexical if c.lexical is not None else np.zeros(n, dtype=np.float64)
        lexical_used = fixed_lexical(lexical, config.bm25_half) if fixed else lexical
        norm_lexical = IDENTITY if fixed else minmax(lexical, mask)
    if dense_used is not None and lexical_used is not None and c.unread is not None:
        lx = norm_lexical(lexical_used)
        relevance = floored(norm_dense(dense_used), lx, dense_share, config.dense_floor)
        relevance[c.unread] = lx[c.unread]
        add(relevance, w.relevance, IDENTITY)
    elif dense_used is not None and lexical_used is not None and config.dense_floor > dense_share:
        relevance = floored(
            norm_dense(dense_used), norm_lexical(lexical_used), dense_share, config.dense_floor
        )
        add(relevance, w.relevance, IDENTITY)
    else:
        if dense_used is not None:
            add(dense_used, w.relevance * dense_share, norm_dense)
        if lexical_used is not None:
            add(lexical_used, w.relevance * (1.0 - dense_share), norm_lexical)
    if c.speaker is not None and config.speaker_weight:
        add(c.speaker, w.relevance * config.speaker_weight, IDENTITY)

    positions = None
    if config.recency is RecencyMode.ORDINAL:
        everyone = np.ones(n, dtype=np.bool_) if mask is None else mask
        after = np.zeros(n, dtype=np.bool_) if c.listed_after is None else c.listed_after
        inserted = c.inserted
        if inserted is None:  # without store keys: the later recorded (then id) as later written
            inserted = np.empty(n, dtype=np.int64)
            inserted[np.lexsort((c.ids, c.recorded_at))] = np.arange(n, dtype=np.int64)
        positions = ordinal_positions(c.last_accessed_at, after, inserted, everyone)
        recency_raw = ordinal_recency(positions, config.recency_decay)
    else:
        recency_raw = elapsed_recency(
            c.last_accessed_at, as_of_us, config.recency_decay, config.recency_unit // _ONE_US
        )
    norm_recency = IDENTITY if fixed else minmax(recency_raw, mask)
    add(recency_raw, w.recency, norm_recency)
    norm_importance = Affine(0.1, 0.0) if fixed else minmax(c.importance, mask)
    add(c.importance, w.importance, norm_importance)

    if config.recency is RecencyMode.ORDINAL and not fixed and lexical_used is None:
        # The Generative Agents code's own arithmetic, not the folded sum: equal scores are
        # common there (min-max ends at 0 and 1, weights 0.5/3/2) and its stable sort keeps
        # them in recency order, so a last-bit difference would reorder them.
        assert dense_used is not None
        final = _code_sum(
            (recency_raw, norm_recency, w.recency),
            (dense_used, norm_dense, w.relevance),
            (c.importance, norm_importance, w.importance),
            mask=mask,
        )
    else:
        final = np.full(n, constant, dtype=np.float64)
        scratch = np.empty(n, dtype=np.float64)
        for values, coefficient in terms:
            np.multiply(values, coefficient, out=scratch)
            final += scratch
    if c.factor is not None:
        final *= c.factor
    if c.boost is not None:
        final = fuse(final, c.boost, config)
    if mask is not None:
        final[~mask] = -np.inf
    return Scores(
        relevance_mode=mode,
        config=config,
        candidates=c,
        as_of_us=as_of_us,
        dense_used=dense_used,
        lexical_used=lexical_used,
        recency_raw=recency_raw,
        norm_dense=norm_dense,
        norm_lexical=norm_lexical,
        norm_recency=norm_recency,
        norm_importance=norm_importance,
        final=final,
        positions=positions,
    )


def floored(dense: F64, lexical: F64, dense_share: float, dense_floor: float) -> F64:
    """Hybrid relevance ``max(dense_floor · dense, dense_share · dense + (1 - dense_share) ·
    lexical)`` (both normalised): a lexical match raises relevance, its absence costs at most
    ``1 - dense_floor`` of the dense part."""
    mean = dense * dense_share
    mean += lexical * (1.0 - dense_share)
    return np.maximum(mean, dense * dense_floor, out=mean)


def fuse(episodic: F64, boost: F64 | float, config: ScoringConfig) -> F64:
    """DESIGN §2 step 6: the final scores from the episodic ones (after the lifecycle factor)
    and the causal boost, by ``config.causal``; a new array. Affine in the boost."""
    causal, w = config.causal, config.weights
    if causal.fusion is Fusion.ADDITIVE:
        # The episodic part scaled to [0, 1] by the weight sum, so λ means the same under
        # every preset; the boost can then lift a record whose episodic score is near zero.
        final = episodic / ((w.relevance + w.recency + w.importance) or 1.0)
        final += causal.weight * boost
        return final
    return episodic * (1.0 + causal.weight * boost)


def fallback_gate(episodic: F64, config: ScoringConfig) -> F64 | None:
    """The gate of a scope-fallback event's contribution to each row's boost (``graph/boost.py``):
    under additive fusion the episodic part as :func:`fuse` adds it, clipped to [0, 1] (rows
    outside the read: 0), so the fallback's fused effect is ``E · (1 + λ · fallback)`` — it can
    amplify a memory that answers the question and cannot lift one that does not. ``None``
    under multiplicative fusion, whose boost multiplies the episodic score already."""
    causal, w = config.causal, config.weights
    if causal.fusion is not Fusion.ADDITIVE:
        return None
    with np.errstate(invalid="ignore"):
        gate = episodic / ((w.relevance + w.recency + w.importance) or 1.0)
    return np.clip(np.nan_to_num(gate, nan=0.0, neginf=0.0), 0.0, 1.0)


def _code_sum(*parts: tuple[F64, Affine, float], mask: Mask | None) -> F64:
    """``Σ normalised · weight`` in the code's order and rounding (``normalize_dict_floats``:
    ``(v - lo) / (hi - lo)``, 0.5 for a zero range; then ``value · weight``, summed left to
    right). ``norm`` is the folded map, consulted only for the zero-range case."""
    final: F64 | None = None
    with np.errstate(all="ignore"):  # rows outside the mask are discarded by the caller
        for values, norm, weight in parts:
            if norm.scale == 0.0:
                normalised = np.full(values.shape[0], norm.shift, dtype=np.float64)
            else:
                lo, hi = value_range(values, mask)
                normalised = (values - lo) / (hi - lo)
            term = normalised * weight
            final = term if final is None else final + term
    assert final is not None
    return final


def rank(
    final: F64,
    recorded_at: I64,
    ids: npt.NDArray[np.str_],
    k: int,
    *,
    positions: I64 | None = None,
) -> Rows:
    """Row positions of the top ``k`` candidates: final desc, recorded_at desc, id asc — or,
    given ``positions`` (ordinal recency), final desc then position asc, as the reference code's
    stable sort leaves equal scores.

    Rows whose score is ``-inf`` are not candidates. Every row tied with the k-th score takes part
    in the tie-break, so the result does not depend on row order.
    """
    n = final.shape[0]
    if n == 0 or k <= 0:
        return np.empty(0, dtype=np.intp)
    live = np.flatnonzero(final > -np.inf)
    if live.size <= k:
        candidates = live
    elif live.size * 2 <= n:
        # Most rows are out (-inf: pruned, filtered, not visible at the instant): select among
        # the others only (a read of 100k rows keeps about a quarter).
        scores = final[live]
        kth = scores[np.argpartition(-scores, k - 1)[:k]].min()
        candidates = live[scores >= kth]
    else:
        # Selecting from the negated scores: numpy's selection of the largest is slow when many
        # rows tie at the low end (-inf outside the candidates), that of the smallest is not.
        kth = final[np.argpartition(-final, k - 1)[:k]].min()
        candidates = np.flatnonzero(final >= kth)
    if positions is not None:
        order = np.lexsort((positions[candidates], -final[candidates]))
    else:
        order = np.lexsort((ids[candidates], -recorded_at[candidates], -final[candidates]))
    return candidates[order[:k]]
