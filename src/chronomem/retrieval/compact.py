"""An int8 copy of an agent's unit vectors, scanned instead of the float32 matrix by large
one-agent reads, with a bound on each cosine's error so the ranking stays exact (issue 18).

Each row ``x`` is stored as ``scale * codes`` (per-row symmetric int8: ``scale = max|x| / 127``)
with ``err = ||x - scale * codes||``; the query likewise. For unit ``x`` and ``q``::

    |x.q - x^.q^| <= ||x^|| ||q - q^|| + ||x - x^|| ||q|| <= (1 + err) err_q + err

so every approximate cosine comes with an interval holding the exact one. A read takes the rows
whose best possible final score reaches the k-th best worst possible one, computes their exact
cosines from the float32 vectors and patches their scores (see :func:`refine`): the top k is the
one the float32 scan gives. Scanning needs ``simsimd`` (the ``fast`` extra): a quarter of the
bytes of the float32 matrix, read with SIMD int8 dot products.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.arrays import F32, F64, Mask, Rows
from chronomem.config import Normalisation, RecencyMode, RelevanceMode, ScoringConfig
from chronomem.errors import ConfigError
from chronomem.scoring.components import elapsed_recency, fixed_lexical
from chronomem.scoring.score import Candidates, Scores, effective_relevance, floored, score

__all__ = [
    "DEFAULT_COMPACT_RECORDS", "Codes", "available", "best_scores", "boundable", "cosines",
    "dense_slope", "linear_in_cosine", "refine", "set_scan_threads", "widen_extremes",
]  # fmt: skip

#: An agent's vectors are scanned in int8 from this many records on (below, the float32
#: product is about as fast and the bound's bookkeeping costs what it saves).
DEFAULT_COMPACT_RECORDS = 100_000
_SLACK = 1e-6  # float32 rounding in the exact products and the scale arithmetic
_CHUNK = 65_536
_ONE_US = timedelta(microseconds=1)
# The int8 scan's threads: 0 splits each scan over every core (SimSIMD's OpenMP takes the
# processor count, whatever OMP_NUM_THREADS says). See set_scan_threads.
_scan_threads = 0


@cache
def _simsimd() -> Any:
    try:
        import simsimd
    except ImportError:
        return None
    return simsimd


def available() -> bool:
    """Whether the int8 scan can run (``simsimd`` is installed)."""
    return _simsimd() is not None


def set_scan_threads(count: int) -> int:
    """Run this process's int8 scans on ``count`` threads (0, the default: one per core);
    returns the count before. A process answering many reads at once (``chronomem serve``)
    wants 1: split over both cores of a two-core machine, a scan took 2.1 ms instead of 3.9 ms
    alone, but its second thread kept waiting busily for work after each scan, so a read took
    about twice the processor time — two processes reading at once each read in 22–24 ms
    instead of 13–14 ms on one thread (docs/http.md, "Threads")."""
    global _scan_threads
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ConfigError(
            f"scan threads must be a whole number >= 0 (0: every core); got {count!r}"
        )
    before, _scan_threads = _scan_threads, count
    return before


def quantize(rows: F32) -> tuple[npt.NDArray[np.int8], F32, F32]:
    """Per-row symmetric int8 codes, scales and error norms of ``rows`` (unit or zero rows)."""
    wide = rows.astype(np.float64)
    scale = np.abs(wide).max(axis=1) / 127.0 if wide.size else np.zeros(rows.shape[0])
    safe = np.where(scale > 0, scale, 1.0)
    codes = np.clip(np.rint(wide / safe[:, None]), -127, 127)
    err = np.linalg.norm(wide - codes * safe[:, None], axis=1)
    # the float32 scale must reproduce the codes' value: the error is measured with it
    return codes.astype(np.int8), scale.astype(np.float32), (err * (1 + 1e-6)).astype(np.float32)


@dataclass(slots=True)
class Codes:
    """Full-capacity arrays, like :class:`~chronomem.retrieval.index.AgentArrays`' columns."""

    codes: npt.NDArray[np.int8]
    scale: F32
    err: F32

    @classmethod
    def of(cls, emb: F32, n: int) -> Codes:
        """The codes of the first ``n`` rows of ``emb``, with ``emb``'s capacity."""
        cap, dim = emb.shape
        out = cls(
            np.zeros((cap, dim), dtype=np.int8),
            np.zeros(cap, dtype=np.float32),
            np.zeros(cap, dtype=np.float32),
        )
        for start in range(0, n, _CHUNK):
            stop = min(n, start + _CHUNK)
            out.write(np.arange(start, stop), emb[start:stop])
        return out

    def write(self, at: npt.NDArray[np.intp], rows: F32) -> None:
        self.codes[at], self.scale[at], self.err[at] = quantize(rows)

    def grow(self, n: int, cap: int) -> None:
        for name in ("codes", "scale", "err"):
            old = getattr(self, name)
            new = np.zeros((cap, *old.shape[1:]), dtype=old.dtype)
            new[:n] = old[:n]
            setattr(self, name, new)

    def keep(self, keep: Mask, n: int) -> None:
        """Drop the rows of the first ``n`` not in ``keep``, moving the others up."""
        for name in ("codes", "scale", "err"):
            arr = getattr(self, name)
            kept = arr[:n][keep]
            arr[: kept.shape[0]] = kept


def cosines(codes: Codes, n: int, query: F32) -> tuple[F64, float]:
    """Approximate products of the first ``n`` (unit) rows with ``query``, and a bound on their
    error (each exact product lies within ``approx ± bound``): the bound of the row whose codes
    are furthest from it, so the reads that follow pass over scalars, not another column."""
    simsimd = _simsimd()
    q_codes, q_scale, q_err = quantize(np.asarray(query, dtype=np.float32)[None, :])
    q_norm = float(np.linalg.norm(query.astype(np.float64)))
    products = simsimd.cdist(q_codes, codes.codes[:n], metric="dot", threads=_scan_threads)
    dots = np.asarray(products, dtype=np.float64)[0]
    approx = np.multiply(dots, codes.scale[:n])
    approx *= float(q_scale[0])
    err = float(codes.err[:n].max()) if n else 0.0
    return approx, (1.0 + err) * float(q_err[0]) + err * q_norm + _SLACK


def widen_extremes(
    dense: F64, bound: float, mask: Mask | None, exact: Callable[[Rows], F64]
) -> None:
    """Make the candidates' smallest and largest cosines exact, in place (min-max normalisation
    maps them to 0 and 1): every row whose interval reaches past the best guaranteed extreme gets
    its exact cosine. Then no other row's approximation lies outside them."""
    if mask is None:
        top, low = float(dense.max()) - bound, float(dense.min()) + bound
        rows = np.flatnonzero((dense >= top - bound) | (dense <= low + bound))
    else:
        if not mask.any():
            return
        top = float(np.max(dense, where=mask, initial=-np.inf)) - bound
        low = float(np.min(dense, where=mask, initial=np.inf)) + bound
        rows = np.flatnonzero(mask & ((dense >= top - bound) | (dense <= low + bound)))
    dense[rows] = exact(rows)


def refine(
    scores: Scores, bound: float, exact: Callable[[Rows], F64], k: int
) -> tuple[Scores, float]:
    """Exact final scores for every row that can be among the top ``k``, and the *ceiling*: every
    row left with its approximate score scores below it, exactly and approximately (``-inf``:
    every score is exact).

    A row's final score moves with its cosine by at most ``slope`` per unit (the relevance
    weight, its dense share, the normalisation's scale and the row's lifecycle factor; no causal
    boost on this path), so it lies within ``final ± slope * bound``. Rows whose upper end reaches
    the k-th best lower end get their exact cosine and score; the others cannot overtake them."""
    c, config = scores.candidates, scores.config
    assert c.dense is not None
    coef = config.weights.relevance * dense_slope(config, scores.relevance_mode)
    coef *= scores.norm_dense.scale
    final = scores.final
    if c.factor is None:  # one width for every row: the k-th best score less twice it
        width = coef * bound
        kth = _kth(final, k)
        rows = np.flatnonzero(final >= kth - 2.0 * width) if np.isfinite(kth) else None
        ceiling = kth - width  # (a row left out: final + width < kth - width)
        slope: F64 | float = coef
    else:
        slope = coef * c.factor
        widths = slope * bound
        lower = final - widths
        kth = _kth(lower, k)
        rows = np.flatnonzero(final + widths >= kth) if np.isfinite(kth) else None
        ceiling = kth
    if rows is None:  # fewer than k candidates: every one of them
        rows = np.flatnonzero(np.isfinite(final))
        ceiling = -np.inf
    values = exact(rows)
    fixed = config.normalisation is Normalisation.FIXED

    def used(d: F64) -> F64:
        return np.clip(d, 0.0, 1.0) if fixed else d

    final = final.copy()
    if not linear_in_cosine(config):  # (fixed normalisation: a row's score is its own)
        c.dense[rows] = values
        again = _subset(c, config, scores.as_of_us, rows)
        final[rows] = again.final
        if scores.dense_used is not None and scores.dense_used is not c.dense:
            assert again.dense_used is not None
            scores.dense_used[rows] = again.dense_used
        return replace(scores, final=final), ceiling
    step = slope if isinstance(slope, float) else slope[rows]
    final[rows] += step * (used(values) - used(c.dense[rows]))
    c.dense[rows] = values
    if scores.dense_used is not None and scores.dense_used is not c.dense:
        scores.dense_used[rows] = used(values)
    return replace(scores, final=final), ceiling


def _kth(values: F64, k: int) -> float:
    """The k-th largest value (``-inf`` when there are at most k), selected from the negated
    values: numpy's selection of the largest is slow when many rows tie at -inf."""
    n = values.shape[0]
    return float(-np.partition(-values, k - 1)[k - 1]) if n > k else -np.inf


def linear_in_cosine(config: ScoringConfig) -> bool:
    """Whether a score moves with the cosine by a fixed slope per row, so :func:`refine` can
    patch it. A floored hybrid fusion (``dense_floor`` above ``dense_share``) is not: a row's
    relevance follows the larger of two lines, and its exact score is computed again."""
    return not (
        config.relevance is RelevanceMode.HYBRID and config.dense_floor > config.dense_share
    )


def boundable(config: ScoringConfig) -> bool:
    """Whether a read under ``config`` can rank over the int8 copy's cosines: a score linear in
    the cosine, or a floored hybrid fusion with fixed normalisation — its relevance
    ``max(floor · d, share · d + (1 - share) · lexical)`` moves by at most ``max(share,
    floor)`` per unit of cosine, and each row's score depends on that row alone, so the rows
    that can reach the top are scored again exactly."""
    return linear_in_cosine(config) or config.normalisation is Normalisation.FIXED


def dense_slope(config: ScoringConfig, mode: RelevanceMode) -> float:
    """The most a row's relevance moves per unit of (normalised) cosine under relevance
    ``mode``: the dense share, or under a floored hybrid fusion the floor — which is also the
    slope of a row matching no query term (its relevance is ``floor · d``)."""
    share = {RelevanceMode.DENSE: 1.0, RelevanceMode.LEXICAL: 0.0}.get(mode, config.dense_share)
    if mode is RelevanceMode.HYBRID and config.dense_floor > share:
        return config.dense_floor
    return share


def best_scores(
    c: Candidates, config: ScoringConfig, as_of_us: int, bound: float,
    exact: Callable[[Rows], F64], k: int,
) -> tuple[Scores, float]:  # fmt: skip
    """The scores of a read over the int8 copy's cosines ``c.dense`` (each within ``bound`` of
    the exact one; with min-max normalisation, exact at the candidates' extremes: see
    :func:`widen_extremes`), exact for every row that can be among the top ``k``, and the
    ceiling below which every other row scores (see :func:`refine`).

    Scores only the rows that can reach the top ``k`` when blocks of rows bound the rest (see
    :func:`_bounded`); otherwise scores every row and refines (:func:`refine`)."""
    bounded = _bounded(c, config, as_of_us, bound, exact, k)
    if bounded is not None:
        return bounded
    return refine(score(c, config, as_of_us=as_of_us), bound, exact, k)


def _bounded(
    c: Candidates, config: ScoringConfig, as_of_us: int, bound: float,
    exact: Callable[[Rows], F64], k: int,
) -> tuple[Scores, float] | None:  # fmt: skip
    """Block-max pruning: ``None`` when it does not apply or would not pay.

    Every term of the episodic score is non-negative and non-decreasing in its raw column
    (weights are non-negative; recency falls with age), so a block of consecutive rows (rows
    arrive in recording order, so a block's access times are close) bounds its rows' final
    scores by its latest access time, largest importance and factor, with each row's own cosine
    bound; rows matching a query term are all kept. The rows of the best blocks are scored
    exactly: their ``k``-th best score is a floor that no row whose bound stays below it can
    reach. The rows left are scored and refined (:func:`refine`), with the normalisation of
    every candidate: the rows carrying each component's extremes are scored with them."""
    mode = effective_relevance(config.relevance, has_query_vector=True)
    share = {RelevanceMode.DENSE: 1.0, RelevanceMode.LEXICAL: 0.0}.get(mode, config.dense_share)
    n = c.importance.shape[0]
    block = int(np.clip(n // 256, 64, 1024))
    if config.recency is RecencyMode.ORDINAL or c.boost is not None or share == 0.0:
        return None
    if not boundable(config):  # recall.py never comes here with one
        return None
    if n < 8 * block or n < 16 * k:
        return None
    assert c.dense is not None
    fixed = config.normalisation is Normalisation.FIXED
    mask = c.mask
    lexical = c.lexical if share < 1.0 else None
    columns: list[npt.NDArray[Any]] = [c.dense, c.last_accessed_at, c.importance]
    if lexical is not None:
        columns.append(lexical)
    low_fill = [-np.inf, np.iinfo(np.int64).min, -np.inf, -np.inf]
    high_fill = [np.inf, np.iinfo(np.int64).max, np.inf, np.inf]
    starts = np.arange(0, n, block)
    highs: list[npt.NDArray[Any]] = []
    extremes: list[int] = []
    for values, low, high in zip(columns, low_fill, high_fill, strict=False):
        masked = values if mask is None else np.where(mask, values, low)
        top = np.maximum.reduceat(masked, starts)
        if len(highs) < 3:
            highs.append(top)
        at = int(starts[np.argmax(top)])  # the largest is in the block with the largest
        extremes.append(at + int(np.argmax(masked[at : at + block])))
        if not fixed:
            extremes.append(
                int(np.argmin(values if mask is None else np.where(mask, values, high)))
            )
    factor = 1.0
    if c.factor is not None:
        factor = float(
            np.max(c.factor, where=mask, initial=0.0) if mask is not None else c.factor.max()
        )
    ends = np.unique(np.asarray(extremes, dtype=np.intp))
    norms = _subset(c, config, as_of_us, ends, exact)  # the candidates' normalisation maps
    w = config.weights
    # (a row matching no query term: its relevance is share · d, or floor · d when floored)
    dense_coef = w.relevance * dense_slope(config, mode) * norms.norm_dense.scale
    if not dense_coef > 0.0 or not factor > 0.0:
        return None
    # each block's most for the terms other than relevance
    others = w.recency * norms.norm_recency(
        elapsed_recency(highs[1], as_of_us, config.recency_decay, config.recency_unit // _ONE_US)
    )
    others += w.importance * norms.norm_importance(highs[2])
    if c.speaker is not None and config.speaker_weight:
        others += w.relevance * config.speaker_weight
    rest = others + w.relevance * share * norms.norm_dense.shift
    if lexical is not None:  # rows matching no query term (the matching ones: _lexical_reach)
        rest += w.relevance * (1.0 - share) * norms.norm_lexical.shift
    d_high = highs[0] + bound
    block_high = factor * (dense_coef * (np.clip(d_high, 0.0, 1.0) if fixed else d_high) + rest)
    block_high[~np.isfinite(highs[0])] = -np.inf  # blocks without a candidate
    # The rows of the best blocks, some 32 k of them, score exactly: their k-th best is a
    # floor for the k-th best of all.
    best = np.argsort(-block_high, kind="stable")[: max(2, -(-32 * k // block))]
    probe = np.concatenate([np.arange(s, min(n, s + block)) for s in starts[best].tolist()])
    if mask is not None:
        probe = probe[mask[probe]]
    probe = np.union1d(probe, ends)
    first = _subset(c, config, as_of_us, probe, exact)
    if first.final.shape[0] < k:
        return None
    floor = float(np.partition(first.final, first.final.shape[0] - k)[-k])
    floor -= 1e-9 * (1.0 + abs(floor))  # the bound's arithmetic is not the score's
    # Per block, the cosine a row needs to reach the floor (the dense term is the only one
    # left to the row).
    need = (floor / factor - rest) / dense_coef
    if fixed:  # the cosine is clipped to [0, 1]
        need = np.where(need <= 0.0, -np.inf, np.where(need > 1.0, np.inf, need))
    need[block_high < floor] = np.inf
    reach = np.empty(n, dtype=np.bool_)
    whole = (n // block) * block  # the full blocks side by side, then the last one
    np.greater_equal(
        c.dense[:whole].reshape(-1, block), (need - bound)[: n // block, None],
        out=reach[:whole].reshape(-1, block),
    )  # fmt: skip
    reach[whole:] = c.dense[whole:] >= need[-1] - bound
    if mask is not None:
        reach &= mask
    if lexical is not None:
        reach[_lexical_reach(c, config, norms, others, block, bound, floor, share)] = True
    reach[probe] = True
    rows = np.flatnonzero(reach)  # (sorted, each once: what the subset's scores need)
    if rows.shape[0] > n // 2:
        return None
    # The top k lies among these rows: score them, then refine the ones that can be in it.
    part, ceiling = refine(_subset(c, config, as_of_us, rows), bound, lambda at: exact(rows[at]), k)
    assert part.candidates.dense is not None
    c.dense[rows] = part.candidates.dense
    # (the rows left out score below the floor: their bounds do)
    return _scatter(c, part, rows), max(ceiling, floor)


def _lexical_reach(
    c: Candidates, config: ScoringConfig, norms: Scores, others: F64, block: int, bound: float,
    floor: float, share: float,
) -> Rows:  # fmt: skip
    """The candidates matching a query term whose score can reach ``floor``: each bounded by
    its own lexical relevance (exact) and highest possible cosine (``dense + bound``), with its
    block's most for the other terms (``others``) and its own lifecycle factor. A common word
    matches a quarter of a conversation's turns; keeping them all scored most of the rows of a
    read that asked for ten."""
    assert c.lexical is not None
    assert c.dense is not None
    matched = c.lexical > 0.0
    if c.mask is not None:
        matched &= c.mask
    rows = np.flatnonzero(matched)
    fixed = config.normalisation is Normalisation.FIXED
    high = c.dense[rows] + bound
    lexical = c.lexical[rows]
    if fixed:
        np.clip(high, 0.0, 1.0, out=high)
        lexical = fixed_lexical(lexical, config.bm25_half)
    dense, words = norms.norm_dense(high), norms.norm_lexical(lexical)
    relevance = floored(dense, words, share, max(config.dense_floor, 0.0))
    if c.unread is not None:  # rows in a language the model does not read: words alone
        np.maximum(relevance, words, out=relevance)
    upper = relevance * config.weights.relevance
    upper += others[rows // block]
    if c.factor is not None:
        upper *= c.factor[rows]
    return rows[upper >= floor]


def _subset(
    c: Candidates,
    config: ScoringConfig,
    as_of_us: int,
    rows: Rows,
    exact: Callable[[Rows], F64] | None = None,
) -> Scores:
    """The scores of ``rows`` (candidates all) alone, with their exact cosines when ``exact``
    is given (also written to ``c.dense``)."""

    def take(values: npt.NDArray[Any] | None) -> Any:
        return None if values is None else values[rows]

    assert c.dense is not None
    if exact is not None:
        c.dense[rows] = exact(rows)
    part = replace(
        c, mask=None, importance=c.importance[rows], last_accessed_at=c.last_accessed_at[rows],
        recorded_at=c.recorded_at[rows], ids=c.ids[rows], dense=c.dense[rows],
        lexical=take(c.lexical), factor=take(c.factor), speaker=take(c.speaker), inserted=None,
        listed_after=None, unread=take(c.unread),
    )  # fmt: skip
    return score(part, config, as_of_us=as_of_us)


def _scatter(c: Candidates, part: Scores, rows: Rows) -> Scores:
    """``part`` (the scores of ``rows``) as the scores of every row: the others are not
    candidates (``-inf``)."""
    n = c.importance.shape[0]

    def spread(values: F64) -> F64:
        out = np.zeros(n, dtype=np.float64)
        out[rows] = values
        return out

    final = np.full(n, -np.inf)
    final[rows] = part.final
    return replace(
        part, candidates=c, recency_raw=spread(part.recency_raw), final=final,
        dense_used=None if part.dense_used is None else spread(part.dense_used),
        lexical_used=None if part.lexical_used is None else spread(part.lexical_used),
    )  # fmt: skip
