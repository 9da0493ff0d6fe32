"""The near-duplicate write gate's lookup (DESIGN §3): the nearest open record of the same agent,
gated kinds and domain that states the same numbers (``text.number_key``: "Pin libfoo to 2.1"
and "… to 2.2" are two facts, however close their vectors)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from chronomem.analysis.scripts import language_of, reads
from chronomem.arrays import F32, Mask, unit_vector
from chronomem.config import WriteGate
from chronomem.model.record import Record
from chronomem.retrieval import compact
from chronomem.retrieval.codes import domain_key
from chronomem.retrieval.columns import columns, visible
from chronomem.retrieval.index import AgentArrays
from chronomem.retrieval.languages import unread_rows
from chronomem.text import dedup_key, number_key

__all__ = ["Duplicate", "find_duplicate", "same_batch_duplicate"]


@dataclass(frozen=True, slots=True)
class Duplicate:
    """The record a new one duplicates: by cosine ``similarity`` of their vectors, or, when
    either has none, by equal normalised text (``by_text``; similarity 1)."""

    record_id: str
    similarity: float
    by_text: bool = False

    def reason(self, threshold: float) -> str:
        if self.by_text:
            return f"near-duplicate of {self.record_id} (the same normalised text)"
        return f"near-duplicate of {self.record_id} (cosine {self.similarity:.3f} >= {threshold})"


def find_duplicate(
    arrays: AgentArrays,
    record: Record,
    vector: F32 | None,
    *,
    gate: WriteGate,
    threshold: float,
    as_of_us: int,
    languages: frozenset[str] | None = None,
    int8: bool = False,
) -> Duplicate | None:
    """The most similar open record of ``record``'s agent, gated kinds and domain at or above
    ``threshold`` (cosine), or with the same normalised text when there is no vector or the
    embedder does not read the record's language (``languages``: what it reads; ``None``:
    every language) — its cosines would be noise (all-MiniLM-L6-v2 puts "小王养了一只狗" and
    "小王养了一只猫" at 1.0).

    ``int8``: scan the agent's int8 copy (:meth:`SpaceIndex.scans_int8`) and compute exactly
    only the cosines of the rows whose interval reaches the threshold — every row at or above
    it among them (``compact.cosines``' bound), so the same record is found."""
    if arrays.n == 0:
        return None
    cols = columns([arrays])
    mask = visible(
        cols, as_of_us=as_of_us, valid_at_us=as_of_us, include_history=False, kinds=gate.kinds
    )
    same = arrays.domain_keys() == domain_key(record.domain)
    same &= arrays.numbers[: arrays.n] == number_key(record.read_text)
    mask = same if mask is None else mask & same
    readable = reads(languages, language_of(record.read_text))
    if readable and vector is not None and arrays.emb is not None and arrays.dim == vector.shape[0]:
        comparable = mask & arrays.has_embedding[: arrays.n]
        unread = unread_rows(cols, languages)
        if unread is not None:  # records it cannot read: no cosine (nor the same text)
            comparable &= ~unread
        query = unit_vector(vector)
        if int8:
            return _nearest_int8(arrays, comparable, query, threshold)
        sims = np.where(comparable, arrays.emb[: arrays.n] @ query, -np.inf)
    else:
        sims = np.where(mask & (arrays.text_keys() == dedup_key(record.read_text)), 1.0, -np.inf)
        best = int(np.argmax(sims))
        # thresholds are at most 1 (WriteGate), so equal text is always a duplicate
        return Duplicate(str(arrays.ids[best]), 1.0, by_text=True) if sims[best] > 0 else None
    best = int(np.argmax(sims))
    if sims[best] >= threshold:
        return Duplicate(str(arrays.ids[best]), float(sims[best]))
    return None


def _nearest_int8(
    arrays: AgentArrays, comparable: Mask, query: F32, threshold: float
) -> Duplicate | None:
    """:func:`find_duplicate`'s cosine step over the int8 copy: of the ``comparable`` rows whose
    approximate cosine is within the bound of ``threshold``, the first with the largest exact
    cosine, when it reaches ``threshold``. A row the full float32 product puts at or above the
    threshold has its approximation at or above ``threshold - bound``, so it is among them."""
    assert arrays.emb is not None
    approx, bound = compact.cosines(arrays.compact(), arrays.n, query)
    rows = np.flatnonzero(comparable & (approx >= threshold - bound))
    if rows.size == 0:
        return None
    sims = arrays.emb[rows] @ query
    best = int(np.argmax(sims))
    if sims[best] >= threshold:
        return Duplicate(str(arrays.ids[rows[best]]), float(sims[best]))
    return None


def same_batch_duplicate(
    earlier: list[tuple[Record, F32 | None]],
    record: Record,
    vector: F32 | None,
    threshold: float,
    languages: frozenset[str] | None = None,
) -> Duplicate | None:
    """The gate against records accepted earlier in the same batch (as :func:`find_duplicate`)."""
    if vector is not None and not reads(languages, language_of(record.read_text)):
        vector = None
    for other, other_vector in earlier:
        if other_vector is not None and not reads(languages, language_of(other.read_text)):
            other_vector = None
        if other.agent != record.agent or other.domain != record.domain:
            continue
        if number_key(other.read_text) != number_key(record.read_text):
            continue
        if vector is None or other_vector is None:
            if dedup_key(other.read_text) == dedup_key(record.read_text):
                return Duplicate(other.id, 1.0, by_text=True)
            continue
        sim = float(np.dot(unit_vector(vector), unit_vector(other_vector)))
        if sim >= threshold:
            return Duplicate(other.id, sim)
    return None
