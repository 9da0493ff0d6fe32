"""A space's clock as the store keeps it (DESIGN §1, §7): the wall clock, or a simulated instant
that an owner sets and advances — persisted, so every process serving the space reads the same
time."""

from __future__ import annotations

from datetime import datetime

from chronomem.clock import Clock, SystemClock, from_micros
from chronomem.stores.base import MemoryStore

__all__ = ["StoreClock"]


class StoreClock:
    """A :class:`~chronomem.clock.Clock` that reads the space's simulated instant from the store
    on every call (one indexed lookup), falling back to ``wall`` when the space has none."""

    def __init__(self, store: MemoryStore, space: str, wall: Clock | None = None) -> None:
        self._store = store
        self._space = space
        self._wall = wall or SystemClock()

    def now(self) -> datetime:
        simulated = self._store.space_clock(self._space)
        return self._wall.now() if simulated is None else from_micros(simulated)

    @property
    def is_simulated(self) -> bool:
        return self._store.space_clock(self._space) is not None

    def __repr__(self) -> str:
        return f"StoreClock(space={self._space!r})"
