"""The extremes of an agent's visibility and lifecycle columns (:meth:`AgentArrays.bounds
<chronomem.retrieval.index.AgentArrays.bounds>`): when a read's instants lie inside them, every
row is visible and the lifecycle factor is 1, so the read skips those passes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from chronomem.arrays import Rows
from chronomem.model.record import Kind
from chronomem.retrieval.codes import KINDS
from chronomem.stores.base import NEVER, SINCE_EVER

if TYPE_CHECKING:
    from chronomem.retrieval.index import AgentArrays

__all__ = ["NO_ROWS", "Bounds"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Bounds:
    """Extremes of an agent's visibility and lifecycle columns (:meth:`AgentArrays.bounds`)."""

    #: the columns they are computed from (``kind`` aside: a row's kind never changes)
    FROM: ClassVar[tuple[str, ...]] = (
        "recorded_at", "superseded_at", "valid_from", "valid_until", "valid_until_before",
        "feedback_score",
    )  # fmt: skip

    max_recorded: int
    min_superseded: int
    max_valid_from: int
    min_valid_until: int
    kinds: frozenset[Kind]
    any_feedback: bool

    @staticmethod
    def of(a: AgentArrays, rows: Rows | slice) -> Bounds:
        """The bounds of the given rows of ``a`` (at least one)."""
        return Bounds(
            max_recorded=int(a.recorded_at[rows].max()),
            min_superseded=int(a.superseded_at[rows].min()),
            max_valid_from=int(a.valid_from[rows].max()),
            min_valid_until=min(
                int(a.valid_until[rows].min()), int(a.valid_until_before[rows].min())
            ),
            kinds=frozenset(KINDS[c] for c in np.unique(a.kind[rows])),
            any_feedback=bool(np.any(a.feedback_score[rows] != 0.0)),
        )

    def widened(self, a: AgentArrays, at: Rows) -> Bounds:
        """These bounds with the rows ``at`` of ``a`` appended since (extremes only move
        outwards): what a pass over every row would find, from the new rows alone (``np.unique``
        of 100k kinds costs ~0.9 ms)."""
        if at.size == 0:
            return self
        new = Bounds.of(a, at)
        return Bounds(
            max_recorded=max(self.max_recorded, new.max_recorded),
            min_superseded=min(self.min_superseded, new.min_superseded),
            max_valid_from=max(self.max_valid_from, new.max_valid_from),
            min_valid_until=min(self.min_valid_until, new.min_valid_until),
            kinds=self.kinds | new.kinds,
            any_feedback=self.any_feedback or new.any_feedback,
        )


#: the bounds of an agent with no rows (every read's instants lie inside them)
NO_ROWS = Bounds(
    max_recorded=SINCE_EVER, min_superseded=NEVER, max_valid_from=SINCE_EVER,
    min_valid_until=NEVER, kinds=frozenset(), any_feedback=False,
)  # fmt: skip
