"""The passages of an agent's records in its arrays (``retrieval/index.py``): one unit vector per
passage, in a matrix of their own (``pemb[: pn]``), each naming the record row it belongs to
(``powner``, ascending), and its int8 copy for large reads (``pcodes``, ``retrieval/compact.py``).
A row's cosine under a preset with passages is the best of its own and its passages'."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.arrays import F32, Mask, Rows, unit_rows
from chronomem.retrieval.compact import Codes
from chronomem.retrieval.compact import cosines as compact_cosines

__all__ = ["PassageVectors"]


def _raise_to_best(dense: npt.NDArray[np.float64], owners: Rows, sims: npt.NDArray[Any]) -> None:
    """Raise ``dense`` at each owner row to the best of its passages' ``sims``, in place (owners
    ascend: one run per row)."""
    starts = np.flatnonzero(np.diff(owners, prepend=-1))
    rows = owners[starts]
    dense[rows] = np.maximum(dense[rows], np.maximum.reduceat(sims, starts))


class PassageVectors:
    """The passages of :class:`~chronomem.retrieval.index.AgentArrays` (its base): added with
    their records (or by a backfill, for records that had none), dropped with them; a record's
    passages never change once it has them. The int8 copy of ``pemb[: pcoded]`` is made by the
    first large read that scans it, extended as passages are added, kept through removals and
    made again after a backfill (which reorders them); the index snapshot holds it as far as
    ``pcoded`` (``retrieval/snapshot.py``)."""

    # what they belong to (AgentArrays' rows)
    dim: int | None
    has_passages: npt.NDArray[np.bool_]
    pn: int
    pemb: F32 | None
    powner: Rows
    pcodes: Codes | None
    pcoded: int

    def _add_passages(self, mats: list[tuple[int, F32]]) -> None:
        """Add passage matrices for rows that had none; rows beyond the last owner append, others
        (a backfill of rows already held) are merged in owner order."""
        if not mats or self.dim is None:
            return
        new = sum(m.shape[0] for _, m in mats)
        if self.pemb is None or self.pn + new > self.pemb.shape[0]:
            cap = max(self.pn + new, 2 * (0 if self.pemb is None else self.pemb.shape[0]), 16)
            pemb = np.zeros((cap, self.dim), dtype=np.float32)
            owner = np.zeros(cap, dtype=np.intp)
            if self.pemb is not None:
                pemb[: self.pn] = self.pemb[: self.pn]
                owner[: self.pn] = self.powner[: self.pn]
            self.pemb, self.powner = pemb, owner
        end = self.pn + new
        self.pemb[self.pn : end] = unit_rows(np.concatenate([m for _, m in mats]))
        self.powner[self.pn : end] = np.repeat([o for o, _ in mats], [m.shape[0] for _, m in mats])
        self.has_passages[[o for o, _ in mats]] = True
        if self.pn and np.any(np.diff(self.powner[self.pn - 1 : end]) < 0):  # owners ascend
            order = np.argsort(self.powner[:end], kind="stable")
            self.pemb[:end] = self.pemb[:end][order]
            self.powner[:end] = self.powner[:end][order]
            self.pcodes = None  # a backfill: made again on the next read that scans it
        self.pn = end

    def _keep_passages(self, keep: Mask) -> None:
        """Drop the passages of the rows not in ``keep`` (a removal), renumbering the others'
        owners; the int8 copy loses the same ones."""
        if self.pemb is None or not self.pn:
            return
        owners = self.powner[: self.pn]
        kept_passages = keep[owners]
        renumber = np.cumsum(keep) - 1
        pn = int(kept_passages.sum())
        self.pemb[:pn] = self.pemb[: self.pn][kept_passages]
        self.pemb[pn : self.pn] = 0.0
        if self.pcodes is not None:
            coded = kept_passages[: self.pcoded]
            self.pcodes.keep(coded, self.pcoded)
            self.pcoded = int(coded.sum())
        self.powner[:pn] = renumber[owners[kept_passages]]
        self.pn = pn

    def passage_compact(self) -> Codes:
        """The int8 copy of the passages' vectors (built on first use, then extended with the
        passages added since: a record's passages never change once it has them)."""
        assert self.pemb is not None
        if self.pcodes is None:
            self.pcodes, self.pcoded = Codes.of(self.pemb, self.pn), self.pn
        elif self.pcoded < self.pn:
            if self.pcodes.codes.shape[0] < self.pemb.shape[0]:
                self.pcodes.grow(self.pcoded, self.pemb.shape[0])
            self.pcodes.write(np.arange(self.pcoded, self.pn), self.pemb[self.pcoded : self.pn])
            self.pcoded = self.pn
        return self.pcodes

    def raise_to_passages(
        self, dense: npt.NDArray[np.float64], query: F32, only: npt.NDArray[np.bool_] | None = None
    ) -> None:
        """Raise each row's cosine in ``dense`` to its best passage's, in place (only the rows
        ``only`` selects, when given)."""
        if self.pemb is None or self.pn == 0:
            return
        owners = self.powner[: self.pn]
        if only is not None:
            held = np.flatnonzero(only[owners])
            if held.size == 0:
                return
            owners = owners[held]
            sims = self.pemb[held] @ query
        else:
            sims = self.pemb[: self.pn] @ query
        _raise_to_best(dense, owners, sims)

    def passage_cosines(self, rows: Rows, query: F32) -> npt.NDArray[np.float64]:
        """The cosine of each of ``rows``' best passage (``-inf``: it has none), the products
        :meth:`raise_to_passages` computes, over those rows' passages only."""
        best = np.full(rows.size, -np.inf)
        if self.pemb is None or self.pn == 0 or rows.size == 0:
            return best
        owners = self.powner[: self.pn]
        low = np.searchsorted(owners, rows, "left")  # owners ascend: each row's run of passages
        counts = np.searchsorted(owners, rows, "right") - low
        total = int(counts.sum())
        if total == 0:
            return best
        starts = np.cumsum(counts) - counts  # each row's first place among the gathered ones
        sims = self.pemb[np.arange(total) + np.repeat(low - starts, counts)] @ query
        held = counts > 0
        best[held] = np.maximum.reduceat(sims, starts[held])
        return best

    def raise_to_passages_approx(self, dense: npt.NDArray[np.float64], query: F32) -> float:
        """Raise each row's cosine in ``dense`` to its best passage's as the passages' int8 copy
        gives it (:meth:`passage_compact`), in place; returns the bound on those products' error
        (:func:`~chronomem.retrieval.compact.cosines`)."""
        if self.pemb is None or self.pn == 0:
            return 0.0
        sims, bound = compact_cosines(self.passage_compact(), self.pn, query)
        _raise_to_best(dense, self.powner[: self.pn], sims)
        return bound
