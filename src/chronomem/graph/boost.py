"""The causal boost as matrix operations over the candidates (DESIGN §4).

For candidate records R and causal events A (true ancestors and scope-fallback events):
``association[r, a]`` is 1.0 when record ``r`` witnessed event ``a`` (its ``event_id``), else
``min(1, cosine / full)`` when the cosine between them reaches the threshold (``full``, a little
above the threshold, is the cosine from which a record is clearly about the event), else 0;
``boost[r] = max_a association[r, a] × effective[a]``. The witnessed events of every row are
found in one lookup; the cosines come from an ``R @ A.T`` product over the rows that need them
(``retrieval/crisis.py`` picks them); no per-record Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from chronomem.arrays import F32, F64, I64, Rows, unit_rows, unit_vector

__all__ = [
    "Association", "Boost", "CausalEvent", "association", "causal_boost", "effective",
    "event_matrix", "witness_boost",
]  # fmt: skip


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

    ``contribution`` is the ``(rows, events)`` contribution matrix of the rows whose association
    with every event was computed: ``rows`` (sorted), or every row when ``rows`` is ``None``.
    Any other row holds its witness boost (a lower bound of its boost), and ``witnessed`` tells
    which event each row witnessed (-1: none of them).
    """

    value: F64
    contribution: F32
    rows: Rows | None
    witnessed: I64

    def event(self, row: int) -> int:
        """Index of the causal event that gave ``row`` its boost, or -1."""
        if self.value[row] <= 0.0:
            return -1
        at = row
        if self.rows is not None:
            at = int(np.searchsorted(self.rows, row))
            if at == self.rows.shape[0] or self.rows[at] != row:
                return int(self.witnessed[row])
        return int(np.argmax(self.contribution[at]))


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


def effective(events: list[CausalEvent]) -> F32:
    """Each event's effective strength, as the boost computes with it: no row's boost exceeds
    the largest."""
    return np.asarray([e.effective for e in events], dtype=np.float32)


def witness_boost(event_keys: I64, events: list[CausalEvent]) -> tuple[F64, I64]:
    """Each row's boost from the event it witnessed alone (``event_keys``: its witnessed-event
    key, 0 for none), and that event's index (-1: none of ``events``) — one pass over the rows.
    A lower bound of the boost: the row's cosines may associate it more strongly elsewhere."""
    n = event_keys.shape[0]
    lower, witnessed = np.zeros(n, dtype=np.float64), np.full(n, -1, dtype=np.int64)
    if n == 0 or not events:
        return lower, witnessed
    strength = effective(events)
    keys = np.asarray([e.key for e in events], dtype=np.int64)
    order = np.lexsort((-strength, keys))  # equal keys: the strongest event first
    sorted_keys = keys[order]
    rows = np.flatnonzero(event_keys)  # few rows witnessed anything
    held = event_keys[rows]
    at = np.minimum(np.searchsorted(sorted_keys, held), len(events) - 1)
    found = sorted_keys[at] == held
    rows = rows[found]
    witnessed[rows] = order[at[found]]
    lower[rows] = strength[witnessed[rows]]
    return lower, witnessed


def causal_boost(
    cosines: F32 | None,
    event_keys: I64,
    events: list[CausalEvent],
    *,
    threshold: float,
    full: float,
    rows: Rows | None = None,
    witness: tuple[F64, I64] | None = None,
) -> Boost:
    """The boost of every row (the parts of a read concatenated).

    ``cosines`` is the ``(rows, events)`` cosine matrix of ``rows`` (every row when ``None``) —
    their unit vectors times :func:`event_matrix` — or ``None`` when it cannot be computed (no
    vectors); it is modified in place. ``event_keys`` holds every row's witnessed-event key (0:
    none). Rows outside ``rows`` get their :func:`witness_boost` (``witness``, when already
    computed). ``threshold`` must be
    positive, so zero vectors never associate; ``full`` (>= threshold) is the cosine of full
    association.
    """
    n = event_keys.shape[0]
    lower, witnessed = witness_boost(event_keys, events) if witness is None else witness
    lower = lower.copy()
    m = len(events)
    if n == 0 or not events:
        return Boost(lower, np.zeros((n, m), dtype=np.float32), None, witnessed)
    strength = effective(events)
    size = n if rows is None else rows.shape[0]
    if cosines is not None:
        contribution = cosines
        np.multiply(contribution, contribution >= threshold, out=contribution)
        contribution *= np.float32(1.0 / full)
        np.minimum(contribution, 1.0, out=contribution)
        contribution *= strength
    else:
        contribution = np.zeros((size, m), dtype=np.float32)
    mine = witnessed if rows is None else witnessed[rows]
    at = np.flatnonzero(mine >= 0)
    contribution[at, mine[at]] = strength[mine[at]]
    value = lower
    if rows is None:
        value = contribution.max(axis=1).astype(np.float64)
    elif size:
        value[rows] = contribution.max(axis=1)
    return Boost(value, contribution, rows, witnessed)


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
