"""A hit's raw query cosine (``Hit.similarity``) and the ranking by it (``rank_by="similarity"``,
what a vector store's ``search`` promises; the LangGraph adapter reads with it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from chronomem.arrays import F64, Mask, Rows
from chronomem.retrieval.columns import Columns
from chronomem.scoring.score import Scores

__all__ = ["by_similarity", "similarity_of"]


def by_similarity(scores: Scores, cols: Columns, dense: F64 | None, chosen: Mask | None) -> Scores:
    """The scores to rank by for ``rank_by="similarity"``: each candidate's raw query cosine
    (in [-1, 1]); candidates without one (no vector, or outside the pre-selection) below every
    cosine, in the order of their scores (an affine map into [-4, -2])."""
    if dense is None:
        return scores
    has = cols.cat("has_embedding") if chosen is None else cols.cat("has_embedding") & chosen
    finite = np.isfinite(scores.final)
    rest = scores.final[finite & ~has]
    low, high = (float(rest.min()), float(rest.max())) if rest.size else (0.0, 0.0)
    spread = (scores.final - low) / (high - low) if high > low else np.zeros_like(scores.final)
    final = np.where(has, dense, -4.0 + 2.0 * spread)
    return replace(scores, final=np.where(finite, final, -np.inf), positions=None)


def similarity_of(
    cols: Columns,
    dense: F64 | None,
    chosen: Mask | None,
    exact: Callable[[Rows], F64] | None,
    rows: list[int],
) -> list[float | None]:
    """The raw query cosine of each hit's row (:attr:`Hit.similarity`): exact where the read
    scanned the int8 copy, ``None`` for a record without a vector or outside the pre-selection."""
    if dense is None or not rows:
        return [None] * len(rows)
    at = np.asarray(rows, dtype=np.intp)
    values = exact(at) if exact is not None else dense[at]
    has = cols.cat("has_embedding")[at]
    if chosen is not None:
        has = has & chosen[at]
    return [float(v) if h else None for v, h in zip(values.tolist(), has.tolist(), strict=True)]
