"""One read, stage by stage (DESIGN §2): candidates, components, score, rank, dedup, hits.

This module reads the store and the in-memory arrays but never writes; touching is the engine's
job, after the hits are known.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.clock import to_micros
from chronomem.config import ScoringConfig
from chronomem.model.record import Breakdown, Hit, Kind, Record
from chronomem.retrieval.index import KIND_CODES, AgentArrays, SpaceIndex
from chronomem.scoring.score import Candidates, Scores, rank, score
from chronomem.stores.base import MemoryStore

__all__ = ["Query", "search"]

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    """A validated read request.

    ``vector`` is the unit-normalised query embedding, or ``None`` (lexical relevance only).
    ``valid_at`` is the world-time instant for validity windows (default: ``as_of``).
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


@dataclass(frozen=True, slots=True)
class _Columns:
    """The loaded agents' columns side by side (views when there is one agent)."""

    arrays: list[AgentArrays]
    offsets: npt.NDArray[np.intp]

    def cat(self, name: str) -> npt.NDArray[Any]:
        parts = [getattr(a, name)[: a.n] for a in self.arrays]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    @property
    def size(self) -> int:
        return int(self.offsets[-1])


def _visible(cols: _Columns, q: Query) -> npt.NDArray[np.bool_] | None:
    """DESIGN §2 step 1: recorded by ``as_of``, open at ``as_of`` and valid at ``valid_at``.

    Returns ``None`` when every row is a candidate (the common case, found from per-agent
    bounds without a pass over the rows).
    """
    as_of_us = to_micros(q.as_of)
    valid_at_us = as_of_us if q.valid_at is None else to_micros(q.valid_at)
    filtered = q.kinds is not None or bool(q.config.exclude_kinds) or bool(q.config.exclude_text)
    if not filtered:
        everything = True
        for a in cols.arrays:
            max_recorded, min_superseded, max_valid_from, min_valid_until = a.bounds()
            everything &= max_recorded <= as_of_us
            if not q.include_history:
                everything &= min_superseded > as_of_us and max_valid_from <= valid_at_us
                everything &= min_valid_until > valid_at_us
        if everything:
            return None
    mask = cols.cat("recorded_at") <= as_of_us
    if not q.include_history:
        mask &= cols.cat("superseded_at") > as_of_us
        mask &= cols.cat("valid_from") <= valid_at_us
        mask &= cols.cat("valid_until") > valid_at_us
    kind = cols.cat("kind")
    if q.kinds is not None:
        mask &= np.isin(kind, [KIND_CODES[k] for k in q.kinds])
    if q.config.exclude_kinds:
        mask &= ~np.isin(kind, [KIND_CODES[k] for k in q.config.exclude_kinds])
    if q.config.exclude_text:
        substring = q.config.exclude_text
        contains = [a.contains(substring) for a in cols.arrays]
        mask &= ~(contains[0] if len(contains) == 1 else np.concatenate(contains))
    return mask


def _dense(cols: _Columns, vector: F32 | None) -> F64 | None:
    if vector is None:
        return None
    parts: list[F64] = []
    for a in cols.arrays:
        if a.emb is None or a.dim != vector.shape[0]:
            parts.append(np.zeros(a.n, dtype=np.float64))
        else:
            parts.append((a.emb[: a.n] @ vector).astype(np.float64))
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _lexical(store: MemoryStore, space: str, cols: _Columns, text: str) -> F64:
    out = np.zeros(cols.size, dtype=np.float64)
    matches = store.lexical(space, [a.agent for a in cols.arrays], text)
    if matches.pk.size == 0:
        return out
    for a, offset in zip(cols.arrays, cols.offsets[:-1], strict=True):
        if a.n == 0:
            continue
        keys = a.pk[: a.n]
        at = np.searchsorted(keys, matches.pk)
        at_clipped = np.minimum(at, a.n - 1)
        found = keys[at_clipped] == matches.pk
        out[offset + at_clipped[found]] = matches.score[found]
    return out


def _select(
    scores: Scores, cols: _Columns, ids: npt.NDArray[np.str_], recorded_at: I64, k: int
) -> list[npt.NDArray[np.intp]]:
    """Ranked row groups: one group per hit. Multi-agent reads collapse equal texts (step 8)."""
    if len(cols.arrays) == 1:
        return [np.asarray([p]) for p in rank(scores.final, recorded_at, ids, k)]
    keys_parts = [a.text_keys() for a in cols.arrays]
    keys = keys_parts[0] if len(keys_parts) == 1 else np.concatenate(keys_parts)
    n_candidates = int(np.count_nonzero(scores.final > -np.inf))
    window = k
    while True:
        ranked = rank(scores.final, recorded_at, ids, window)
        _, first = np.unique(keys[ranked], return_index=True)
        if first.size >= k or window >= n_candidates:
            break
        window = min(n_candidates, window * 2)
    representatives = ranked[np.sort(first)][:k]
    candidates = scores.final > -np.inf
    groups = []
    for row in representatives:
        same = np.flatnonzero(candidates & (keys == keys[row]))
        others = same[same != row]
        groups.append(np.concatenate(([row], others[np.argsort(ids[others])])))
    return groups


def _breakdown(scores: Scores, row: int, q: Query) -> Breakdown:
    c = q.config
    parts = scores.components(row)
    return Breakdown(
        preset=c.name,
        normalisation=c.normalisation.value,
        relevance_mode=scores.relevance_mode.value,
        relevance_dense=parts.dense,
        relevance_lexical=parts.lexical,
        relevance=parts.relevance,
        recency_mode=c.recency.value,
        age=timedelta(microseconds=parts.age_us),
        recency_raw=parts.recency_raw,
        recency=parts.recency,
        importance_raw=parts.importance_raw,
        importance=parts.importance,
        weights=c.weights,
        episodic=parts.episodic,
        factors={},
        final=parts.final,
    )


def search(index: SpaceIndex, store: MemoryStore, space: str, q: Query) -> list[Hit]:
    """Run one read; returns at most ``q.k`` hits, best first. Never writes."""
    with store.snapshot():
        arrays = index.arrays(q.agents)
        sizes = np.fromiter((a.n for a in arrays), dtype=np.intp, count=len(arrays))
        cols = _Columns(arrays, np.concatenate(([0], np.cumsum(sizes))))
        if cols.size == 0:
            return []
        mask = _visible(cols, q)
        if mask is not None and not mask.any():
            return []
        dense = _dense(cols, q.vector)
        needs_lexical = dense is None or q.config.relevance.value != "dense"
        lexical = _lexical(store, space, cols, q.text) if needs_lexical else None
        recorded_at: I64 = cols.cat("recorded_at")
        candidates = Candidates(
            mask=mask,
            importance=cols.cat("importance"),
            last_accessed_at=cols.cat("last_accessed_at"),
            recorded_at=recorded_at,
            dense=dense,
            lexical=lexical,
        )
        scores = score(candidates, q.config, as_of_us=to_micros(q.as_of))
        ids: npt.NDArray[np.str_] = cols.cat("ids")
        groups = _select(scores, cols, ids, recorded_at, q.k)
        wanted = [str(ids[row]) for group in groups for row in group]
        records = {r.id: r for r in store.get_records(space, wanted)}
    hits = []
    for group in groups:
        members: Sequence[Record] = [records[str(ids[row])] for row in group]
        head = members[0]
        hits.append(
            Hit(
                record=head,
                score=float(scores.final[group[0]]),
                breakdown=_breakdown(scores, int(group[0]), q) if q.explain else None,
                holders=tuple(m.agent for m in members),
                record_ids=tuple(m.id for m in members),
            )
        )
    return hits
