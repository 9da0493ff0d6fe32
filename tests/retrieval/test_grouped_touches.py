"""Touches written in groups after the read's lock (docs/design/grouped-touches.md): a read scores
while another read's touch commits, the touches queued meanwhile share one transaction, every
recall returns only once its touch is durable (seen by another handle), a failed group fails
every read in it, backwards stamps keep the reads' order, and closing writes what was queued."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from chronomem import Memory, SimClock
from chronomem.clock import to_micros
from chronomem.engine.touches import TouchWriter
from chronomem.errors import StoreError
from chronomem.stores.base import Touch

from ..conftest import T0, store_of, unit
from ..waiting import within

WAIT = 30  # seconds: a bound on every wait here, far above what the work takes


class HeldTouches:
    """Wraps a store's ``touch``: records each call's touches, and holds the first call (while
    it holds the TouchWriter's group) until ``release`` is set; ``fail`` makes calls raise."""

    def __init__(self, store: Any) -> None:
        self.inner = store.touch
        self.calls: list[list[Touch]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.fail: Exception | None = None

    def __call__(self, space: str, touches: Sequence[Touch]) -> int:
        self.calls.append(list(touches))
        if len(self.calls) == 1:
            self.entered.set()
            assert self.release.wait(WAIT)
        if self.fail is not None:
            raise self.fail
        return int(self.inner(space, touches))


@pytest.fixture
def town(tmp_path: Path) -> Iterator[tuple[Memory, SimClock, list[str], HeldTouches]]:
    clock = SimClock(T0)
    mem = Memory.open(tmp_path / "m.db", embedder=None, clock=clock, space="town")
    ids = [
        mem.remember(f"note {i}", agent="keeper", embedding=unit(1, i / 10, 0)).id for i in range(6)
    ]
    clock.advance(hours=1)
    held = HeldTouches(store_of(mem))
    store_of(mem).touch = held
    yield mem, clock, ids, held
    held.release.set()
    mem.close()


def _accessed(path: Path, ids: Sequence[str]) -> dict[str, Any]:
    """``last_accessed_at`` of ``ids`` as another handle on the file reads them."""
    with Memory.open(path, embedder=None, space="town") as other:
        return {r.id: r.last_accessed_at for r in other.get_many(ids)}


def _recall(mem: Memory, x: float) -> Callable[[], list[str]]:
    return lambda: [
        h.record.id for h in mem.recall("q", agent="keeper", k=1, query_embedding=unit(1, x, 0))
    ]


def test_a_read_scores_while_another_reads_touch_commits(
    town: tuple[Memory, SimClock, list[str], HeldTouches],
) -> None:
    mem, _, ids, held = town
    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(_recall(mem, 0.0))
        assert held.entered.wait(WAIT)  # the first recall's touch is being written, held
        # A read-only read is answered meanwhile: the handle's lock is not held by the touch.
        seen = pool.submit(mem.peek, "q", agent="keeper", k=1, query_embedding=unit(1, 0.5, 0))
        assert [h.record.id for h in seen.result(WAIT)] == [ids[5]]
        # Touching reads score meanwhile too, and wait for their touches.
        later = [pool.submit(_recall(mem, x)) for x in (0.2, 0.3, 0.4)]
        assert within(WAIT, lambda: len(mem._h.touches._queued) == 3)  # all three scored and queued
        assert not first.done()
        assert not any(f.done() for f in later)  # none returned before its touch is durable
        held.release.set()
        assert first.result(WAIT) == [ids[0]]
        assert sorted(i for f in later for i in f.result(WAIT)) == [ids[2], ids[3], ids[4]]
    # One commit for the first read's touch, one for the three queued during it.
    assert [len(c) for c in held.calls] == [1, 3]


def test_a_recall_returns_once_its_touch_is_durable(
    town: tuple[Memory, SimClock, list[str], HeldTouches], tmp_path: Path
) -> None:
    mem, clock, ids, held = town
    held.release.set()
    assert _recall(mem, 0.0)() == [ids[0]]
    # (an untouched record's access time is when it was written)
    assert _accessed(tmp_path / "m.db", ids[:2]) == {ids[0]: clock.now(), ids[1]: T0}


def test_a_failed_group_fails_every_read_in_it_and_touches_nothing(
    town: tuple[Memory, SimClock, list[str], HeldTouches], tmp_path: Path
) -> None:
    mem, _, ids, held = town
    held.fail = StoreError("the disk is full")
    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(_recall(mem, 0.0))
        assert held.entered.wait(WAIT)
        second = pool.submit(_recall(mem, 0.5))
        assert within(WAIT, lambda: len(mem._h.touches._queued) == 1)
        held.release.set()
        for future in (first, second):
            with pytest.raises(StoreError, match="the disk is full"):
                future.result(WAIT)
    assert set(_accessed(tmp_path / "m.db", ids).values()) == {T0}  # as written
    held.fail = None  # the handle goes on: the next recall touches
    assert _recall(mem, 0.0)() == [ids[0]]


def test_closing_writes_the_touches_already_queued(
    town: tuple[Memory, SimClock, list[str], HeldTouches], tmp_path: Path
) -> None:
    mem, clock, ids, held = town
    held.release.set()
    ticket = mem._h.touches.queue([Touch((ids[3],), to_micros(clock.now()))])
    mem.close()  # before anyone waited for the ticket
    assert ticket.done
    assert ticket.error is None
    assert _accessed(tmp_path / "m.db", [ids[3]]) == {ids[3]: clock.now()}
    with pytest.raises(StoreError, match="closed"):
        mem._h.touches.queue([Touch((ids[4],), to_micros(clock.now()))])


def test_a_group_keeps_the_order_the_reads_queued_in(
    town: tuple[Memory, SimClock, list[str], HeldTouches], tmp_path: Path
) -> None:
    """Backwards stamps (``generative-agents-code``) do not commute: the last queued wins."""
    mem, clock, ids, held = town
    writer = TouchWriter(store_of(mem), "town")
    at = [to_micros(clock.now() + timedelta(hours=h)) for h in (5, 2, 3)]
    tickets = [writer.queue([Touch((ids[1],), a, backwards=True)]) for a in at]
    held.release.set()
    writer.wait(tickets[0])  # writes all three, in one group
    assert all(t.done for t in tickets)
    assert held.calls == [[Touch((ids[1],), a, backwards=True) for a in at]]
    assert _accessed(tmp_path / "m.db", [ids[1]]) == {ids[1]: clock.now() + timedelta(hours=3)}
