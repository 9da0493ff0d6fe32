"""What a review proposes (DESIGN §3): pure functions over one agent's columns that find stale,
unused, unlinked-version, near-duplicate and pushed-down records. They decide; the engine
(``engine/review.py``) persists the proposals and applies the approved ones."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chronomem.arrays import F32, F64, I64, Mask
from chronomem.config import LifecycleConfig, ReviewConfig
from chronomem.model.review import ReviewAction

__all__ = [
    "Columns",
    "Found",
    "duplicates",
    "one_per_record",
    "pushed_down",
    "stale",
    "unused",
    "versions",
]

_DAY_US = 86_400_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Columns:
    """One agent's open records at the review's instant. ``decay``: the staleness factor
    (1 for kinds that do not decay); ``versioned``: facts and instructions; ``vectors``: unit
    vectors (``None`` without an embedder); ``reads``: access-log reads in the window, by row."""

    ids: list[str]
    recorded_at: I64
    last_accessed_at: I64
    last_verified_at: I64
    feedback: F64
    decay: F64
    versioned: Mask
    domains: I64
    vectors: F32 | None
    reads: I64


@dataclass(frozen=True, slots=True)
class Found:
    action: ReviewAction
    category: str
    rows: tuple[int, ...]
    reasons: tuple[str, ...]
    figures: Mapping[str, Any] = field(default_factory=dict)


def _days(us: int) -> float:
    return round(us / _DAY_US, 1)


def stale(c: Columns, as_of_us: int, life: LifecycleConfig, limit: int) -> list[Found]:
    """Facts and instructions at the decay floor: confirm them (``verify``) or let them go.
    Those still read (the access log) come first."""
    rows = np.flatnonzero(c.decay <= life.floor + 1e-12)
    order = np.lexsort((c.recorded_at[rows], -c.reads[rows]))
    out = []
    for row in rows[order][:limit].tolist():
        idle = as_of_us - max(int(c.last_accessed_at[row]), int(c.last_verified_at[row]))
        reads = int(c.reads[row])
        said = f"not recalled or verified for {_days(idle)} days: ranked at the decay floor"
        times = "once" if reads == 1 else f"{reads} times"
        also = f"; yet read {times} recently — verify it if it still holds" if reads else ""
        out.append(Found(ReviewAction.VERIFY, "stale", (row,), (said + also,),
                         {"idle_days": _days(idle), "decay": float(c.decay[row]),
                          "recent_reads": reads}))  # fmt: skip
    return out


def unused(c: Columns, as_of_us: int, config: ReviewConfig, limit: int) -> list[Found]:
    """Records no read ever returned and nobody verified, older than ``unused_after``:
    candidates to forget (the engine keeps only those nothing depends on). A verified record is
    one a person confirmed: never proposed for forgetting as unused."""
    age = as_of_us - c.recorded_at
    never = (
        (c.last_accessed_at <= c.recorded_at)
        & (c.last_verified_at <= c.recorded_at)
        & (c.reads == 0)
    )
    rows = np.flatnonzero(never & (age >= config.unused_after.total_seconds() * 1e6))
    rows = rows[np.argsort(c.recorded_at[rows], kind="stable")][:limit]
    out = []
    for row in rows.tolist():
        days = _days(int(age[row]))
        said = f"never returned by a read in {days} days"
        out.append(Found(ReviewAction.FORGET, "unused", (row,), (said,), {"age_days": days}))
    return out


def _similar_pairs(vectors: F32, rows: Any, threshold: float) -> list[tuple[int, int, float]]:
    """Pairs ``(i, j, cosine)`` of ``rows`` at or above ``threshold``, by blocks of 512."""
    pairs = []
    sub = vectors[rows]
    for start in range(0, len(rows), 512):
        block = sub[start : start + 512] @ sub.T
        for a, b in zip(*np.nonzero(block >= threshold), strict=True):
            i, j = start + int(a), int(b)
            if i < j:
                pairs.append((int(rows[i]), int(rows[j]), float(block[a, b])))
    return pairs


def _newer_last(c: Columns, i: int, j: int) -> tuple[int, int]:
    older, newer = sorted((i, j), key=lambda r: (int(c.recorded_at[r]), c.ids[r]))
    return older, newer


def versions(c: Columns, config: ReviewConfig, limit: int) -> list[Found]:
    """Open facts or instructions of one domain — or both without one — that say nearly the
    same thing with no supersession between them: the newer is probably a new version of the
    older."""
    if c.vectors is None:
        return []
    out = []
    for domain in np.unique(c.domains[c.versioned]).tolist():
        rows = np.flatnonzero(c.versioned & (c.domains == domain))
        where = "same domain" if domain != 0 else "neither has a domain"
        for i, j, cosine in _similar_pairs(c.vectors, rows, config.version_cosine):
            older, newer = _newer_last(c, i, j)
            out.append(Found(ReviewAction.SUPERSEDE, "unlinked-version", (older, newer),
                             (f"{where}, cosine {cosine:.2f}, and no supersession between "
                              "them: is the newer one a correction of the older?",),
                             {"cosine": round(cosine, 4)}))  # fmt: skip
    return out[:limit]


# The single-record findings from the most urgent: close what misled, verify what went stale,
# forget what nobody used.
_URGENCY = ("pushed-down", "stale", "unused")


def one_per_record(found: list[Found]) -> list[Found]:
    """At most one single-record proposal per record: the most urgent finding's action, with
    every finding's reasons (a record both stale and never used is one decision, not two).
    Findings about several records are kept as they are."""
    best: dict[int, Found] = {}
    others: dict[int, list[Found]] = {}
    out = []
    for f in found:
        if len(f.rows) != 1 or f.category not in _URGENCY:
            out.append(f)
            continue
        row = f.rows[0]
        others.setdefault(row, []).append(f)
        kept = best.get(row)
        if kept is None or _URGENCY.index(f.category) < _URGENCY.index(kept.category):
            best[row] = f
    for row, chosen in best.items():
        also = [r for f in others[row] if f is not chosen for r in f.reasons]
        figures = {k: v for f in others[row] for k, v in f.figures.items()}
        out.append(Found(chosen.action, chosen.category, chosen.rows,
                         (*chosen.reasons, *(f"also {r}" for r in also)), figures))  # fmt: skip
    return out


def duplicates(
    c: Columns, config: ReviewConfig, limit: int, taken: set[tuple[int, ...]]
) -> list[Found]:
    """Open records nearly identical to another (cosine ≥ ``duplicate_cosine``), among the newest
    ``max_records``; pairs already proposed as versions are skipped."""
    if c.vectors is None or len(c.ids) < 2:
        return []
    newest = np.argsort(-c.recorded_at, kind="stable")[: config.max_records]
    out = []
    for i, j, cosine in _similar_pairs(c.vectors, np.sort(newest), config.duplicate_cosine):
        pair = _newer_last(c, i, j)
        if pair in taken:
            continue
        out.append(Found(ReviewAction.SUPERSEDE, "near-duplicate", pair,
                         (f"nearly the same text (cosine {cosine:.2f}): keep the newer one",),
                         {"cosine": round(cosine, 4)}))  # fmt: skip
    return out[:limit]


def pushed_down(c: Columns, config: ReviewConfig, limit: int) -> list[Found]:
    """Records rated down to ``pushed_down`` or below: they misled someone; close them?"""
    rows = np.flatnonzero(c.feedback <= config.pushed_down)
    rows = rows[np.argsort(c.feedback[rows], kind="stable")][:limit]
    out = []
    for row in rows.tolist():
        score = float(c.feedback[row])
        said = f"rated down to {score:g}: it misled; close it if it no longer holds"
        out.append(Found(ReviewAction.CLOSE, "pushed-down", (row,), (said,), {"feedback": score}))
    return out
