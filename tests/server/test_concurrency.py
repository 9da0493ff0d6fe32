"""Concurrent requests on one space (docs/http.md, "Concurrency"). The service embeds outside a
space's lock and serves small embedder calls first, so these tests check what that must never
change: concurrent reads give what a serial run gives, every concurrent write is stored once with
its own vectors and importance, touches never move an access time backwards, and a read does not
wait for another call's model run."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from chronomem import Memory, SimClock
from chronomem.client import Client
from chronomem.server.spaces import SharedEmbedder

from ..conftest import T0, FixedEmbedder, GatedEmbedder, store_of
from .service import running

SEEDS = [f"seed {i}: the lamp of harbour {i % 7} was lit by keeper {i % 5}" for i in range(60)]
NEW = [
    f"new note {i}. The ferry {i % 4} left late. Keeper {i % 3} wrote it down in the log."
    for i in range(48)
]
QUESTIONS = [f"who lit the lamp of harbour {i}" for i in range(7)]


class SlowEmbedder(FixedEmbedder):
    """Fixed vectors whose computation takes time with the GIL released, as a model run does,
    so concurrent calls really overlap."""

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        time.sleep(0.002 * len(texts))
        return super().embed(texts)


def _stored(location: str | Path) -> dict[str, tuple[float, bytes, bytes | None]]:
    """Each record's text → its importance, vector and passage vectors, as stored."""
    with Memory.open(location, embedder=None, space="town", create=False) as mem:
        return {
            s.record.text: (
                s.record.importance,
                np.asarray(s.embedding).tobytes(),
                None if s.passages is None else np.asarray(s.passages).tobytes(),
            )
            for s in store_of(mem).iter_records("town")
        }


def _hits(hits: Any) -> list[tuple[str, str, float]]:
    return [(h.record.id, h.record.text, h.score) for h in hits]


@pytest.mark.parametrize("readers", [1, 3])
def test_concurrent_requests_give_what_serial_execution_gives(
    fresh: Callable[[], str | Path], readers: int
) -> None:
    t1 = T0 + timedelta(hours=1)
    # The serial reference: the same writes, one at a time, by the engine.
    reference = fresh()
    with Memory.open(
        reference, embedder=SlowEmbedder(dim=16), clock=SimClock(T0), space="town",
        preset="generative-agents",
    ) as mem:  # fmt: skip
        mem.remember_many(SEEDS, agent="keeper")
        mem.clock.set(t1)  # type: ignore[attr-defined]
        for text in NEW:
            mem.remember(text, agent="keeper")
    location = fresh()
    shared = SharedEmbedder(SlowEmbedder(dim=16), runs=2)
    with (
        running(location, embedder=shared, preset="generative-agents", readers=readers) as (
            url,
            spaces,
        ),
        Client(url, space="town") as client,
    ):
        client.set_clock(T0)
        client.remember_many(SEEDS, agent="keeper")
        client.set_clock(t1)
        # Read-only reads at T0 see only the seeds, whatever the writes and touches around them.
        serial = {q: _hits(client.peek(q, k=5, as_of=T0)) for q in QUESTIONS}
        touches = [T0 + timedelta(minutes=m) for m in (50, 10, 40, 20, 30, 60)]

        def peek(q: str) -> tuple[str, list[tuple[str, str, float]]]:
            return q, _hits(client.peek(q, k=5, as_of=T0))

        def recall(q: str, at: Any) -> tuple[Any, list[str]]:
            return at, [h.record.id for h in client.recall(q, k=5, as_of=at)]

        with ThreadPoolExecutor(16) as pool:
            jobs = [pool.submit(client.remember, t, agent="keeper") for t in NEW]
            jobs += [pool.submit(peek, q) for q in QUESTIONS * 3]
            jobs += [pool.submit(recall, q, at) for q in QUESTIONS for at in touches]
            done = [j.result(timeout=120) for j in jobs]
        writes, peeks, recalls = done[: len(NEW)], done[len(NEW) : -42], done[-42:]
        assert all(w.stored for w in writes)
        assert len({w.id for w in writes}) == len(NEW)
        for q, hits in peeks:
            assert hits == serial[q], q
        # Each touched record's access time is the latest instant any read touched it at,
        # whatever order the touches landed in; untouched ones keep their recorded instant.
        latest: dict[str, Any] = {}
        for at, ids in recalls:
            for rid in ids:
                latest[rid] = max(latest.get(rid, at), at)
        seeds = client.records(limit=1000, as_of=T0)
        assert len(seeds) == len(SEEDS)
        assert latest
        for record in seeds:
            assert record.last_accessed_at == latest.get(record.id, T0), record.text
        if readers > 1:  # the reads ran on several handles of the space
            assert spaces.readers_open("town") > 1
    # Every write stored once, with the vectors, passages and importance a serial run gives it.
    assert _stored(location) == _stored(reference)


def test_a_read_does_not_wait_for_another_calls_model_run(tmp_path: Path) -> None:
    embedder = GatedEmbedder("a very long record")
    with Memory.open(tmp_path / "m.db", embedder=embedder, clock=SimClock(T0)) as mem:
        mem.remember("the lamp is lit", agent="keeper")
        with ThreadPoolExecutor(2) as pool:
            writing = pool.submit(mem.remember, "a very long record", agent="keeper")
            assert embedder.entered.wait(10)
            # The write is in its model run: reads and other writes go on meanwhile.
            reading = pool.submit(mem.recall, "lamp", k=3)
            try:
                assert [h.record.text for h in reading.result(timeout=10)] == ["the lamp is lit"]
                assert mem.remember("another note", agent="keeper").stored
            finally:
                embedder.release.set()
            assert writing.result(timeout=10).stored
        assert len(mem.peek("lamp", k=10)) == 3


class Recording(FixedEmbedder):
    """Records the size of each call, in the order the calls ran; the first call waits for
    ``release``."""

    def __init__(self) -> None:
        super().__init__(dim=4)
        self.ran: list[int] = []
        self.release = threading.Event()

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        if not self.ran:
            self.ran.append(len(texts))
            assert self.release.wait(30)
        else:
            self.ran.append(len(texts))
        return super().embed(texts)


def test_the_shared_embedder_serves_small_calls_first_and_never_starves_a_large_one() -> None:
    inner = Recording()
    shared = SharedEmbedder(inner, runs=1, turn=8)
    sizes = [1, 12] + [1] * 14  # the first holds the run while the rest queue, in this order
    threads = []
    for n in sizes:
        thread = threading.Thread(target=shared.embed, args=([f"t{i}" for i in range(n)],))
        thread.start()
        threads.append(thread)
        time.sleep(0.05)
    inner.release.set()
    for thread in threads:
        thread.join(10)
    # A run of n texts arriving at a is served as if it came at a + n. The 12-text call runs
    # in turns of 8: its first turn (arrival 1, served as 9) lets the six one-text calls that
    # came before 9 go first, then runs before the later ones; its second turn queues when the
    # first ends, behind the calls that came meanwhile — each turn overtaken by fewer calls
    # than its size, never starved, and no one-text call waits for more than one turn.
    assert inner.ran == [1] + [1] * 6 + [8] + [1] * 8 + [4]
