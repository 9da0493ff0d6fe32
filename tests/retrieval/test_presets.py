"""The paper's recency vs the reference code's, on a real store (issue acceptance 1)."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from chronomem import Memory, SimClock
from chronomem.clock import to_micros
from chronomem.stores.base import Touch

from ..conftest import store_of, unit

# Irregular gaps between creations (hours).
GAPS = (0, 1, 5, 6, 30, 31, 100)


def _store(mem: Memory, clock: SimClock) -> list[str]:
    ids = []
    for gap in GAPS:
        clock.set(clock.now() + timedelta(hours=gap))
        ids.append(mem.remember(f"memory {gap}", importance=5, embedding=unit(1, 0, 0)).id)
    clock.advance(hours=3)
    return ids  # in creation (= last-access) order, oldest first


def test_paper_ranks_most_recently_accessed_first(mem: Memory, clock: SimClock) -> None:
    ids = _store(mem, clock)
    hits = mem.peek("q", k=len(ids), query_embedding=unit(1, 0, 0), preset="generative-agents")
    assert [h.record.id for h in hits] == ids[::-1]


def test_code_compat_ranks_oldest_accessed_first(mem: Memory, clock: SimClock) -> None:
    ids = _store(mem, clock)
    hits = mem.peek("q", k=len(ids), query_embedding=unit(1, 0, 0), preset="generative-agents-code")
    assert [h.record.id for h in hits] == ids


def test_access_times_not_creation_times_decide(mem: Memory, clock: SimClock) -> None:
    ids = _store(mem, clock)
    # Access in a scrambled order at irregular instants: the oldest record becomes the most
    # recently accessed, and so on.
    order = [ids[0], ids[4], ids[2], ids[6], ids[1], ids[5], ids[3]]
    for i, rid in enumerate(order):
        at = to_micros(clock.now() + timedelta(hours=[1, 2, 7, 8, 20, 21, 50][i]))
        store_of(mem).touch(mem.space, [Touch((rid,), at)])
    clock.advance(hours=60)
    paper = mem.peek("q", k=7, query_embedding=unit(1, 0, 0), preset="generative-agents")
    code = mem.peek("q", k=7, query_embedding=unit(1, 0, 0), preset="generative-agents-code")
    assert [h.record.id for h in paper] == order[::-1]
    assert [h.record.id for h in code] == order


def test_code_compat_skips_idle_memories_and_chats(mem: Memory, clock: SimClock) -> None:
    mem.remember("the stove is idle", embedding=unit(1, 0, 0))
    mem.remember("we chatted about the party", kind="chat", embedding=unit(1, 0, 0))
    keep = mem.remember("Isabella is baking", embedding=unit(1, 0, 0)).id
    code = mem.peek("q", query_embedding=unit(1, 0, 0), preset="generative-agents-code")
    paper = mem.peek("q", query_embedding=unit(1, 0, 0), preset="generative-agents")
    assert [h.record.id for h in code] == [keep]
    assert len(paper) == 3


def test_code_compat_weights_are_the_codes(mem: Memory, clock: SimClock) -> None:
    mem.remember("a", importance=1, embedding=unit(1, 0))
    clock.advance(hours=1)
    mem.remember("b", importance=9, embedding=unit(0, 1))
    hit = mem.peek("q", query_embedding=unit(1, 0), explain=True, preset="generative-agents-code")[
        0
    ]
    b = hit.breakdown
    assert b is not None
    assert (b.weights.recency, b.weights.relevance, b.weights.importance) == (0.5, 3.0, 2.0)
    assert hit.score == pytest.approx(0.5 * b.recency + 3.0 * b.relevance + 2.0 * b.importance)
    assert b.relevance == pytest.approx(1.0)
    assert b.importance == pytest.approx(0.0)


def test_code_compat_cosines_are_the_codes_on_the_stored_vectors(
    mem: Memory, clock: SimClock
) -> None:
    """The compatibility preset's cosines are ``dot(a, b) / (norm(a) * norm(b))`` of the vectors
    as stored and the query as given, to the last bit, after the first such read loaded them and
    while writes, growth past the index's capacity and forgets follow."""
    vectors = {}

    def write(count: int) -> None:
        for _ in range(count):
            i = len(vectors)
            vector = (i % 3 - 1, 2 * (i % 2), 1 + i % 4, -(i % 5), 3)
            vectors[mem.remember(f"memory {i}", embedding=vector).id] = vector

    def check(query: tuple[int, ...]) -> None:
        hits = mem.peek("q", k=len(vectors), query_embedding=query, explain=True,
                        preset="generative-agents-code")  # fmt: skip
        assert len(hits) == len(vectors)
        for hit in hits:
            a = vectors[hit.record.id]
            dot = sum(x * y for x, y in zip(a, query, strict=True))
            norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in query))
            assert hit.breakdown is not None
            assert hit.breakdown.relevance_dense == dot / norms

    write(5)
    check((0, 0, 1, 1, 1))
    write(20)  # past the index's initial capacity of 16
    check((1, 2, 0, 0, 1))
    for record_id in list(vectors)[3:9]:
        mem.forget(record_id, "noise")
        del vectors[record_id]
    write(2)
    check((0, 0, 1, 1, 1))
