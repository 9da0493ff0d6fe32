"""The postings of recently asked terms, held in memory by a store object (``fulltext.lexical``).

A lexical read used to fetch every posting of its query terms from the database: ~13,000 rows
for a typical question over 100,000 dialogue turns, 16 ms of the read's 27 (most of it building
Python tuples). Here a term's postings are fetched once, as arrays, with every agent's rows (its
document frequency is their count), and kept in step with the store by the space's
``change_seq``, the same counter the scoring arrays follow (``retrieval/index.py``):

- a deletion since the cached state (a tombstone) or more than ``_DELTA`` changed records drop the
  space's terms — they are fetched again as they are asked;
- otherwise the changed records' postings (new records; touched ones already held) are merged
  into the terms held. A record's postings never change while it exists: its text does not, and
  re-indexing (``fulltext.reindex``) clears every cache of its store object.

Writers of one space commit in ``change_seq`` order (``backend.bump``), so a read's snapshot
sees every change up to the counter it reads. Inside a write transaction nothing is kept: the
counter and rows it sees may still roll back (:meth:`PostingsCache.postings` with ``keep``).
The cache holds at most ``limit`` postings (20 bytes each), least recently asked terms leaving
first; a term with more than a quarter of that is fetched for its read and not kept.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.arrays import F64, I64
from chronomem.stores.sql.backend import SQLBackend, marks

__all__ = ["PostingsCache"]

_LIMIT = 1 << 22  # postings held per store object (~80 MB)
_DELTA = 10_000  # changed records past which catching up costs more than fetching again


@dataclass(eq=False, slots=True)
class _Term:
    """One term's postings in a space, in pk order: pk, agent (a code of ``_Space.agents``),
    term frequency, document length."""

    pk: I64
    agent: npt.NDArray[np.int32]
    tf: I64
    dl: I64

    @property
    def size(self) -> int:
        return max(int(self.pk.size), 1)  # an absent term is held too, and counts as one

    def merge(self, other: _Term) -> _Term:
        """These postings and ``other``'s records that are not among them, in pk order."""
        at = np.searchsorted(self.pk, other.pk)
        held = np.zeros(other.pk.size, dtype=np.bool_)
        inside = at < self.pk.size
        held[inside] = self.pk[at[inside]] == other.pk[inside]
        if held.all():
            return self
        new, where = ~held, at[~held]

        def insert(mine: npt.NDArray[Any], theirs: npt.NDArray[Any]) -> npt.NDArray[Any]:
            return np.insert(mine, where, theirs[new])

        return _Term(
            insert(self.pk, other.pk), insert(self.agent, other.agent),
            insert(self.tf, other.tf), insert(self.dl, other.dl),
        )  # fmt: skip


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
    ) -> tuple[list[tuple[I64, I64, I64]], F64]:
        """The postings of ``terms`` (distinct) for ``agents`` — per term, in ``terms``' order,
        its (pk, tf, dl) columns in pk order — and each term's document frequency in the space,
        as of the snapshot whose ``change_seq`` is ``seq`` and whose totals are ``docs``
        (document count, length sum; call inside it). ``keep=False``: fetched, nothing kept."""
        state = self._spaces.setdefault(space, _Space()) if keep else _Space()
        if keep and state.seq != seq:
            self._catch_up(db, space, state, docs)
            state.seq, state.docs = seq, docs
        held = {t: self._used(space, t) for t in terms if keep and (space, t) in self._terms}
        fetched = _fetch(db, space, [t for t in terms if t not in held], state.agents)
        held.update(fetched)
        for term, postings in fetched.items():
            if keep and postings.size * 4 <= self.limit:
                self._hold(space, state, term, postings)
        df = np.array([held[t].pk.size for t in terms], dtype=np.float64)
        codes = {state.agents[a] for a in agents if a in state.agents}
        wanted = np.fromiter(codes, np.int32, len(codes))
        every = len(codes) == len(state.agents)  # every agent with a posting is asked
        parts = []
        for term in terms:
            t = held[term]
            if every:
                parts.append((t.pk, t.tf, t.dl))
            else:
                rows = np.isin(t.agent, wanted)
                parts.append((t.pk[rows], t.tf[rows], t.dl[rows]))
        return parts, df

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

    def _catch_up(self, db: SQLBackend, space: str, state: _Space, docs: tuple[int, int]) -> None:
        """Bring the space's terms from ``state.seq`` to the snapshot's counter. Postings change
        only when records are added (the space's document count grows) or purged (a
        tombstone): a change that does neither — a touch, a closing, a rating — costs one query."""
        if not state.terms:
            return
        after = (space, state.seq)
        gone = db._query(
            "SELECT 1 FROM tombstones WHERE space = ? AND change_seq > ? LIMIT 1", after
        )
        if gone:
            self._drop(space, state)
            return
        if docs == state.docs:
            return
        changed = db._query(
            "SELECT COUNT(*) FROM records WHERE space = ? AND change_seq > ?", after
        )[0][0]
        if changed > _DELTA:
            self._drop(space, state)
            return
        if not changed:
            return
        # (by pk alone, which names one record of one space: with the space too, SQLite's
        # planner may walk the space's postings instead, 400 ms at 100k records)
        rows = db._query(
            f"SELECT term, agent, {db._joined('pk')}, {db._joined('tf')}, {db._joined('dl')}"
            " FROM postings WHERE pk IN"
            " (SELECT pk FROM records WHERE space = ? AND change_seq > ?) GROUP BY term, agent",
            after,
        )
        held = [row for row in rows if row[0] in state.terms]
        for term, postings in _grouped(held, state.agents).items():
            key = (space, term)
            merged = self._terms[key].merge(postings)
            self._size += merged.size - self._terms[key].size
            self._terms[key] = merged


def _fetch(
    db: SQLBackend, space: str, terms: Sequence[str], agents: dict[str, int]
) -> dict[str, _Term]:
    """Every posting of ``terms`` in the space (an absent term: empty arrays), agents coded into
    ``agents``. One row per term and agent, its columns joined into strings the database makes
    and numpy parses: a row per posting made Python objects of every value (at 100k dialogue
    turns, ~18,000 postings for a question: 66 ms against 20). Terms travel as their position in
    ``terms``: no term strings cross back from the database."""
    if not terms:
        return {}
    which = "CASE term " + " ".join(f"WHEN ? THEN {i}" for i in range(len(terms))) + " END"
    rows = db._query(
        f"SELECT {which}, agent, {db._joined('pk')}, {db._joined('tf')}, {db._joined('dl')}"
        f" FROM postings WHERE space = ? AND term IN ({marks(len(terms))}) GROUP BY term, agent",
        (*terms, space, *terms),
    )
    found = {terms[int(position)]: t for position, t in _grouped(rows, agents).items()}
    empty = np.empty(0, np.int64)
    for term in terms:
        found.setdefault(term, _Term(empty, np.empty(0, np.int32), empty, empty))
    return found


def _ints(joined: str) -> I64:
    """The integers of a comma-separated string."""
    return np.fromstring(joined, dtype=np.int64, sep=",")


def _grouped(rows: Sequence[Sequence[Any]], agents: dict[str, int]) -> dict[Any, _Term]:
    """Rows of (key, agent, pks, tfs, dls) — one term's postings of one agent, their columns
    joined by the database (``_joined``) — as one :class:`_Term` per key, in pk order, agents
    coded into ``agents`` (codes added for agents not in it yet)."""
    groups: dict[Any, list[tuple[I64, npt.NDArray[np.int32], I64, I64]]] = {}
    for key, agent, pks, tfs, dls in rows:
        pk = _ints(pks)
        code = np.full(pk.size, agents.setdefault(agent, len(agents)), np.int32)
        groups.setdefault(key, []).append((pk, code, _ints(tfs), _ints(dls)))
    found: dict[Any, _Term] = {}
    for key, parts in groups.items():
        pk, code, tf, dl = (np.concatenate([p[i] for p in parts]) for i in range(4))
        order = np.argsort(pk, kind="stable")
        found[key] = _Term(pk[order], code[order], tf[order], dl[order])
    return found
