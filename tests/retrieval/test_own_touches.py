"""A handle catching up with its own touches (``SpaceIndex._stamp``): when every change since its
last sync is a touch its store object committed alone, the index stamps ``last_accessed_at``
itself instead of reading the touched rows back — and holds exactly what the store holds, with
forward and backwards stamps, touches grouped or one per query, and another writer's change in
between (which makes it read the rows back)."""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chronomem import Memory, SimClock
from chronomem.clock import to_micros
from chronomem.stores.base import Touch

from ..conftest import store_of, unit

AGENTS = ["ana", "ben"]


def _stamps(mem: Memory, agents: list[str]) -> dict[str, int]:
    """Each record's ``last_accessed_at`` as the handle's index holds it, after its sync."""
    h = mem._h
    with h.store.snapshot():
        held = h.index.arrays(agents)
    return {str(a.ids[row]): int(a.last_accessed_at[row]) for a in held for row in range(a.n)}


def _stored(location: str | Path, clock: SimClock, agents: list[str]) -> dict[str, int]:
    """The same, as a handle opened afresh loads it from the store."""
    with Memory.open(location, embedder=None, clock=clock, index_snapshot=None) as fresh:
        return _stamps(fresh, agents)


class Loads:
    """Counts the index's catch-up loads (``load_columns`` after a sequence)."""

    def __init__(self, store: Any) -> None:
        self.inner = store.load_columns
        self.after: list[int] = []

    def __call__(self, space: str, agents: Any, *, after_seq: int | None = None) -> Any:
        if after_seq is not None:
            self.after.append(after_seq)
        return self.inner(space, agents, after_seq=after_seq)


@pytest.mark.parametrize("preset", ["default", "generative-agents-code"])
def test_own_touches_are_stamped_as_the_store_stamps_them(
    location: str | Path, clock: SimClock, preset: str
) -> None:
    """Touching reads (the Generative Agents code's: one query after another, stamping
    backwards when the read's instant is earlier), read after read: the index holds the store's
    stamps, and reads its rows back only after another handle's write or touch."""
    rng = random.Random(3)
    kept = Memory.open(location, embedder=None, clock=clock, preset=preset)
    other = Memory.open(location, embedder=None, clock=clock, preset=preset)
    try:
        for i in range(24):
            kept.remember(
                f"note {i} about the harbour", agent=AGENTS[i % 2],
                embedding=unit(1, i / 24, (i % 5) / 5),
            )  # fmt: skip
        clock.advance(hours=2)
        loads = Loads(kept._h.store)
        kept._h.store.load_columns = loads
        for step in range(30):
            clock.advance(minutes=rng.randint(1, 30))
            if step % 7 == 6:  # another handle's write or touch: the next sync reads rows back
                if step % 14 == 6:
                    other.remember(f"a later note {step}", agent="ana", embedding=unit(0, 1, step))
                else:
                    other.recall("note", agents=AGENTS, k=5, query_embedding=unit(0, 1, 0.3))
                loads.after.clear()
                kept.recall("harbour", agents=AGENTS, k=3, query_embedding=unit(1, 0.5, 0.5))
                assert loads.after, step
                assert _stamps(kept, AGENTS) == _stored(location, clock, AGENTS), step
                continue
            loads.after.clear()
            back = timedelta(minutes=rng.randint(0, 90))  # earlier than some stamps held
            kept.recall_many(
                ["harbour", "note"], agents=AGENTS, k=4, as_of=clock.now() - back,
                query_embeddings=[unit(1, rng.random(), 0), unit(rng.random(), 1, 0)],
            )  # fmt: skip
            assert _stamps(kept, AGENTS) == _stored(location, clock, AGENTS), step
            assert not loads.after, step  # the touches were stamped, not read back
    finally:
        kept.close()
        other.close()


def test_another_handles_change_between_own_touches_makes_the_handle_read_rows_back(
    location: str | Path, clock: SimClock
) -> None:
    """Another handle's touch committed between this handle's sync and its own next touch (as
    when reads of several threads interleave): the changes since are not all this handle's,
    so it reads the rows back, and holds the other's stamps too."""
    kept = Memory.open(location, embedder=None, clock=clock)
    other = Memory.open(location, embedder=None, clock=clock)
    try:
        ids = [
            kept.remember(f"note {i}", agent="ana", embedding=unit(1, i / 6, 0)).id
            for i in range(6)
        ]
        assert _stamps(kept, ["ana"]) == _stored(location, clock, ["ana"])  # synced
        clock.advance(minutes=10)
        assert other.recall("note", agent="ana", k=3, query_embedding=unit(1, 0, 0))
        clock.advance(minutes=10)
        store = store_of(kept)
        store.touch(kept.space, [Touch((ids[5],), to_micros(clock.now()))])  # own, no sync
        loads = Loads(store)
        store.load_columns = loads
        assert _stamps(kept, ["ana"]) == _stored(location, clock, ["ana"])
        assert loads.after
    finally:
        kept.close()
        other.close()


def test_a_touch_inside_a_callers_transaction_is_not_an_own_touch(
    location: str | Path, clock: SimClock
) -> None:
    """A touch joined to an open transaction may still roll back, and its ``change_seq`` be
    taken again by another change: it is not remembered."""
    with Memory.open(location, embedder=None, clock=clock) as mem:
        record = mem.remember("the lamp is lit", agent="ana")
        store = store_of(mem)
        seq = store.change_seq(mem.space)
        touch = Touch((record.id,), to_micros(clock.now()) + 1)
        store.touch(mem.space, [touch])
        assert store.own_touches(mem.space, seq, seq + 1) == [(touch,)]
        with store.write():
            store.touch(mem.space, [Touch((record.id,), to_micros(clock.now()) + 2)])
        assert store.own_touches(mem.space, seq, seq + 2) is None
        assert store.own_touches(mem.space, seq + 1, seq + 2) is None


def test_own_touches_are_stamped_on_arrays_mapped_from_a_snapshot(
    tmp_path: Path, clock: SimClock
) -> None:
    """A handle that opened from the index snapshot (its arrays a copy-on-write mapping of the
    file) stamps its touches there too, and the file keeps its bytes."""
    location = tmp_path / "m.db"
    with Memory.open(location, embedder=None, clock=clock, index_snapshot=1) as mem:
        for i in range(12):
            mem.remember(f"note {i} about the harbour", agent="ana", embedding=unit(1, i / 12, 0))
        mem.peek("harbour", agent="ana", k=1, query_embedding=unit(1, 0, 0))
        snapshot = mem._h.index.snapshot_path()
    assert snapshot is not None
    before = snapshot.read_bytes()
    clock.advance(hours=1)
    with Memory.open(location, embedder=None, clock=clock, index_snapshot=1) as mem:
        mem.peek("harbour", agent="ana", k=1, query_embedding=unit(1, 0, 0))
        assert mem._h.index.loaded_from == "snapshot"
        for step in range(3):
            clock.advance(minutes=5)
            mem.recall("harbour", agent="ana", k=4, query_embedding=unit(1, step / 3, 0))
            assert _stamps(mem, ["ana"]) == _stored(location, clock, ["ana"]), step
        assert snapshot.read_bytes() == before
