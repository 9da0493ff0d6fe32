"""Browsing a space (what a read would see, without a query): records filtered by agent, kind,
domain, state and recording window, newest first, a page at a time. Every filter is a vectorised
pass over the in-memory arrays; only the page's records are fetched from the store."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np

from chronomem.arrays import Mask
from chronomem.clock import to_micros
from chronomem.engine.handle import Handle
from chronomem.model.event import Event, EventKind
from chronomem.model.filter import Filter
from chronomem.model.record import Kind, Record, Status
from chronomem.retrieval.codes import domain_key
from chronomem.retrieval.columns import Columns, columns, visible
from chronomem.retrieval.filtering import filter_mask, kinds_named
from chronomem.text import normalise_text

__all__ = ["events", "records"]

#: Wider than any instant a store holds (microseconds).


def records(
    h: Handle,
    *,
    agents: Sequence[str] | None,
    kinds: frozenset[Kind] | None,
    domain: str | None,
    include_history: bool,
    since: datetime | None,
    until: datetime | None,
    as_of: datetime,
    limit: int,
    offset: int,
    status: Status | None = None,
    where: Filter | None = None,
) -> list[Record]:
    """The page ``[offset, offset + limit)`` of the matching records, newest recorded first
    (ties by id). Core blocks are included only when ``kinds`` names them. ``status``: the
    state at ``as_of`` (closed and superseded records are told apart by reading the ended
    ones' rows, usually a small part of a space). ``where``: only the records the filter
    selects (``retrieval/filtering.py``)."""
    with h.store.snapshot():
        cols = columns(h.index.arrays(list(agents) if agents else h.store.agents(h.space)))
        if cols.size == 0:
            return []
        at = to_micros(as_of)
        named = kinds if kinds is not None else kinds_named(where)
        mask = visible(
            cols, as_of_us=at, valid_at_us=at, include_history=include_history, kinds=kinds,
            exclude_kinds=frozenset({Kind.CORE}) if named is None else frozenset(),
        )  # fmt: skip
        keep = np.ones(cols.size, dtype=np.bool_) if mask is None else mask
        if where is not None:
            keep &= filter_mask(cols, where, as_of_us=at)
        recorded = cols.cat("recorded_at")
        if domain is not None:
            keep &= _same_domain(cols, keep, domain)
        if since is not None:
            keep &= recorded >= to_micros(since)
        if until is not None:
            keep &= recorded < to_micros(until)
        ids = cols.cat("ids")
        if status is not None:
            ended = cols.cat("superseded_at") <= at
            keep &= ended if status is not Status.OPEN else ~ended
            if status is not Status.OPEN:
                ended_ids = [str(i) for i in ids[np.flatnonzero(keep)]]
                fetched = h.records(ended_ids)
                other = [r.id for r in fetched if r.status != status]
                if other:
                    keep &= ~np.isin(ids, other)
        rows = np.flatnonzero(keep)
        order = np.lexsort((ids[rows], -recorded[rows]))
        page = rows[order][offset : offset + limit]
        return h.records([str(i) for i in ids[page]])


def _same_domain(cols: Columns, keep: Mask, domain: str) -> Mask:
    """The rows whose domain is ``domain`` as the write gate compares domains (case and spacing
    aside), decided before the page is cut: the hash selects, the text confirms (a hash could
    in principle collide)."""
    rows = np.flatnonzero(keep & (cols.derived("domain_keys") == domain_key(domain)))
    parts = np.searchsorted(cols.offsets, rows, side="right") - 1
    wanted = normalise_text(domain)
    same = np.zeros(cols.size, dtype=np.bool_)
    for row, part in zip(rows.tolist(), parts.tolist(), strict=True):
        name = cols.arrays[part].domains[row - int(cols.offsets[part])]
        same[row] = name is not None and normalise_text(name) == wanted
    return same


def events(
    h: Handle,
    *,
    kinds: set[EventKind] | None,
    scope: str | None,
    since: datetime | None,
    until: datetime | None,
    as_of: datetime,
    limit: int,
    offset: int,
) -> list[Event]:
    """The page of the matching events, by ``occurred_at`` then id."""
    found = h.store.events_between(
        h.space,
        after_us=None if since is None else to_micros(since),
        before_us=None if until is None else to_micros(until),
        scope=scope,
    )
    kept = [e for e in found if e.recorded_at <= as_of and (kinds is None or e.kind in kinds)]
    return kept[offset : offset + limit]
