"""Version-aware ranking (DESIGN §2, issue: retrieval quality): among the best candidates, a record
with a newer near-duplicate is an older version of the same fact — it is demoted and its update
inherits part of its score — and among the candidates that score close to the best (within a
fraction of it) and are versions of one fact (alike to each other), the later are preferred. A
soft preference on a handful of rows, not a global decay: an unrelated newer fact about the same
person is not lifted over the one that answers.

Pure: scores, unit vectors and instants of the top rows in, adjusted scores and the adjustments out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import numpy as np

from chronomem.arrays import F32, F64, I64
from chronomem.config import VersionConfig

__all__ = ["VersionAdjustment", "adjust_versions", "spread_sessions"]

_ONE_US = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class VersionAdjustment:
    """New scores of the rows, and per row: the factor it was demoted by (1: none), the bonus it
    inherited as an update, and its in-band recency bonus."""

    scores: F64
    demoted: F64
    inherited: F64
    recent: F64


def adjust_versions(
    scores: F64, vectors: F32, recorded_at: I64, config: VersionConfig
) -> VersionAdjustment:
    """Adjust the scores of the top rows (``vectors`` unit-normalised, ``recorded_at`` in
    microseconds). A record is a newer version only when recorded at least ``config.newer_after``
    later, and in-band recency is measured over at least ``config.recency_span``, so turns minutes
    apart in one conversation count as simultaneous. Only differences of instants are used:
    shifting every instant changes nothing."""
    n = scores.shape[0]
    gap = recorded_at[None, :] - recorded_at[:, None]  # gap[i, j] > 0: j recorded after i
    similar = (vectors @ vectors.T) >= config.similarity
    link = similar & (gap >= config.newer_after // _ONE_US)  # link[i, j]: j is a newer version
    demoted = np.where(link.any(axis=1), 1.0 - config.demote, 1.0)
    inherited = config.inherit * np.max(np.where(link, scores[:, None], 0.0), axis=0, initial=0.0)
    adjusted = scores * demoted + inherited
    recent = np.zeros(n, dtype=np.float64)
    best = float(adjusted.max()) if n else 0.0
    if config.band > 0 and config.band_weight > 0 and best > 0:
        in_band = adjusted >= best * (1.0 - config.band)
        # Only versions of one fact compete by recency: each in-band row is measured against the
        # in-band rows at least ``same_fact`` alike (itself included); alone, it gains nothing.
        alike = (vectors @ vectors.T >= config.same_fact) & in_band[:, None] & in_band[None, :]
        times = np.where(alike, recorded_at[None, :], np.iinfo(np.int64).max)
        low = times.min(axis=1)
        high = np.where(alike, recorded_at[None, :], np.iinfo(np.int64).min).max(axis=1)
        span = np.maximum(high - low, config.recency_span // _ONE_US).astype(np.float64)
        grouped = in_band & (alike.sum(axis=1) > 1)
        recent = np.where(grouped, config.band_weight * best * (recorded_at - low) / span, 0.0)
    return VersionAdjustment(adjusted + recent, demoted, inherited, recent)


def spread_sessions(scores: F64, occurred_at: I64, gap_us: int, spread: float) -> F64:
    """The factor of each of the top rows that puts every session's best row ahead of the
    session's others: rows whose ``occurred_at`` lie within ``gap_us`` of each other (in time
    order) form a session; the best-scoring row of a session keeps its score, the next loses
    ``spread`` of it, the one after ``1 - (1 - spread) ** 2``, and so on. Ties go to the earlier
    row, so the order the rows arrive in never matters beyond their scores."""
    n = scores.shape[0]
    if n == 0 or spread == 0.0:
        return np.ones(n, dtype=np.float64)
    by_time = np.argsort(occurred_at, kind="stable")
    starts = np.empty(n, dtype=np.bool_)
    starts[0] = True
    starts[1:] = np.diff(occurred_at[by_time]) > gap_us
    session = np.empty(n, dtype=np.int64)
    session[by_time] = np.cumsum(starts) - 1
    order = np.lexsort((occurred_at, -scores, session))  # each session, best first
    first = np.ones(n, dtype=np.bool_)
    first[1:] = session[order][1:] != session[order][:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    place = np.empty(n, dtype=np.int64)
    place[order] = np.arange(n) - group_start
    return np.power(1.0 - spread, place.astype(np.float64))
