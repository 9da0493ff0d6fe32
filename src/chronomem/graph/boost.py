"""The causal boost as matrix operations over the candidates (DESIGN §4).

For candidate records R and causal events A (true ancestors and scope-fallback events):
``association[r, a]`` is 1.0 when record ``r`` witnessed event ``a`` (its ``event_id``), else
``min(1, cosine / full)`` when the cosine between them reaches the threshold (``full``, a little
above the threshold, is the cosine from which a record is clearly about the event), else 0;
``boost[r] = max_a association[r, a] × effective[a] × gate[r, a]``, where the gate is 1 for a
true ancestor and, under additive fusion, the row's episodic score clipped to [0, 1] for a
scope-fallback event (docs/design/relevant-and-fast-reads.md): weak evidence amplifies a memory
that answers the question and cannot lift one that does not. The witnessed events of every row are
found in one lookup; the cosines come from an ``R @ A.T`` product over the rows that need them
(``retrieval/crisis.py`` picks them); no per-record Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import numpy.typing as npt

from chronomem.arrays import F32, F64, I64, Rows, unit_rows, unit_vector

__all__ = [
    "Association", "Boost", "CausalEvent", "association", "causal_boost", "effective",
    "event_matrix", "fallbacks", "gated", "raise_by", "raise_to", "strongest", "witness_boost",
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
    """Per row, the boost and the index of the causal event that gave it (``best``; -1: none),
    for explanations. A row whose cosines were not computed holds its witness boost (a lower
    bound of its boost). ``gate`` is every row's fallback gate (``None``: fallback events
    counted at their strength)."""

    value: F64
    best: I64
    gate: F64 | None = None

    def event(self, row: int) -> int:
        """Index of the causal event that gave ``row`` its boost, or -1."""
        return -1 if self.value[row] <= 0.0 else int(self.best[row])


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


def fallbacks(events: list[CausalEvent]) -> npt.NDArray[np.bool_]:
    """Which of ``events`` are scope-fallback events (their contribution is gated)."""
    return np.asarray([e.fallback for e in events], dtype=np.bool_)


def gated(lower: F64, witnessed: I64, events: list[CausalEvent], gate: F64 | None) -> F64:
    """``lower`` (each row's :func:`witness_boost`) with the rows that witnessed a fallback
    event multiplied by their ``gate`` (a new array; ``lower`` itself when there is no gate)."""
    if gate is None or not events:
        return lower
    fallback = fallbacks(events)
    if not fallback.any():
        return lower
    at = np.flatnonzero(witnessed >= 0)
    at = at[fallback[witnessed[at]]]
    out = lower.copy()
    out[at] *= gate[at]
    return out


def witness_boost(
    event_keys: I64, events: list[CausalEvent], gate: F64 | None = None
) -> tuple[F64, I64]:
    """Each row's boost from the event it witnessed alone (``event_keys``: its witnessed-event
    key, 0 for none), and that event's index (-1: none of ``events``) — one pass over the rows.
    A lower bound of the boost: the row's cosines may associate it more strongly elsewhere.
    ``gate``: every row's fallback gate (``None``: none)."""
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
    return gated(lower, witnessed, events, gate), witnessed


def causal_boost(
    event_keys: I64,
    events: list[CausalEvent],
    *,
    witness: tuple[F64, I64] | None = None,
    gate: F64 | None = None,
) -> Boost:
    """Every row's boost before any cosine: its :func:`witness_boost` (``witness``, when already
    computed with the same ``gate``; ``event_keys`` holds every row's witnessed-event key, 0:
    none), which :func:`raise_by` raises block by block. ``gate``: every row's fallback gate
    (``None``: fallback events count at their strength)."""
    lower, witnessed = witness_boost(event_keys, events, gate) if witness is None else witness
    return Boost(lower.copy(), witnessed.copy(), gate)


def raise_by(
    boost: Boost,
    cosines: F32,
    events: list[CausalEvent],
    *,
    threshold: float,
    full: float,
    rows: Rows | None = None,
    columns: Rows | None = None,
) -> None:
    """Raise ``boost`` (in place) where the contributions of one block exceed it. ``cosines``
    is the ``(rows, columns)`` cosine matrix of ``rows`` (every row when ``None``) with the
    events ``columns`` (every event when ``None``) — their unit vectors times
    :func:`event_matrix`'s columns; it is modified in place. ``threshold`` must be positive, so
    zero vectors never associate; ``full`` (>= threshold) is the cosine of full association."""
    gate = None if boost.gate is None else boost.gate if rows is None else boost.gate[rows]
    top, best = strongest(cosines, events, threshold=threshold, full=full, columns=columns,
                          gate=gate)  # fmt: skip
    raise_to(boost, top, best, rows)


def strongest(
    cosines: F32,
    events: list[CausalEvent],
    *,
    threshold: float,
    full: float,
    columns: Rows | None = None,
    gate: F64 | None = None,
) -> tuple[F64, I64]:
    """Each row's strongest contribution in one block of :func:`raise_by`'s ``cosines``
    (modified in place) and the event giving it; ``gate``: the block's rows' fallback gates."""
    chosen = np.arange(len(events)) if columns is None else columns
    if cosines.shape[0] == 0 or cosines.shape[1] == 0:
        return np.zeros(cosines.shape[0]), np.zeros(cosines.shape[0], dtype=np.int64)
    strength = effective(events)[chosen]
    contribution = cosines
    np.multiply(contribution, contribution >= threshold, out=contribution)
    contribution *= np.float32(1.0 / full)
    np.minimum(contribution, 1.0, out=contribution)
    contribution *= strength
    fallback = fallbacks(events)[chosen]
    if gate is not None and fallback.any():
        contribution[:, fallback] *= gate.astype(np.float32)[:, None]
    at = np.argmax(contribution, axis=1)
    top = contribution[np.arange(contribution.shape[0]), at].astype(np.float64)
    return top, chosen[at].astype(np.int64)


def raise_to(boost: Boost, top: F64, best: I64, rows: Rows | None = None) -> None:
    """Raise ``boost`` (in place) to ``top`` (given by events ``best``) for ``rows`` (every
    row when ``None``) where it is larger."""
    where = np.arange(top.shape[0]) if rows is None else rows
    better = top > boost.value[where]
    boost.value[where[better]] = top[better]
    boost.best[where[better]] = best[better]


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
