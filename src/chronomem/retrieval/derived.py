"""The columns an agent's arrays derive from values that never change once written — dedup,
domain and event keys, the filters' tag and metadata columns, key matches — kept across writes
so a read computes them only for rows added since (``retrieval/index.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt

from chronomem.retrieval.codes import domain_key
from chronomem.text import dedup_key, event_key

__all__ = ["MAX_FILTER_COLUMNS", "DerivedColumns"]

#: The most row-aligned columns a filter derived that an agent's arrays keep (oldest dropped).
MAX_FILTER_COLUMNS = 64

D = TypeVar("D", bound="DerivedColumns")


class DerivedColumns:
    """The derived columns of :class:`~chronomem.retrieval.index.AgentArrays` (its base):
    computed on first use from its rows, extended on append (:meth:`_extend_keys`), kept
    through removals."""

    # what they are derived from (AgentArrays' rows)
    n: int
    keys: list[str | None]
    domains: list[str | None]
    event_ids: list[str | None]
    _derived: dict[object, npt.NDArray[np.generic]]
    _growing: dict[object, Callable[[Any, int], npt.NDArray[np.generic]]]

    @property
    def texts(self) -> list[str]:
        raise NotImplementedError

    def texts_from(self, start: int) -> list[str]:
        raise NotImplementedError

    # The derived key columns, kept across appends and removals (computing them for every row
    # again after each write would cost a hash per record per read).
    _KEYS: ClassVar[dict[str, Callable[[Any, int], npt.NDArray[np.int64]]]] = {
        "text_keys": lambda a, start: np.fromiter(
            (dedup_key(t) for t in a.texts_from(start)), dtype=np.int64, count=a.n - start
        ),
        "domain_keys": lambda a, start: np.fromiter(
            (domain_key(d) for d in a.domains[start:]), dtype=np.int64, count=a.n - start
        ),
        "event_keys": lambda a, start: np.fromiter(
            (0 if e is None else event_key(e) for e in a.event_ids[start:]),
            dtype=np.int64,
            count=a.n - start,
        ),
    }

    def _extend_keys(self, start: int) -> None:
        """After an append of the rows from ``start``: the key columns computed so far gain the
        new rows' keys, the filters' columns are kept as they are (:meth:`column` extends one
        when it is next asked for); every other derived column is dropped."""
        kept: dict[object, npt.NDArray[np.generic]] = {}
        for name, compute in self._KEYS.items():
            cached = self._derived.get(name)
            if cached is not None and cached.shape[0] == start:
                kept[name] = np.concatenate((cached, compute(self, start)))
        for grown in self._growing:
            if grown in self._derived:
                kept[grown] = self._derived[grown]
        self._derived = kept
        self._growing = {name: f for name, f in self._growing.items() if name in kept}

    def column(
        self: D, key: object, compute: Callable[[D, int], npt.NDArray[np.generic]]
    ) -> npt.NDArray[Any]:
        """A row-aligned column derived from values that never change once written (tags,
        metadata, domains): ``compute(self, start)`` gives the rows from ``start`` on. Computed
        once, then kept across appends (only the new rows are computed) and removals; at most
        :data:`MAX_FILTER_COLUMNS` are kept, the least recently asked for dropped first."""
        cached = self._derived.get(key)
        if cached is not None and key in self._growing and cached.shape[0] <= self.n:
            if cached.shape[0] < self.n:  # rows appended since: only theirs are computed
                cached = np.concatenate((cached, compute(self, cached.shape[0])))
                self._derived[key] = cached
            self._growing[key] = self._growing.pop(key)  # most recent last
            return cached
        cached = self._derived[key] = compute(self, 0)
        self._growing.pop(key, None)
        self._growing[key] = compute
        while len(self._growing) > MAX_FILTER_COLUMNS:
            oldest = next(iter(self._growing))
            del self._growing[oldest]
            self._derived.pop(oldest, None)
        return cached

    def _key(self, name: str) -> npt.NDArray[np.int64]:
        cached = self._derived.get(name)
        if cached is None:
            cached = self._derived[name] = self._KEYS[name](self, 0)
        return cached  # type: ignore[return-value]

    def text_keys(self) -> npt.NDArray[np.int64]:
        """Dedup keys of the normalised texts."""
        return self._key("text_keys")

    def domain_keys(self) -> npt.NDArray[np.int64]:
        """Hashes of the domains (0 for no domain) for equality tests."""
        return self._key("domain_keys")

    def event_keys(self) -> npt.NDArray[np.int64]:
        """Hashes of the witnessed event ids (0 for none)."""
        return self._key("event_keys")

    def key_contains(self, substring: str) -> npt.NDArray[np.bool_]:
        """Which embedding keys contain ``substring`` (case-sensitive, like the reference code);
        a record's key is its ``metadata[EMBEDDING_KEY]``, else its text."""
        name = ("key_contains", substring)
        cached = self._derived.get(name)
        if cached is None:
            keys = (t if k is None else k for t, k in zip(self.texts, self.keys, strict=True))
            cached = np.fromiter((substring in k for k in keys), dtype=np.bool_, count=self.n)
            self._derived[name] = cached
        return cached  # type: ignore[return-value]
