"""The causal boost as matrix operations over the candidates (DESIGN §4).

For candidate records R and causal events A (true ancestors and scope-fallback events):
``association[r, a]`` is 1.0 when record ``r`` witnessed event ``a`` (its ``event_id``), else the
cosine between them when it reaches the threshold, else 0; ``boost[r] = max_a association[r, a] ×
effective[a]``. One ``R @ A.T`` product per agent, no per-record Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import numpy.typing as npt

__all__ = ["Association", "Boost", "CausalEvent", "causal_boost"]

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


class Association(StrEnum):
    WITNESS = "witness"
    COSINE = "cosine"


@dataclass(frozen=True, slots=True, kw_only=True)
class CausalEvent:
    """An event that can lift records: a true ancestor of the crisis, or a scope-fallback event.

    ``effective`` is its strength × depth weight (fallback: the fallback strength); ``path`` the
    event ids from it to the crisis (just itself for a fallback event).
    """

    event_id: str
    key: int
    vector: F32 | None
    effective: float
    depth: int
    strength: float
    path: tuple[str, ...]
    fallback: bool = False


@dataclass(frozen=True, slots=True)
class Boost:
    """Per row: the boost, which causal event gave it (-1: none), the association value and
    whether it came from a witness link."""

    value: F64
    event: npt.NDArray[np.intp]
    association: F64
    witness: npt.NDArray[np.bool_]


def _unit(vectors: F32) -> F32:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    out: F32 = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return out


def causal_boost(
    embeddings: list[F32 | None],
    has_embedding: list[npt.NDArray[np.bool_]],
    event_keys: list[I64],
    events: list[CausalEvent],
    *,
    threshold: float,
) -> Boost:
    """The boost of every row of every agent part (parts concatenated in order).

    ``embeddings[i]`` holds the unit vectors of part ``i`` (``None`` when it has none);
    ``event_keys[i]`` the witnessed-event keys (0: none).
    """
    sizes = [k.shape[0] for k in event_keys]
    n = int(sum(sizes))
    if n == 0 or not events:
        return Boost(
            np.zeros(n), np.full(n, -1, dtype=np.intp), np.zeros(n), np.zeros(n, dtype=np.bool_)
        )
    m = len(events)
    effective = np.asarray([e.effective for e in events], dtype=np.float64)
    keys = np.asarray([e.key for e in events], dtype=np.int64)
    dims = {e.vector.shape[0] for e in events if e.vector is not None}
    matrix = None
    if len(dims) == 1:
        d = dims.pop()
        raw = np.zeros((m, d), dtype=np.float32)
        for j, e in enumerate(events):
            if e.vector is not None:
                raw[j] = e.vector
        matrix = _unit(raw)
        has_vector = np.asarray([e.vector is not None for e in events])
    values, best, assoc, witness = [], [], [], []
    for emb, has, rows_keys in zip(embeddings, has_embedding, event_keys, strict=True):
        rows = rows_keys.shape[0]
        association = np.zeros((rows, m), dtype=np.float64)
        if matrix is not None and emb is not None and emb.shape[1] == matrix.shape[1]:
            sims = (emb[:rows] @ matrix.T).astype(np.float64)
            ok = (sims >= threshold) & has[:rows, None] & has_vector[None, :]
            association = np.where(ok, sims, 0.0)
        witnessed = rows_keys[:, None] == keys[None, :]
        association = np.where(witnessed, 1.0, association)
        contribution = association * effective[None, :]
        top = np.argmax(contribution, axis=1)
        picked = contribution[np.arange(rows), top]
        values.append(picked)
        best.append(np.where(picked > 0.0, top, -1))
        assoc.append(association[np.arange(rows), top])
        witness.append(witnessed[np.arange(rows), top] & (picked > 0.0))
    return Boost(
        np.concatenate(values),
        np.concatenate(best).astype(np.intp),
        np.concatenate(assoc),
        np.concatenate(witness),
    )
