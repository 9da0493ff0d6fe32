"""The loaded agents' columns side by side, and the candidate mask of a read (DESIGN §2 step 1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.arrays import F32, Mask, Rows
from chronomem.model.record import Kind
from chronomem.retrieval.codes import KIND_CODES
from chronomem.retrieval.index import AgentArrays
from chronomem.retrieval.span import Span, run_start

__all__ = ["GATHER_COST", "Columns", "columns", "visible"]

#: A product over gathered rows costs about as much per row as this many rows of a part's
#: contiguous product (measured with numpy on 200k × 384: 10% of the rows gathered took 0.6 × the
#: whole product).
GATHER_COST = 6


@dataclass(frozen=True, slots=True)
class Columns:
    """The loaded agents' columns side by side: views when there is one agent, or when the
    agents are consecutive members of a space-wide layout (``run``: the span, the first
    agent's place among its members and its first row; span.py), copies otherwise."""

    arrays: list[AgentArrays]
    offsets: Rows
    run: tuple[Span, int, int] | None = None

    def _laid(self, name: str) -> npt.NDArray[Any] | None:
        """The span's rows of column ``name`` for these agents, when it holds them."""
        if self.run is None:
            return None
        span, _, first = self.run
        whole = span.columns.get(name)
        return None if whole is None else whole[first : first + self.size]

    def _laid_vectors(self, dim: int) -> F32 | None:
        laid = self._laid("emb")
        return laid if laid is not None and laid.shape[1] == dim else None

    def cat(self, name: str) -> npt.NDArray[Any]:
        laid = self._laid(name)
        if laid is not None:
            return laid
        parts = [getattr(a, name)[: a.n] for a in self.arrays]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def derived(self, method: str, *args: Any) -> npt.NDArray[Any]:
        if self.run is not None and method in AgentArrays._KEYS:
            span, member, first = self.run
            whole = span.derived(method, self.arrays, member)
            if whole is not None:
                return whole[first : first + self.size]
        parts = [getattr(a, method)(*args) for a in self.arrays]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    @property
    def size(self) -> int:
        return int(self.offsets[-1])

    def vectors(self, rows: Rows, dim: int) -> F32:
        """The unit vectors of ``rows`` (zeros where a record has none)."""
        laid = self._laid_vectors(dim)
        if laid is not None:
            return laid[rows]
        out = np.zeros((rows.shape[0], dim), dtype=np.float32)
        for a, at, local in self._runs(rows):
            if a.emb is not None and a.dim == dim:
                out[at] = a.emb[local]
        return out

    def products(
        self, rows: Rows | None, matrix: F32, band: tuple[float, float] | None = None
    ) -> F32:
        """``vectors(rows) @ matrix`` in float32 (``rows=None``: every row): a part most of
        whose rows are asked for is multiplied whole (no copy), the others' rows are gathered
        into one product.

        BLAS rounds a row's float32 sums by the shape of the product it is part of and the
        row's place in it, so the same row can come out an ulp apart in two reads. With
        ``band=(lo, hi)``, every entry that rounding could put on either side of ``lo`` or
        ``hi``, or inside ``[lo, hi)``, is recomputed in float64 from its row and rounded once
        (differences ~1e-16 vanish in that rounding): the entries whose value a caller uses
        as it is are the same whichever other rows were computed, and the others are clearly
        below ``lo`` or above ``hi`` (the causal association is 0 below the threshold and full
        above it; docs/design/relevant-and-fast-reads.md)."""
        dim, width = matrix.shape
        out = np.zeros((self.size if rows is None else rows.shape[0], width), dtype=np.float32)
        laid = self._laid_vectors(dim)
        if laid is not None:  # one product over the space-wide rows, or over one gather
            if rows is None:
                out[:] = laid @ matrix
            elif rows.shape[0] * GATHER_COST > laid.shape[0]:
                out[:] = (laid @ matrix)[rows]
            else:
                out[:] = laid[rows] @ matrix
        elif rows is None:
            for a, start in zip(self.arrays, self.offsets[:-1].tolist(), strict=True):
                if a.emb is not None and a.dim == dim and a.n:
                    out[start : start + a.n] = a.emb[: a.n] @ matrix
        else:
            places, gathered = [], []
            for a, at, local in self._runs(rows):
                if a.emb is None or a.dim != dim:
                    continue
                if local.shape[0] * GATHER_COST > a.n:  # most of the part: its whole product
                    out[at] = (a.emb[: a.n] @ matrix)[local]
                else:
                    places.append(at)
                    gathered.append(a.emb[local])
            if gathered:
                out[np.concatenate(places)] = np.concatenate(gathered) @ matrix
        if band is not None:
            self._exact_band(rows, matrix, out, band)
        return out

    def _exact_band(
        self, rows: Rows | None, matrix: F32, out: F32, band: tuple[float, float]
    ) -> None:
        """Recompute in float64 the entries of ``out`` that float32 rounding could move across
        or inside ``band`` (unit vectors: the error is at most ``dim · 2⁻²⁴``; twice that)."""
        dim = matrix.shape[0]
        slack = dim * 2.0**-23 + 1e-6
        lo, hi = band
        near = (out >= lo - slack) & (out < hi + slack)
        at = np.flatnonzero(near.any(axis=1))
        if at.size == 0:
            return
        wanted = at if rows is None else rows[at]
        exact = (self.vectors(wanted, dim).astype(np.float64) @ matrix.astype(np.float64)).astype(
            np.float32
        )
        block = out[at]
        np.copyto(block, exact, where=near[at])
        out[at] = block

    def _runs(self, rows: Rows) -> list[tuple[AgentArrays, Rows, Rows]]:
        """``rows`` grouped by part: (part, positions in ``rows``, rows within the part)."""
        parts = np.searchsorted(self.offsets, rows, side="right") - 1
        ascending = parts.shape[0] < 2 or bool(np.all(parts[1:] >= parts[:-1]))
        order = np.arange(parts.shape[0]) if ascending else np.argsort(parts, kind="stable")
        sorted_parts = parts[order]
        starts = np.flatnonzero(np.diff(sorted_parts, prepend=-1))
        stops = np.append(starts[1:], order.shape[0])
        runs = []
        for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
            part = int(sorted_parts[start])
            at = order[start:stop]
            runs.append((self.arrays[part], at, rows[at] - int(self.offsets[part])))
        return runs


def visible(
    cols: Columns,
    *,
    as_of_us: int,
    valid_at_us: int,
    include_history: bool,
    kinds: frozenset[Kind] | None,
    exclude_kinds: frozenset[Kind] = frozenset(),
    exclude_key: str | None = None,
) -> Mask | None:
    """DESIGN §2 step 1: recorded by ``as_of`` and, unless ``include_history``, inside the
    world-time window at ``valid_at`` as that window was known at ``as_of`` (closing a record
    ends its window; before the closing, the window it had applies).

    Returns ``None`` when every row is a candidate (found from per-agent bounds, without a pass
    over the rows). Kind filters that no loaded record can trip are dropped first, so excluding a
    kind nobody holds costs nothing.
    """
    bounds = [a.bounds() for a in cols.arrays]
    present = frozenset().union(*(b.kinds for b in bounds))
    if kinds is not None and present <= kinds:
        kinds = None
    exclude_kinds = exclude_kinds & present
    filtered = kinds is not None or bool(exclude_kinds) or bool(exclude_key)
    if not filtered and all(
        b.max_recorded <= as_of_us
        and (include_history or (b.max_valid_from <= valid_at_us < b.min_valid_until))
        for b in bounds
    ):
        return None
    mask: Mask = cols.cat("recorded_at") <= as_of_us
    if not include_history:
        closed = cols.cat("superseded_at") <= as_of_us
        until = np.where(closed, cols.cat("valid_until"), cols.cat("valid_until_before"))
        mask &= until > valid_at_us
        mask &= cols.cat("valid_from") <= valid_at_us
    kind = cols.cat("kind")
    if kinds is not None:
        mask &= np.isin(kind, [KIND_CODES[k] for k in kinds])
    if exclude_kinds:
        mask &= ~np.isin(kind, [KIND_CODES[k] for k in exclude_kinds])
    if exclude_key:
        mask &= ~cols.derived("key_contains", exclude_key)
    return mask


def columns(arrays: list[AgentArrays]) -> Columns:
    sizes = np.fromiter((a.n for a in arrays), dtype=np.intp, count=len(arrays))
    return Columns(arrays, np.concatenate(([0], np.cumsum(sizes))), run_start(arrays))
