"""The server's handles: one :class:`~chronomem.Memory` per space, opened on first use and kept for
the life of the server, and up to ``readers`` handles per space for the read verbs (a read waits
for another read only when every reader is busy); one embedder (the model loaded once per
process) shared by all of them; each space's clock is the store's
(:class:`~chronomem.stores.clock.StoreClock`), so every process serving the store agrees on a
simulated instant."""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from chronomem.arrays import F32
from chronomem.checks import require_text
from chronomem.config import ReflectionConfig, ScoringConfig
from chronomem.embedders.base import Embedder
from chronomem.engine import Memory
from chronomem.errors import ConfigError, StoreError
from chronomem.llm.base import LLMClient
from chronomem.stores import open_store
from chronomem.stores.base import MemoryStore
from chronomem.stores.clock import StoreClock

__all__ = ["SharedEmbedder", "Spaces"]

_log = logging.getLogger(__name__)


class SharedEmbedder:
    """One embedder shared by every space's handle, called outside the handles' locks
    (``thread_safe``): at most ``runs`` model runs at once, so concurrent requests do not
    oversubscribe the cores, and the waiting runs served smallest first with aging — a run of
    ``n`` texts goes as if it had come ``n`` runs later. A call of more than ``turn`` texts runs
    in turns of ``turn``, each queued as the last ends: a recall's one query then waits for at
    most one turn of a long record's passages, not for all of them (a remember of a long
    dialogue turn holds a run for 20–60 ms on one thread), and a turn is overtaken by at most
    ``turn`` later runs (it never starves)."""

    thread_safe = True

    def __init__(
        self,
        inner: Embedder,
        *,
        runs: int = 1,
        turn: int = 8,
        on_run: Callable[[int], None] | None = None,
    ) -> None:
        if runs < 1:
            raise ConfigError(f"runs must be >= 1; got {runs}")
        if turn < 1:
            raise ConfigError(f"turn must be >= 1; got {turn}")
        self._turn_texts = turn
        self._inner = inner
        self.on_run = on_run  # told each run's text count (the service's metrics)
        self._free = runs
        self._turn = threading.Condition()
        self._waiting: list[tuple[int, int]] = []  # heap of (arrival + texts, arrival)
        self._arrivals = itertools.count()

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> F32:
        n = self._turn_texts
        if len(texts) <= n:
            return self._run(texts, progress=progress)
        return np.concatenate(
            [self._run(texts[i : i + n], progress=progress) for i in range(0, len(texts), n)]
        )

    def _run(self, texts: Sequence[str], *, progress: bool) -> F32:
        """One model run of ``texts``, when its turn comes."""
        arrival = next(self._arrivals)
        ticket = (arrival + len(texts), arrival)
        with self._turn:
            heapq.heappush(self._waiting, ticket)
            while not (self._free and self._waiting[0] == ticket):
                self._turn.wait()
            heapq.heappop(self._waiting)
            self._free -= 1
            self._turn.notify_all()  # the next in line may take another free run
        try:
            if self.on_run is not None:
                self.on_run(len(texts))
            return self._inner.embed(texts, progress=progress)
        finally:
            with self._turn:
                self._free += 1
                self._turn.notify_all()


@dataclass(slots=True, eq=False)
class _Reader:
    memory: Memory
    primary: bool  # the space's handle for every verb (reads go there last on ties)
    reads: int = 0  # reads running on it
    retired: bool = False  # closed when its last read ends (``Spaces.renew``)

    def done(self) -> bool:
        """Whether it is a retired extra handle that nothing uses any more (under the lock)."""
        return self.retired and not self.primary and self.reads == 0


@dataclass(slots=True, eq=False)
class _Readers:
    """A space's read handles and what runs on each."""

    members: list[_Reader]
    opening: int = 0  # handles being opened (outside the lock)

    def least_busy(self) -> _Reader:
        return min(self.members, key=lambda r: (r.reads, r.primary))


@dataclass(slots=True, kw_only=True)
class Spaces:
    """The server's handles. ``admin`` is the store connection for keys, clocks and health.
    ``readers``: how many handles of a space may run reads at once (:meth:`reader`); each holds
    its own copy of the space's in-memory index."""

    location: str | os.PathLike[str]
    embedder: Embedder | None
    preset: str | ScoringConfig = "default"
    llm: LLMClient | None = None
    reflection: ReflectionConfig | None = None
    readers: int = 1
    admin: MemoryStore = field(init=False)
    _open: dict[str, Memory] = field(default_factory=dict, init=False)
    _opening: dict[str, threading.Event] = field(default_factory=dict, init=False)  # set: done
    _readers: dict[str, _Readers] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    #: Set when the server begins to stop (and by :meth:`close`): the change streams and long
    #: polls end, so the server is not kept waiting for clients that would follow it forever.
    stopping: threading.Event = field(default_factory=threading.Event, init=False)

    def __post_init__(self) -> None:
        if self.readers < 1:
            raise ConfigError(f"readers must be >= 1; got {self.readers}")
        self.admin = open_store(self.location)

    def memory(self, space: str) -> Memory:
        """The space's handle, opened on first use — outside the lock (it loads the space's
        index: requests to other spaces go on meanwhile); requests to the space that come while
        it opens wait for that one handle. A failed open is tried again by the next request."""
        require_text(space, "space")
        while True:
            with self._lock:
                found = self._open.get(space)
                if found is not None:
                    return found
                if self.stopping.is_set():
                    raise StoreError("the service is stopping")
                opening = self._opening.get(space)
                if opening is None:
                    opening = self._opening[space] = threading.Event()
                    break
            opening.wait()  # then the handle, or another try when that open failed
        try:
            opened = self._handle(space)
        except BaseException:
            with self._lock:
                del self._opening[space]
            opening.set()
            raise
        with self._lock:
            del self._opening[space]
            closed = self.stopping.is_set()
            if not closed:
                self._open[space] = opened
        opening.set()
        if closed:  # the service closed while it opened: nothing may keep it
            opened.close()
            raise StoreError("the service is stopping")
        return opened

    def _handle(self, space: str) -> Memory:
        """A handle of ``space`` with its index loaded and ready for writes (``preload``): the
        request that opens it pays that, not the first read and write inside the handle's
        lock, with every other request to the space waiting behind them."""
        store = open_store(self.location)
        try:
            memory = Memory.open(
                store, embedder=self.embedder, clock=StoreClock(store, space),
                preset=self.preset, space=space, llm=self.llm, reflection=self.reflection,
            )  # fmt: skip
        except BaseException:
            store.close()
            raise
        try:
            memory.preload()
        except Exception as exc:  # an optimisation: the first read and write load it instead
            _log.warning("could not preload space %r: %s", space, exc)
        except BaseException:
            memory.close()
            raise
        return memory

    @contextmanager
    def reader(self, space: str) -> Iterator[Memory]:
        """A handle of the space for a read: the one with the fewest reads running (on ties not
        the space's main handle, which also serves every write), or a new one while every handle
        is busy and there are fewer than ``readers``. Each handle brings its index up to date with
        the store before it reads (as a second process would), so a read sees every write
        acknowledged before it began, whichever handle made it."""
        chosen = self._choose(space, self.memory(space))
        try:
            yield chosen.memory
        finally:
            with self._lock:
                chosen.reads -= 1
                done = chosen.done()
            if done:
                chosen.memory.close()

    def _choose(self, space: str, primary: Memory) -> _Reader:
        """The read handle for a read of ``space`` (see :meth:`reader`), counted as busy."""
        with self._lock:
            pool = self._readers.get(space)
            if pool is None:
                pool = self._readers[space] = _Readers([_Reader(primary, primary=True)])
            least = pool.least_busy()
            if least.reads == 0 or len(pool.members) + pool.opening >= self.readers:
                least.reads += 1
                return least
            pool.opening += 1
        return self._grow(space, pool, primary)

    def _grow(self, space: str, pool: _Readers, primary: Memory) -> _Reader:
        """A new read handle for ``space`` (opened outside the lock: it loads the index), counted
        as busy; the least busy existing one if it cannot be opened."""
        try:
            added: _Reader | None = _Reader(self._handle(space), primary=False)
        except Exception as exc:  # a reader is an optimisation: the open ones serve
            _log.warning("could not open another reader of space %r: %s", space, exc)
            added = None
        with self._lock:
            pool.opening -= 1
            if self._readers.get(space) is pool:
                chosen = pool.least_busy() if added is None else added
                if added is not None:
                    pool.members.append(added)
                chosen.reads += 1
                return chosen
        # renewed meanwhile: the old pool's idle handles are closed, and this one may hold the
        # thresholds from before the calibration: the read goes to the pool that replaced it
        if added is not None:
            added.memory.close()
        return self._choose(space, primary)

    def open_spaces(self) -> list[tuple[str, Memory]]:
        """The spaces opened so far and their main handles, by name."""
        with self._lock:
            return sorted(self._open.items())

    def readers_open(self, space: str) -> int:
        """How many handles of ``space`` serve reads now (0: none read yet)."""
        with self._lock:
            pool = self._readers.get(space)
            return 0 if pool is None else len(pool.members)

    def renew(self) -> None:
        """Close every space's extra read handles (after ``calibrate``, which changes the
        store's thresholds a handle read when it opened): the next reads open new ones. Reads
        running on them finish first."""
        with self._lock:
            members = [m for pool in self._readers.values() for m in pool.members]
            self._readers.clear()
            for member in members:
                member.retired = True
            idle = [m for m in members if m.done()]
        for member in idle:
            member.memory.close()

    def clock(self, space: str) -> StoreClock:
        return StoreClock(self.admin, require_text(space, "space"))

    def close(self) -> None:
        self.stopping.set()
        with self._lock:
            for pool in self._readers.values():
                for member in pool.members:
                    if not member.primary:
                        member.memory.close()
            self._readers.clear()
            for memory in self._open.values():
                memory.close()
            self._open.clear()
            self.admin.close()
