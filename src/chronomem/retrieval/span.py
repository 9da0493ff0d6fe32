"""Agents laid out one after another in one array per column — the space-wide layout a snapshot
loads (docs/design/space-wide-layout.md).

Each agent's columns are views of its rows of the space-wide arrays, so an update in place (a
touch, a verification, feedback) is seen through both. A multi-agent read over a run of
consecutive members then takes a column as one slice, and its products as one matrix product,
instead of concatenating 400 parts. A member stops being laid out when its arrays are replaced
(an append past its rows grows them) or its row count changes (a removal compacts it): it is
checked by identity and size, so no write needs to know about the span.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from chronomem.arrays import Rows
from chronomem.retrieval.bounds import Bounds
from chronomem.retrieval.codes import KINDS
from chronomem.stores.base import NEVER, SINCE_EVER

if TYPE_CHECKING:
    from chronomem.retrieval.index import AgentArrays

__all__ = ["Span", "run_start"]


class Span:
    """The space-wide arrays of ``members`` (``columns``: name → rows of every member, in
    order; ``starts``: each member's first row, and the total last)."""

    __slots__ = ("_derived", "_marks", "columns", "starts")

    def __init__(
        self, columns: dict[str, npt.NDArray[Any]], starts: Rows, members: Sequence[AgentArrays]
    ) -> None:
        self.columns = columns
        self.starts = starts
        # (no reference to the members: an agent dropped from the index, or whose arrays were
        # copied off a snapshot's mapping, frees the span and the mapping at once)
        # what each member held when laid out: its key column (every numeric column is
        # replaced with it) and its vectors (replaced alone when the dimension is set)
        self._marks = [(a.pk, a.emb) for a in members]
        # and its derived columns that the span holds too (rebuilt, not written in place)
        self._derived = [
            {name: a._derived.get(name) for name in columns if name in a._derived} for a in members
        ]
        for k, a in enumerate(members):
            a.span = (self, k)

    @classmethod
    def lay_out(cls, members: Sequence[AgentArrays]) -> Span:
        """Copy ``members``' columns into space-wide arrays and make each member's columns
        views of its rows (a bulk load from the store: one copy, then every read over them
        takes its columns whole)."""
        sizes = np.fromiter((a.n for a in members), dtype=np.intp, count=len(members))
        starts = np.concatenate(([0], np.cumsum(sizes)))
        names = [*members[0].COLUMNS]
        if all(a.emb is not None for a in members):
            names.append("emb")
        columns = {
            name: np.concatenate([getattr(a, name)[: a.n] for a in members]) for name in names
        }
        for a, lo, hi in zip(members, starts[:-1].tolist(), starts[1:].tolist(), strict=True):
            for name in names:
                setattr(a, name, columns[name][lo:hi])
        return cls(columns, starts, members)

    def laid_out(self, k: int, a: AgentArrays) -> bool:
        """Whether member ``k``'s columns are still its rows of the space-wide arrays."""
        pk, emb = self._marks[k]
        return a.pk is pk and a.emb is emb and a.n == int(self.starts[k + 1] - self.starts[k])

    def derived(
        self, name: str, arrays: Sequence[AgentArrays], member: int
    ) -> npt.NDArray[Any] | None:
        """The space-wide derived column ``name`` (a key column: ``text_keys``…) of the laid-out
        ``arrays``, members ``member``, ``member + 1``…: the span's when every one still holds
        its rows of it; laid out now from theirs when ``arrays`` are every member and the span
        has none (the next read then slices it); ``None`` otherwise."""
        whole = self.columns.get(name)
        if whole is not None:
            held = zip(arrays, self._derived[member:], strict=False)
            if all((d := a._derived.get(name)) is not None and d is m.get(name) for a, m in held):
                return whole
            return None
        if member != 0 or len(arrays) != len(self._marks):
            return None
        whole = np.concatenate([getattr(a, name)() for a in arrays])
        for a, marks, lo, hi in zip(
            arrays, self._derived, self.starts[:-1].tolist(), self.starts[1:].tolist(), strict=True
        ):
            a._derived[name] = marks[name] = whole[lo:hi]
        self.columns[name] = whole
        return whole

    def bounds(self) -> list[Bounds]:
        """Every member's :meth:`AgentArrays.bounds`, from the space-wide columns in one pass
        each (``reduceat``) instead of six reductions per member."""
        starts, c = self.starts, self.columns
        sizes = np.diff(starts)
        full = np.flatnonzero(sizes)
        at = starts[:-1][full]

        def reduce(op: np.ufunc, name: str, empty: int) -> list[int]:
            out = np.full(sizes.shape[0], empty, dtype=np.int64)
            if at.size:
                out[full] = op.reduceat(c[name], at)
            return [int(v) for v in out.tolist()]

        max_recorded = reduce(np.maximum, "recorded_at", SINCE_EVER)
        min_superseded = reduce(np.minimum, "superseded_at", NEVER)
        max_valid_from = reduce(np.maximum, "valid_from", SINCE_EVER)
        until = reduce(np.minimum, "valid_until", NEVER)
        before = reduce(np.minimum, "valid_until_before", NEVER)
        member = np.repeat(np.arange(sizes.shape[0]), sizes)
        held = np.zeros((sizes.shape[0], len(KINDS)), dtype=np.bool_)
        held[member, c["kind"].astype(np.intp)] = True
        feedback = np.zeros(sizes.shape[0], dtype=np.bool_)
        if at.size:
            feedback[full] = np.logical_or.reduceat(c["feedback_score"] != 0.0, at)
        return [
            Bounds(
                max_recorded=max_recorded[k],
                min_superseded=min_superseded[k],
                max_valid_from=max_valid_from[k],
                min_valid_until=min(until[k], before[k]),
                kinds=frozenset(KINDS[i] for i in np.flatnonzero(held[k]).tolist()),
                any_feedback=bool(feedback[k]),
            )
            for k in range(sizes.shape[0])
        ]


def run_start(arrays: Sequence[AgentArrays]) -> tuple[Span, int, int] | None:
    """``(span, first member, its first row)`` when ``arrays`` are consecutive members of one
    span, each still laid out: their columns side by side are then one slice of the span's."""
    if len(arrays) < 2 or arrays[0].span is None:
        return None
    span, first = arrays[0].span
    for k, a in enumerate(arrays, first):
        if a.span is None or a.span[0] is not span or a.span[1] != k or not span.laid_out(k, a):
            return None
    return span, first, int(span.starts[first])
