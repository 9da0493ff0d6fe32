"""The relevance inputs of a read (DESIGN §2 step 2): query cosines (with passages), BM25
matches, and the rows a store's vector index pre-selects. What the question's wording favours is
in ``cues.py``."""

from __future__ import annotations

import numpy as np

from chronomem.arrays import F32, F64, Mask
from chronomem.config import Normalisation, RelevanceMode
from chronomem.retrieval.columns import GATHER_COST, Columns
from chronomem.retrieval.query import Query
from chronomem.stores.base import MemoryStore

__all__ = ["gather_is_cheap", "lexical", "preselect", "similarities"]


def gather_is_cheap(rows: int, namespace: int) -> bool:
    """Pre-selection is worth it only while the gather costs under half the product: the index
    scan takes the other half."""
    return rows * GATHER_COST * 2 < namespace


def preselect(
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
    if not gather_is_cheap(matches, cols.size):
        return None  # the lexical matches' cosines alone cost about the whole product
    agents = [a.agent for a in cols.arrays]
    pks = store.nearest(space, agents, q.vector, namespace=cols.size, k=q.k)
    if pks is None:
        return None
    chosen = np.zeros(cols.size, dtype=np.bool_)
    for a, offset in zip(cols.arrays, cols.offsets[:-1], strict=True):
        at, found = a.rows_of(pks)
        chosen[offset + at[found]] = True
    nearest = int(np.count_nonzero(chosen if visible is None else chosen & visible))
    if nearest < max(q.k, pks.size // 2):
        return None
    if lexical is not None:
        chosen |= lexical > 0.0
    if not gather_is_cheap(int(np.count_nonzero(chosen)), cols.size):
        return None
    return chosen


def similarities(
    cols: Columns,
    vector: F32,
    chosen: Mask | None = None,
    *,
    passages: bool = False,
    float64: F32 | None = None,
) -> F64:
    """The query cosines, one product per agent. With ``passages``, a record's cosine is the
    best of its own and its passages'. ``float64``, the query vector before normalisation,
    computes them in float64 from it and the stored float32 vectors (the compatibility preset's
    exactness; a float32 product over 1536 dimensions is off by ~1e-7).

    With ``chosen`` (pre-selected rows, never with passages over records that have them: see
    :func:`preselect`; or a filter's candidates), only those rows' cosines are computed (and
    their passages'); the others are 0. A crisis
    read's record × event cosines are the causal boost's (``retrieval/crisis.py``)."""
    if float64 is not None and chosen is None:
        dense = _float64_cosines(cols, float64)
    else:
        dense = _record_similarities(cols, vector, chosen)
    if passages:
        for a, offset in zip(cols.arrays, cols.offsets[:-1].tolist(), strict=True):
            if a.dim == vector.shape[0]:
                rows = None if chosen is None else chosen[offset : offset + a.n]
                a.raise_to_passages(dense[offset : offset + a.n], vector, rows)
    return dense


def _float64_cosines(cols: Columns, vector: F32) -> F64:
    """Cosines in float64 from the stored float32 rows and the query ``vector`` as given, with
    the Generative Agents code's own arithmetic (``dot(a, b) / (norm(a) * norm(b))``,
    unrounded): its stable sort orders scores that are equal to the last bit, and min-max
    normalisation turns an ulp between two cosines into the whole range, so any other rounding
    (a unit float32 query vector's included) can swap them."""
    query = vector.astype(np.float64)
    q_norm = float(np.linalg.norm(query))
    parts = []
    for a in cols.arrays:
        if a.raw is None or a.raw_norms is None or a.dim != vector.shape[0]:
            parts.append(np.zeros(a.n, dtype=np.float64))
            continue
        norms = a.raw_norms[: a.n] * q_norm  # the rows' norms are kept with them (index.py)
        parts.append(np.divide(a.raw[: a.n] @ query, norms, out=np.zeros(a.n), where=norms > 0))
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _record_similarities(cols: Columns, vector: F32, chosen: Mask | None) -> F64:
    dense = np.zeros(cols.size, dtype=np.float64)
    for a, offset in zip(cols.arrays, cols.offsets[:-1].tolist(), strict=True):
        if a.emb is None or a.dim != vector.shape[0] or a.n == 0:
            continue
        emb = a.emb[: a.n]
        if chosen is not None:
            local = np.flatnonzero(chosen[offset : offset + a.n])
            dense[offset + local] = emb[local] @ vector
        else:  # the common case: a GEMV
            dense[offset : offset + a.n] = emb @ vector
    return dense


def lexical(store: MemoryStore, space: str, cols: Columns, text: str) -> F64:
    out = np.zeros(cols.size, dtype=np.float64)
    matches = store.lexical(space, [a.agent for a in cols.arrays], text)
    if matches.pk.size == 0:
        return out
    for a, offset in zip(cols.arrays, cols.offsets[:-1], strict=True):
        at, found = a.rows_of(matches.pk)
        out[offset + at[found]] = matches.score[found]
    return out
