"""The loaded agents' columns side by side, and the candidate mask of a read (DESIGN §2 step 1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.arrays import F32, Mask, Rows
from chronomem.model.record import Kind
from chronomem.retrieval.index import KIND_CODES, AgentArrays

__all__ = ["Columns", "columns", "visible"]


@dataclass(frozen=True, slots=True)
class Columns:
    """The loaded agents' columns side by side (views when there is one agent)."""

    arrays: list[AgentArrays]
    offsets: Rows

    def cat(self, name: str) -> npt.NDArray[Any]:
        parts = [getattr(a, name)[: a.n] for a in self.arrays]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def derived(self, method: str, *args: Any) -> npt.NDArray[Any]:
        parts = [getattr(a, method)(*args) for a in self.arrays]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    @property
    def size(self) -> int:
        return int(self.offsets[-1])

    def vectors(self, rows: Rows, dim: int) -> F32:
        """The unit vectors of ``rows`` (zeros where a record has none)."""
        out = np.zeros((rows.shape[0], dim), dtype=np.float32)
        parts = np.searchsorted(self.offsets, rows, side="right") - 1
        for k, (row, part) in enumerate(zip(rows.tolist(), parts.tolist(), strict=True)):
            a = self.arrays[part]
            if a.emb is not None and a.dim == dim:
                out[k] = a.emb[row - int(self.offsets[part])]
        return out


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
    return Columns(arrays, np.concatenate(([0], np.cumsum(sizes))))
