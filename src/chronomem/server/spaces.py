"""One :class:`~chronomem.Memory` per space, opened on first use and kept for the life of the
server; one embedder (the model loaded once per process) shared by all of them; each space's
clock is the store's (:class:`~chronomem.stores.clock.StoreClock`), so every process serving the
store agrees on a simulated instant."""

from __future__ import annotations

import heapq
import itertools
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from chronomem.arrays import F32
from chronomem.checks import require_text
from chronomem.config import ReflectionConfig, ScoringConfig
from chronomem.embedders.base import Embedder
from chronomem.engine import Memory
from chronomem.errors import ConfigError
from chronomem.llm.base import LLMClient
from chronomem.stores import open_store
from chronomem.stores.base import MemoryStore
from chronomem.stores.clock import StoreClock

__all__ = ["SharedEmbedder", "Spaces"]


class SharedEmbedder:
    """One embedder shared by every space's handle, called outside the handles' locks
    (``thread_safe``): at most ``runs`` model runs at once, so concurrent requests do not
    oversubscribe the cores, and the waiting calls served smallest first with aging — a call of
    ``n`` texts goes as if it had come ``n`` calls later. A recall's one query then does not wait
    behind a long record's passages, and a large call is overtaken by at most ``n`` later ones
    (it never starves)."""

    thread_safe = True

    def __init__(self, inner: Embedder, *, runs: int = 1) -> None:
        if runs < 1:
            raise ConfigError(f"runs must be >= 1; got {runs}")
        self._inner = inner
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
            return self._inner.embed(texts, progress=progress)
        finally:
            with self._turn:
                self._free += 1
                self._turn.notify_all()


@dataclass(slots=True, kw_only=True)
class Spaces:
    """The server's handles. ``admin`` is the store connection for keys, clocks and health."""

    location: str | os.PathLike[str]
    embedder: Embedder | None
    preset: str | ScoringConfig = "default"
    llm: LLMClient | None = None
    reflection: ReflectionConfig | None = None
    admin: MemoryStore = field(init=False)
    _open: dict[str, Memory] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self.admin = open_store(self.location)

    def memory(self, space: str) -> Memory:
        """The space's handle, opened on first use."""
        require_text(space, "space")
        with self._lock:
            found = self._open.get(space)
            if found is None:
                store = open_store(self.location)
                try:
                    found = Memory.open(
                        store, embedder=self.embedder, clock=StoreClock(store, space),
                        preset=self.preset, space=space, llm=self.llm,
                        reflection=self.reflection,
                    )  # fmt: skip
                except BaseException:
                    store.close()
                    raise
                self._open[space] = found
            return found

    def clock(self, space: str) -> StoreClock:
        return StoreClock(self.admin, require_text(space, "space"))

    def close(self) -> None:
        with self._lock:
            for memory in self._open.values():
                memory.close()
            self._open.clear()
            self.admin.close()
