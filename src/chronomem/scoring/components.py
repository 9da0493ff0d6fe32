"""Score components and their normalisation (DESIGN §2 steps 2–3). Pure functions on arrays.

Normalisations are returned as :class:`Affine` maps (``x * scale + shift``) instead of normalised
arrays: the engine folds them into one weighted sum over the raw components, and computes
normalised values only for the rows it explains. Functions that take a boolean ``mask`` of the
candidates ignore rows outside it when computing ranges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from chronomem.arrays import F64, I64, Mask

__all__ = [
    "Affine",
    "elapsed_recency",
    "fixed_lexical",
    "minmax",
    "value_range",
    "ordinal_positions",
    "ordinal_recency",
]


@dataclass(frozen=True, slots=True)
class Affine:
    """``x -> x * scale + shift``: a normalisation, applied lazily."""

    scale: float
    shift: float

    def __call__(self, values: F64) -> F64:
        return values * self.scale + self.shift

    def at(self, value: float) -> float:
        return float(value) * self.scale + self.shift


IDENTITY = Affine(1.0, 0.0)


def elapsed_recency(last_accessed_us: I64, as_of_us: int, decay: float, unit_us: int) -> F64:
    """``decay ** (age / unit)`` with ``age = max(0, as_of - last_accessed)`` (the paper's recency).

    Ages are integer microseconds, so shifting every instant and ``as_of`` by the same amount
    changes nothing. A record accessed after ``as_of`` (or stamped in the future) has age 0.
    The result is in (0, 1] and non-increasing in age.
    """
    age = np.subtract(np.int64(as_of_us), last_accessed_us)
    np.maximum(age, 0, out=age)
    if decay == 1.0:
        return np.ones(age.shape[0], dtype=np.float64)
    out = age.astype(np.float64)
    out *= math.log(decay) / float(unit_us)
    return np.exp(out, out=out)


def ordinal_positions(last_accessed_us: I64, listed_after: Mask, inserted: I64, mask: Mask) -> I64:
    """Each candidate's 1-based position in the Generative Agents code's recency order (0 outside
    ``mask``): last access ascending, with a stable sort over the code's candidate list — its
    event list, then its thought list (``listed_after``), each most recently inserted first
    (``inserted``: the store keys, which grow with every write). Equal access times are the
    normal case there (bootstrap memories, one step's perceptions, one retrieval's stamps, every
    node after a load), so this order decides most positions. Positions are unique."""
    out = np.zeros(last_accessed_us.shape[0], dtype=np.int64)
    candidates = np.flatnonzero(mask)
    if candidates.size:
        order = np.lexsort(
            (-inserted[candidates], listed_after[candidates], last_accessed_us[candidates])
        )
        out[candidates[order]] = np.arange(1, candidates.size + 1, dtype=np.int64)
    return out


def ordinal_recency(positions: I64, decay: float) -> F64:
    """The code's recency: ``decay ** i`` at position ``i`` (1 = accessed longest ago, so the
    *oldest*-accessed memory gets the highest value); 0 where the position is 0."""
    # Python's ``decay ** i`` (C ``pow``), as the code computes it: ``np.power`` can differ in
    # the last bit, enough to reorder the code's exactly equal scores.
    top = int(positions.max(initial=0))
    table = np.array([0.0, *(decay**i for i in range(1, top + 1))], dtype=np.float64)
    return table[positions]


def value_range(values: F64, mask: Mask | None) -> tuple[float, float]:
    """The lowest and highest value over the candidates (``mask=None``: every row)."""
    if mask is None:
        return float(values.min()), float(values.max())
    return (
        float(np.min(values, where=mask, initial=np.inf)),
        float(np.max(values, where=mask, initial=-np.inf)),
    )


def minmax(values: F64, mask: Mask | None) -> Affine:
    """Rescale to [0, 1] over the candidates (``mask=None``: every row is one); a zero range maps
    everything to 0.5, never NaN."""
    if values.shape[0] == 0 or (mask is not None and not mask.any()):
        return Affine(0.0, 0.5)
    lo, hi = value_range(values, mask)
    span = hi - lo
    if not span > 0.0 or not math.isfinite(span):
        return Affine(0.0, 0.5)
    return Affine(1.0 / span, -lo / span)


def fixed_lexical(values: F64, half: float = 2.0) -> F64:
    """BM25 saturated into [0, 1): ``bm25 / (bm25 + half)`` — absolute, so comparable across
    calls, and a weak match stays weak even when it is the best one there is."""
    return values / (values + half)
