"""The causal boost as matrix operations over the candidates (DESIGN §4).

For candidate records R and causal events A (true ancestors and scope-fallback events):
``association[r, a]`` is 1.0 when record ``r`` witnessed event ``a`` (its ``event_id``), else
``min(1, cosine / full)`` when the cosine between them reaches the threshold (``full``, a little
above the threshold, is the cosine from which a record is clearly about the event), else 0;
``boost[r] = max_a association[r, a] × effective[a]``. One ``R @ A.T`` product per agent, no
per-record Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from chronomem.arrays import F32, F64, I64, Rows, unit_rows, unit_vector

__all__ = ["Association", "Boost", "CausalEvent", "association", "causal_boost", "event_matrix"]


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
    """Per row, the boost; :meth:`event` tells which causal event gave it (for explanations).

    ``parts`` keeps each agent part's ``(rows, events)`` contribution matrix and ``offsets``
    where each part starts.
    """

    value: F64
    parts: tuple[F32, ...]
    offsets: Rows

    def event(self, row: int) -> int:
        """Index of the causal event that gave ``row`` its boost, or -1."""
        if self.value[row] <= 0.0:
            return -1
        part = int(np.searchsorted(self.offsets, row, side="right")) - 1
        return int(np.argmax(self.parts[part][row - int(self.offsets[part])]))


def event_matrix(events: list[CausalEvent]) -> F32 | None:
    """The events' unit vectors as a ``(dim, m)`` matrix (zero columns for events without a
    vector), or ``None`` when no event has one or their dimensions disagree."""
    dims = {e.vector.shape[0] for e in events if e.vector is not None}
    if len(dims) != 1:
        return None
    raw = np.zeros((len(events), dims.pop()), dtype=np.float32)
    for j, e in enumerate(events):
        if e.vector is not None:
            raw[j] = e.vector
    return np.ascontiguousarray(unit_rows(raw).T)


def causal_boost(
    cosines: list[F32 | None],
    event_keys: list[I64],
    events: list[CausalEvent],
    *,
    threshold: float,
    full: float,
) -> Boost:
    """The boost of every row of every agent part (parts concatenated in order).

    ``cosines[i]`` is part ``i``'s ``(rows, events)`` cosine matrix — its unit vectors times
    :func:`event_matrix` — or ``None`` when it cannot be computed (no vectors); it is modified
    in place. ``event_keys[i]`` holds the witnessed-event keys (0: none). ``threshold`` must be
    positive, so zero vectors never associate; ``full`` (>= threshold) is the cosine of full
    association.
    """
    sizes = [k.shape[0] for k in event_keys]
    n = int(sum(sizes))
    offsets = np.concatenate(([0], np.cumsum(sizes, dtype=np.intp))).astype(np.intp)
    if n == 0 or not events:
        return Boost(np.zeros(n), (), offsets)
    effective = np.asarray([e.effective for e in events], dtype=np.float32)
    keys = np.asarray([e.key for e in events], dtype=np.int64)
    values, parts = [], []
    for contribution, rows_keys in zip(cosines, event_keys, strict=True):
        rows = rows_keys.shape[0]
        if contribution is not None:
            np.multiply(contribution, contribution >= threshold, out=contribution)
            contribution *= np.float32(1.0 / full)
            np.minimum(contribution, 1.0, out=contribution)
            contribution *= effective
        else:
            contribution = np.zeros((rows, len(events)), dtype=np.float32)
        witnesses = np.flatnonzero(rows_keys)
        if witnesses.size:
            witnessed = rows_keys[witnesses, None] == keys[None, :]
            contribution[witnesses] = np.where(witnessed, effective, contribution[witnesses])
        values.append(contribution.max(axis=1).astype(np.float64))
        parts.append(contribution)
    return Boost(np.concatenate(values), tuple(parts), offsets)


def association(
    vector: F32 | None, event_id: str | None, event: CausalEvent, *, threshold: float, full: float
) -> tuple[float, Association | None]:
    """One record's association with one causal event, for explanations."""
    if event_id is not None and event_id == event.event_id:
        return 1.0, Association.WITNESS
    if vector is None or event.vector is None or vector.shape != event.vector.shape:
        return 0.0, None
    cosine = float(np.dot(unit_vector(vector), unit_vector(event.vector)))
    if cosine < threshold:
        return 0.0, None
    return min(1.0, cosine / full), Association.COSINE
