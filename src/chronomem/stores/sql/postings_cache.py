"""The postings of recently asked terms, held in memory by a store object (``fulltext.lexical``).

A lexical read used to fetch every posting of its query terms from the database: ~13,000 rows
for a typical question over 100,000 dialogue turns, 16 ms of the read's 27 (most of it building
Python tuples). Here a term's postings are fetched once, as arrays, with every agent's rows (its
document frequency is their count), and kept in step with the store by the space's
``change_seq``, the same counter the scoring arrays follow (``retrieval/index.py``):

- a deletion since the cached state (a tombstone) or more than ``_DELTA`` changed records drop the
  space's terms — they are fetched again as they are asked;
- otherwise the changed records' postings (new records; touched ones already held) are merged
  into the terms held: appended in place when their keys come after every held one (new
  records: a term's arrays have room to grow, so a write costs its own postings, not a copy of
  every held term it shares — a common word's 30k at 100k records), inserted otherwise. A
  record's postings never change while it exists: its text does not, and re-indexing
  (``fulltext.reindex``) clears every cache of its store object.

Writers of one space commit in ``change_seq`` order (``backend.bump``), so a read's snapshot
sees every change up to the counter it reads. Inside a write transaction nothing is kept: the
counter and rows it sees may still roll back (:meth:`PostingsCache.postings` with ``keep``).
The cache holds at most ``limit`` postings (20 bytes each, and up to as much again of room to
grow), least recently asked terms leaving first; a term with more than a quarter of that is
fetched for its read and not kept. :meth:`PostingsCache.warm` holds given terms ahead of any
read (``fulltext.warm``: a space's most frequent ones).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.arrays import F64, I32, I64
from chronomem.stores.sql.backend import SQLBackend, marks

__all__ = ["PostingsCache"]

_LIMIT = 1 << 22  # postings held per store object (~80 MB)
_DELTA = 10_000  # changed records past which catching up costs more than fetching again


_COLUMNS = ("pk", "agent", "tf", "dl")


@dataclass(eq=False, slots=True)
class _Term:
    """One term's postings in a space, in pk order: pk, agent (a code of ``_Space.agents``),
    term frequency, document length — the first ``n`` rows of arrays with room to grow, so the
    postings of new records (whose keys come after every held one) are appended in place."""

    pk: I64
    agent: I32
    tf: I32
    dl: I32
    n: int = -1  # (-1: every row)

    def __post_init__(self) -> None:
        if self.n < 0:
            self.n = int(self.pk.size)

    @property
    def size(self) -> int:
        return max(self.n, 1)  # an absent term is held too, and counts as one

    def columns(self, rows: npt.NDArray[np.bool_] | None = None) -> tuple[I64, I32, I32]:
        """The held (pk, tf, dl), of the rows ``rows`` selects when given."""
        n = self.n
        if rows is None:
            return self.pk[:n], self.tf[:n], self.dl[:n]
        return self.pk[:n][rows], self.tf[:n][rows], self.dl[:n][rows]

    def merge(self, other: _Term) -> _Term:
        """These postings and ``other``'s records that are not among them, in pk order: in
        place when they all come after the last held one (new records), else a new term (a
        backfill's, whose keys fall in between)."""
        n, mine = self.n, self.pk[: self.n]
        theirs = other.pk[: other.n]
        if not theirs.size:
            return self
        if not n or theirs[0] > mine[-1]:  # new records only (a catch-up's): appended
            self._append(other, np.ones(theirs.size, dtype=np.bool_))
            return self
        at = np.searchsorted(mine, theirs)
        held = np.zeros(theirs.size, dtype=np.bool_)
        inside = at < n
        held[inside] = mine[at[inside]] == theirs[inside]
        if held.all():
            return self
        new = ~held
        if (at[new] == n).all():
            self._append(other, new)
            return self
        where = at[new]

        def insert(column: str) -> npt.NDArray[Any]:
            mine, theirs = getattr(self, column)[:n], getattr(other, column)[: other.n]
            return np.insert(mine, where, theirs[new])

        return _Term(insert("pk"), insert("agent"), insert("tf"), insert("dl"))

    def _append(self, other: _Term, rows: npt.NDArray[np.bool_]) -> None:
        count = int(rows.sum())
        end = self.n + count
        if end > self.pk.size:  # room for twice as many: appends cost their own rows
            capacity = max(end, 2 * self.pk.size, 16)
            for c in _COLUMNS:
                old = getattr(self, c)
                grown = np.empty(capacity, dtype=old.dtype)
                grown[: self.n] = old[: self.n]
                setattr(self, c, grown)
        for c in _COLUMNS:
            getattr(self, c)[self.n : end] = getattr(other, c)[: other.n][rows]
        self.n = end


@dataclass(eq=False, slots=True)
class _Space:
    seq: int = -1
    docs: tuple[int, int] = (-1, -1)  # the space's document count and length sum at ``seq``
    agents: dict[str, int] = field(default_factory=dict)
    terms: set[str] = field(default_factory=set)


class PostingsCache:
    """Postings of recently asked terms, per space, for one store object (see the module)."""

    def __init__(self, limit: int = _LIMIT) -> None:
        self.limit = limit
        self._spaces: dict[str, _Space] = {}
        self._terms: OrderedDict[tuple[str, str], _Term] = OrderedDict()
        self._size = 0

    def clear(self) -> None:
        self._spaces.clear()
        self._terms.clear()
        self._size = 0

    def postings(
        self,
        db: SQLBackend,
        space: str,
        terms: Sequence[str],
        agents: Sequence[str],
        seq: int,
        docs: tuple[int, int],
        *,
        keep: bool = True,
    ) -> tuple[list[tuple[I64, I32, I32]], F64]:
        """The postings of ``terms`` (distinct) for ``agents`` — per term, in ``terms``' order,
        its (pk, tf, dl) columns in pk order — and each term's document frequency in the space,
        as of the snapshot whose ``change_seq`` is ``seq`` and whose totals are ``docs``
        (document count, length sum; call inside it). ``keep=False``: fetched, nothing kept."""
        state = self._current(db, space, seq, docs) if keep else _Space()
        held = {t: self._used(space, t) for t in terms if keep and (space, t) in self._terms}
        fetched = _fetch(db, space, [t for t in terms if t not in held], state.agents)
        held.update(fetched)
        if keep:
            self._keep(space, state, fetched)
        df = np.array([held[t].n for t in terms], dtype=np.float64)
        codes = {state.agents[a] for a in agents if a in state.agents}
        wanted = np.fromiter(codes, np.int32, len(codes))
        every = len(codes) == len(state.agents)  # every agent with a posting is asked
        parts = []
        for term in terms:
            t = held[term]
            parts.append(t.columns(None if every else np.isin(t.agent[: t.n], wanted)))
        return parts, df

    def warm(
        self, db: SQLBackend, space: str, terms: Sequence[str], seq: int, docs: tuple[int, int]
    ) -> int:
        """Hold the postings of ``terms`` (those not held yet), as :meth:`postings` would, as of
        the snapshot whose ``change_seq`` is ``seq`` and whose totals are ``docs`` (call inside
        it, outside any write). Returns how many postings it fetched."""
        state = self._current(db, space, seq, docs)
        missing = [t for t in terms if (space, t) not in self._terms]
        fetched = _fetch(db, space, missing, state.agents)
        self._keep(space, state, fetched)
        return sum(t.n for t in fetched.values())

    def _current(self, db: SQLBackend, space: str, seq: int, docs: tuple[int, int]) -> _Space:
        """The space's held state, caught up with the snapshot at ``seq``."""
        state = self._spaces.setdefault(space, _Space())
        if state.seq != seq:
            self._catch_up(db, space, state, seq, docs)
            state.seq, state.docs = seq, docs
        return state

    def _keep(self, space: str, state: _Space, fetched: dict[str, _Term]) -> None:
        """Hold what was fetched, but a term of more than a quarter of the cache."""
        for term, postings in fetched.items():
            if postings.size * 4 <= self.limit:
                self._hold(space, state, term, postings)

    def _used(self, space: str, term: str) -> _Term:
        self._terms.move_to_end((space, term))
        return self._terms[(space, term)]

    def _hold(self, space: str, state: _Space, term: str, postings: _Term) -> None:
        self._terms[(space, term)] = postings
        state.terms.add(term)
        self._size += postings.size
        while self._size > self.limit:
            (other, old), dropped = self._terms.popitem(last=False)
            self._spaces[other].terms.discard(old)
            self._size -= dropped.size

    def _drop(self, space: str, state: _Space) -> None:
        for term in state.terms:
            self._size -= self._terms.pop((space, term)).size
        state.terms.clear()

    def _catch_up(
        self, db: SQLBackend, space: str, state: _Space, seq: int, docs: tuple[int, int]
    ) -> None:
        """Bring the space's terms from ``state.seq`` to the snapshot's counter. Postings change
        only when records are added (the space's document count grows) or purged (a
        tombstone): a change that does neither — a touch, a closing, a rating — costs one query.

        The records added since are the space's newest: its writers take the space's lock
        (``backend.bump``) before they insert, and keys only grow, so the ``n`` added records
        (the growth of the document count) are the ``n`` changed records of the largest keys.
        Only their postings are read: the records a read touched since changed too, and
        reading their postings again (a touch of 10 dialogue turns, ~500 postings in ~300
        groups) cost up to 14 ms of the next read, to learn nothing."""
        if not state.terms or db.own_touches(space, state.seq, seq) is not None:
            return  # (touches made by this store object alone: no text changed)
        after = (space, state.seq)
        gone = db._query(
            "SELECT 1 FROM tombstones WHERE space = ? AND change_seq > ? LIMIT 1", after
        )
        added = docs[0] - state.docs[0]
        if gone or added < 0 or added > _DELTA or (added == 0 and docs != state.docs):
            self._drop(space, state)
            return
        if not added:
            return
        # (by pk alone, which names one record of one space: with the space too, SQLite's
        # planner may walk the space's postings instead, 400 ms at 100k records)
        rows = db._query(
            f"SELECT term, agent, {db._joined('pk')}, {db._joined('tf')}, {db._joined('dl')}"
            " FROM postings WHERE pk IN (SELECT pk FROM records WHERE space = ?"
            " AND change_seq > ? ORDER BY pk DESC LIMIT ?) GROUP BY term, agent",
            (*after, added),
        )
        held = [row for row in rows if row[0] in state.terms]
        for term, postings in _grouped(held, state.agents).items():
            key = (space, term)
            size = self._terms[key].size
            merged = self._terms[key].merge(postings)
            self._size += merged.size - size
            self._terms[key] = merged


def _fetch(
    db: SQLBackend, space: str, terms: Sequence[str], agents: dict[str, int]
) -> dict[str, _Term]:
    """Every posting of ``terms`` in the space (an absent term: empty arrays), agents coded into
    ``agents``. One row per term and agent, its columns joined into strings the database makes
    and numpy parses: a row per posting made Python objects of every value (at 100k dialogue
    turns, ~18,000 postings for a question: 66 ms against 20). Terms travel as their position in
    ``terms``: no term strings cross back from the database.

    A space of one agent groups by term alone, in the primary key's order: grouping by agent
    too made the database sort every posting first (terms of ~2,000 postings, three runs of
    50: 1.1–2.2 ms against 0.7–1.1). A term whose postings name more than one agent anyway (a
    store whose agents table lacks one) is fetched again by agent."""
    if not terms:
        return {}
    positions = dict(zip(terms, range(len(terms)), strict=True))
    rows: list[Sequence[Any]] = []
    several = list(terms)
    if len(db._query("SELECT agent FROM agents WHERE space = ? LIMIT 2", (space,))) == 1:
        grouped = _postings(db, space, several, positions, "MIN(agent), MAX(agent)", "term")
        rows = [(key, low, *columns) for key, low, high, *columns in grouped if low == high]
        several = [terms[int(key)] for key, low, high, *_ in grouped if low != high]
    if several:
        rows += _postings(db, space, several, positions, "agent", "term, agent")
    found = {terms[int(position)]: t for position, t in _grouped(rows, agents).items()}
    empty = np.empty(0, np.int32)
    for term in terms:
        found.setdefault(term, _Term(np.empty(0, np.int64), empty, empty, empty))
    return found


def _postings(
    db: SQLBackend,
    space: str,
    terms: Sequence[str],
    positions: dict[str, int],
    agent: str,
    group: str,
) -> list[Any]:
    """Rows of (position, ``agent`` columns, pks, tfs, dls) of ``terms``' postings, grouped by
    ``group``; a term is named by its ``positions`` entry."""
    which = "CASE term " + " ".join(f"WHEN ? THEN {positions[t]}" for t in terms) + " END"
    return db._query(
        f"SELECT {which}, {agent}, {db._joined('pk')}, {db._joined('tf')}, {db._joined('dl')}"
        f" FROM postings WHERE space = ? AND term IN ({marks(len(terms))}) GROUP BY {group}",
        (*terms, space, *terms),
    )


def _ints(joined: str) -> I64:
    """The integers of a comma-separated string."""
    return np.fromstring(joined, dtype=np.int64, sep=",")


def _grouped(rows: Sequence[Sequence[Any]], agents: dict[str, int]) -> dict[Any, _Term]:
    """Rows of (key, agent, pks, tfs, dls) — one term's postings of one agent, their columns
    joined by the database (``_joined``) — as one :class:`_Term` per key, in pk order, agents
    coded into ``agents`` (codes added for agents not in it yet). Each column of every row is
    parsed in one call: a catch-up brings ~50 terms of one posting each, and parsing them row
    by row cost ~25 µs a row."""
    if not rows:
        return {}
    sizes = np.fromiter((r[2].count(",") + 1 for r in rows), np.intp, len(rows))
    ends = np.cumsum(sizes)
    pks, tfs, dls = (_ints(",".join(r[i] for r in rows)) for i in (2, 3, 4))
    codes = np.repeat(
        np.fromiter((agents.setdefault(r[1], len(agents)) for r in rows), np.int32, len(rows)),
        sizes,
    )
    of_key: dict[Any, list[int]] = {}
    for i, row in enumerate(rows):
        of_key.setdefault(row[0], []).append(i)
    found: dict[Any, _Term] = {}
    for key, members in of_key.items():
        at = np.concatenate([np.arange(ends[i] - sizes[i], ends[i]) for i in members])
        pk = pks[at]
        if pk.size > 1 and not (pk[1:] > pk[:-1]).all():
            at = at[np.argsort(pk, kind="stable")]
            pk = pks[at]
        found[key] = _Term(pk, codes[at], tfs[at].astype(np.int32), dls[at].astype(np.int32))
    return found
