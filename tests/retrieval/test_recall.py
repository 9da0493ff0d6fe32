"""Reads on a real SQLite file: candidates, touching, batches, as-of, dedup, degradation."""

from __future__ import annotations

import random
import tempfile
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronomem import PRESETS, Hit, InvalidInputError, Memory, SimClock

from ..conftest import T0, FixedEmbedder, store_of, unit


def _all(mem: Memory) -> dict[str, object]:
    with store_of(mem).snapshot():
        return {i.record.id: i.record for i in store_of(mem).iter_records(mem.space)}


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_empty_candidate_sets_return_an_empty_list(
    mem: Memory, clock: SimClock, preset: str
) -> None:
    assert mem.recall("anything", preset=preset, query_embedding=unit(1, 0)) == []
    assert mem.recall("anything", agent="nobody", preset=preset) == []
    mem.remember("later", embedding=unit(1, 0))
    before = clock.now() - timedelta(seconds=1)
    assert mem.recall("later", as_of=before, preset=preset, query_embedding=unit(1, 0)) == []
    assert mem.recall("later", kinds=["fact"], preset=preset) == []


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_identical_candidates_give_finite_scores(mem: Memory, preset: str) -> None:
    for _ in range(3):
        mem.remember("same thing", importance=4, embedding=unit(1, 1))
    hits = mem.peek("same thing", preset=preset, query_embedding=unit(1, 1), explain=True)
    assert len(hits) == 3
    assert all(np.isfinite(h.score) for h in hits)
    assert all(h.breakdown is not None and np.isfinite(h.breakdown.relevance) for h in hits)


def _build(path: Path, rows: list[tuple[int, str, float, tuple[float, ...]]]) -> Memory:
    clock = SimClock(T0)
    mem = Memory.open(path, embedder=None, clock=clock, preset="generative-agents")
    for hour, text, importance, vector in rows:
        clock.set(T0 + timedelta(hours=hour))
        mem.remember(text, importance=importance, embedding=vector)
    clock.set(T0 + timedelta(days=30))
    return mem


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_shuffling_insertion_order_changes_no_ranking(tmp_path: Path, preset: str) -> None:
    rng = random.Random(7)
    # Many exact ties: three distinct vectors, three importances.
    vectors = [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (1.0, 1.0, 0.0)]
    rows = [
        (h, f"memory {h}", float(rng.choice([2, 5, 8])), rng.choice(vectors)) for h in range(40)
    ]
    shuffled = rows[:]
    rng.shuffle(shuffled)
    a = _build(tmp_path / "a.db", rows)
    b = _build(tmp_path / "b.db", shuffled)
    try:
        for query in vectors:
            ra = a.peek("memory", k=15, query_embedding=query, preset=preset)
            rb = b.peek("memory", k=15, query_embedding=query, preset=preset)
            assert [(h.record.text, h.score) for h in ra] == [(h.record.text, h.score) for h in rb]
    finally:
        a.close()
        b.close()


def test_touch_updates_exactly_the_returned_records_durably(
    location: str | Path, mem: Memory, clock: SimClock
) -> None:
    for i in range(10):
        clock.advance(minutes=7)
        mem.remember(f"r{i}", embedding=unit(1, i / 10))
    before = _all(mem)
    clock.advance(hours=5)
    hits = mem.recall("q", k=3, query_embedding=unit(1, 0))
    returned = {h.record.id for h in hits}
    assert len(returned) == 3
    mem.close()
    with Memory.open(location, embedder=None, clock=clock) as again:
        after = _all(again)
    for rid, record in after.items():
        if rid in returned:
            assert record.last_accessed_at == clock.now()  # type: ignore[attr-defined]
        else:
            assert record == before[rid]


def test_touch_never_moves_access_time_backwards(mem: Memory, clock: SimClock) -> None:
    rid = mem.remember("x", embedding=unit(1, 0)).id
    clock.advance(hours=10)
    mem.recall("x", query_embedding=unit(1, 0))
    mem.recall("x", query_embedding=unit(1, 0), as_of=clock.now() - timedelta(hours=5))
    assert mem.get(rid).last_accessed_at == clock.now()  # type: ignore[union-attr]


def test_peek_and_touch_false_change_nothing(mem: Memory, clock: SimClock) -> None:
    for i in range(5):
        clock.advance(hours=1)
        mem.remember(f"r{i}", embedding=unit(1, i))
    clock.advance(hours=1)
    before = _all(mem)
    seq = store_of(mem).change_seq(mem.space)
    mem.peek("q", query_embedding=unit(1, 0))
    mem.recall("q", query_embedding=unit(1, 0), touch=False)
    mem.recall_many(["a", "b"], query_embeddings=[unit(1, 0), unit(0, 1)], touch=False)
    assert _all(mem) == before
    assert store_of(mem).change_seq(mem.space) == seq


def _memory_with_history(path: Path) -> Memory:
    rows = [(h, f"memory {h}", float(1 + h % 9), (1.0, h / 10.0, (h % 3) / 3.0)) for h in range(20)]
    return _build(path, rows)


QUERIES = [(1.0, 0.0, 0.0), (1.0, 0.5, 0.0), (1.0, 0.0, 1.0)]
CODE = "generative-agents-code"


def _pairs(results: list[list[Hit]]) -> list[list[tuple[str, float]]]:
    return [[(h.record.text, h.score) for h in hits] for hits in results]


def _batch(path: Path, *, sequential: bool) -> tuple[Memory, list[list[Hit]]]:
    mem = _memory_with_history(path)
    results = mem.recall_many(
        ["q"] * 3, query_embeddings=QUERIES, k=4, preset=CODE, sequential=sequential
    )
    return mem, results


def test_recall_many_scores_every_query_on_one_snapshot(tmp_path: Path) -> None:
    batch, results = _batch(tmp_path / "batch.db", sequential=False)
    with batch, _memory_with_history(tmp_path / "alone.db") as alone:
        # Each query alone, read-only, on an identical store: the same answers.
        expected = [alone.peek("q", query_embedding=q, k=4, preset=CODE) for q in QUERIES]
        assert _pairs(results) == _pairs(expected)
        # ... and every hit of every query was touched once, at the end.
        touched = {i for hits in results for h in hits for i in h.record_ids}
        now = batch.clock.now()
        assert {r.id for r in _all(batch).values() if r.last_accessed_at == now} == touched  # type: ignore[attr-defined]


def test_sequential_reproduces_one_after_another_touching(tmp_path: Path) -> None:
    batch, results = _batch(tmp_path / "batch.db", sequential=True)
    snapshot, snap = _batch(tmp_path / "snap.db", sequential=False)
    with batch, snapshot, _memory_with_history(tmp_path / "loop.db") as loop:
        manual = [loop.recall("q", query_embedding=q, k=4, preset=CODE) for q in QUERIES]
        assert _pairs(results) == _pairs(manual)
        # The scenario is one where touching between queries matters.
        assert _pairs(results) != _pairs(snap)
        # The code preset defaults to sequential touching.
        assert PRESETS[CODE].sequential_touch


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.integers(min_value=0, max_value=500), min_size=1, max_size=25),
    st.integers(min_value=-10, max_value=520),
    st.sampled_from(sorted(PRESETS)),
    st.booleans(),
)
def test_nothing_recorded_after_as_of_is_ever_returned(
    hours: list[int], as_of_hour: int, preset: str, history: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        clock = SimClock(T0)
        with Memory.open(Path(tmp) / "m.db", embedder=None, clock=clock) as mem:
            for i, h in enumerate(sorted(hours)):
                clock.set(T0 + timedelta(hours=h))
                mem.remember(f"note {i}", agent=f"a{i % 3}", embedding=unit(1, i % 4, 2))
            as_of = T0 + timedelta(hours=as_of_hour)
            hits = mem.peek(
                "note",
                k=30,
                as_of=as_of,
                preset=preset,
                include_history=history,
                query_embedding=unit(1, 1, 1),
            )
            assert all(r.recorded_at <= as_of for h in hits for r in [h.record])
            expected = sum(1 for h in hours if h <= as_of_hour)
            assert len(hits) == expected  # texts are distinct: nothing collapses


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(min_value=-(10**6), max_value=10**6),
    st.sampled_from(sorted(PRESETS)),
    st.integers(min_value=0, max_value=2**16),
)
def test_shifting_all_times_and_as_of_changes_no_score(
    shift_h: int, preset: str, seed: int
) -> None:
    rng = random.Random(seed)
    rows = [
        (
            rng.randint(0, 300),
            f"event {i}",
            float(rng.randint(1, 10)),
            (1.0, rng.random(), rng.random()),
        )
        for i in range(12)
    ]
    touches = [(rng.randrange(12), rng.randint(300, 400)) for _ in range(4)]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, delta in (("a", timedelta()), ("b", timedelta(hours=shift_h))):
            clock = SimClock(T0 + delta)
            with Memory.open(Path(tmp) / f"{name}.db", embedder=None, clock=clock) as mem:
                ids = []
                for hour, text, imp, vec in sorted(rows):
                    clock.set(T0 + delta + timedelta(hours=hour))
                    ids.append(mem.remember(text, importance=imp, embedding=vec).id)
                for index, hour in sorted(touches, key=lambda t: t[1]):
                    clock.set(T0 + delta + timedelta(hours=hour))
                    mem.recall("x", k=1, query_embedding=rows[index][3])
                clock.set(T0 + delta + timedelta(hours=450))
                hits = mem.peek("event", k=12, preset=preset, query_embedding=(1.0, 0.5, 0.5))
                results.append([(h.record.text, h.score) for h in hits])
    assert results[0] == results[1]


def test_multi_agent_reads_collapse_equal_texts_and_list_every_holder(
    mem: Memory, clock: SimClock
) -> None:
    mem.remember("The granary is empty", agent="alice", embedding=unit(1, 0))
    mem.remember("the granary  is EMPTY", agent="bob", embedding=unit(1, 0))
    mem.remember("A storm is coming", agent="carol", embedding=unit(0.6, 0.4))
    hits = mem.recall("granary", query_embedding=unit(1, 0), k=5)
    assert len(hits) == 2
    assert set(hits[0].holders) == {"alice", "bob"}
    assert len(hits[0].record_ids) == 2
    assert hits[1].holders == ("carol",)
    # Touching a collapsed hit touches every holder's record.
    for rid in hits[0].record_ids:
        assert mem.get(rid).last_accessed_at == clock.now()


def test_agent_selection(mem: Memory) -> None:
    mem.remember("alpha", agent="a", embedding=unit(1, 0))
    mem.remember("beta", agent="b", embedding=unit(1, 0))
    assert [h.record.agent for h in mem.peek("x", agent="a", query_embedding=unit(1, 0))] == ["a"]
    assert len(mem.peek("x", agents=["a", "b"], query_embedding=unit(1, 0))) == 2
    assert mem.agents() == ["a", "b"]


def test_without_embedder_relevance_is_lexical(mem: Memory) -> None:
    mem.remember("the cat sat on the mat")
    mem.remember("stock markets fell sharply today")
    mem.remember("a dog barked at the mailman")
    hits = mem.peek("where did the cat sit?", k=3, explain=True, preset="default")
    assert hits[0].record.text == "the cat sat on the mat"
    assert hits[0].breakdown is not None
    assert hits[0].breakdown.relevance_mode == "lexical"
    assert hits[0].breakdown.relevance_dense is None


def test_precomputed_vectors_work_without_an_embedder(mem: Memory) -> None:
    a = mem.remember("north", embedding=[1.0, 0.0, 0.0]).id
    mem.remember("east", embedding=[0.0, 1.0, 0.0])
    assert mem.dim == 3
    hits = mem.peek("?", query_embedding=[0.9, 0.1, 0.0], k=1, explain=True)
    assert hits[0].record.id == a
    assert hits[0].breakdown is not None
    assert hits[0].breakdown.relevance_mode == "dense"


def test_hybrid_default_uses_both_signals(location: str | Path, clock: SimClock) -> None:
    same = unit(1, 1, 0, 0, 0, 0, 0, 0)
    embedder = FixedEmbedder(
        {"I like apples": same, "bananas are yellow": same, "apples": unit(1, 0, 0, 0, 0, 0, 0, 0)}
    )
    with Memory.open(location, embedder=embedder, clock=clock) as mem:
        mem.remember("bananas are yellow")
        mem.remember("I like apples")
        for filler in ("the ferry leaves at noon", "a heron stood in the reeds", "rain again"):
            mem.remember(filler)
        hits = mem.peek("apples", k=2, explain=True)
    # Equal cosine: the lexical match decides.
    first, second = (h.breakdown for h in hits)
    assert first is not None
    assert second is not None
    assert first.relevance_dense == pytest.approx(second.relevance_dense)
    assert first.relevance_mode == "hybrid"
    assert first.relevance_lexical is not None
    assert first.relevance_lexical > 0
    assert second.relevance_lexical == 0
    assert hits[0].record.text == "I like apples"


def test_validity_windows_and_kinds_filter_candidates(mem: Memory, clock: SimClock) -> None:
    start = clock.now()
    old = mem.remember(
        "use npm",
        kind="instruction",
        valid_until=start + timedelta(days=30),
        embedding=unit(1, 0),
    ).id
    new = mem.remember(
        "use pnpm",
        kind="instruction",
        valid_from=start + timedelta(days=30),
        embedding=unit(1, 0.5),
    ).id
    mem.remember("saw a bird", embedding=unit(1, 0))
    early = mem.peek("q", query_embedding=unit(1, 0), kinds=["instruction"])
    late = mem.peek(
        "q", query_embedding=unit(1, 0), kinds=["instruction"], valid_at=start + timedelta(days=40)
    )
    every = mem.peek("q", query_embedding=unit(1, 0), include_history=True)
    assert [h.record.id for h in early] == [old]
    assert [h.record.id for h in late] == [new]
    assert len(every) == 3


def test_writes_of_another_process_are_seen(
    location: str | Path, mem: Memory, clock: SimClock
) -> None:
    mem.remember("first", embedding=unit(1, 0))
    assert len(mem.peek("q", query_embedding=unit(1, 0))) == 1  # arrays loaded
    other = Memory.open(location, embedder=None, clock=clock)
    second = other.remember("second", embedding=unit(1, 0)).id
    clock.advance(hours=1)
    other.recall("q", query_embedding=unit(0, 1), k=1)  # touches one record
    other.close()
    hits = mem.peek("q", query_embedding=unit(1, 0), explain=True)
    assert {h.record.id for h in hits} >= {second}
    touched = [h for h in hits if h.breakdown is not None and h.breakdown.age == timedelta()]
    assert len(touched) == 1


def test_a_write_rolled_back_after_a_read_inside_it_leaves_no_phantom(
    location: str | Path, mem: Memory, clock: SimClock
) -> None:
    """A read inside a write transaction synchronises the arrays with rows not yet committed;
    when that transaction rolls back, the next read starts again from the store (before: the
    phantom was returned, or a later row reusing its key failed the read)."""
    mem.remember("first", embedding=unit(1, 0))

    def write_then_fail() -> None:
        with store_of(mem).write():
            mem.remember("never committed", embedding=unit(1, 0))
            assert len(mem.peek("q", query_embedding=unit(1, 0))) == 2  # read inside the write
            raise RuntimeError("the write fails after the read")

    with pytest.raises(RuntimeError):
        write_then_fail()
    other = Memory.open(location, embedder=None, clock=clock)
    other.remember("second", embedding=unit(0, 1))  # on SQLite: the phantom's key again
    other.close()
    assert {h.record.text for h in mem.peek("q", query_embedding=unit(1, 0))} == {"first", "second"}


def test_a_touching_read_after_the_clock_s_now_is_refused_and_touches_nothing(
    mem: Memory, clock: SimClock
) -> None:
    """A touch stamps last_accessed_at = as_of: in the future it would pin recency until then
    (docs/scoring.md, step 8). The future is the handle's clock's."""
    rid = mem.remember("the lamp is lit", embedding=unit(1, 0)).id
    written = clock.now()
    later = written + timedelta(days=1)
    for read in (
        lambda: mem.recall("lamp", as_of=later),
        lambda: mem.recall_many(["lamp", "lit"], as_of=later),
        lambda: mem.context("lamp", as_of=later),
    ):
        with pytest.raises(InvalidInputError, match="future") as err:
            read()
        assert err.value.field == "as_of"
    assert mem.get(rid).last_accessed_at == written
    assert [h.record.id for h in mem.peek("lamp", as_of=later)] == [rid]  # no touch: fine
    assert mem.recall("lamp", as_of=later, touch=False)
    clock.set(later)  # a simulation moves its clock first
    mem.recall("lamp", as_of=later)
    assert mem.get(rid).last_accessed_at == later


def test_vectors_whose_squared_length_leaves_float32_still_have_a_direction(mem: Memory) -> None:
    """Normalisation runs in float64 (arrays.unit_rows): tiny or huge components are valid
    input and score as their direction, never as NaN."""
    tiny = mem.remember("tiny", embedding=[1e-22, 0.0, 0.0]).id
    huge = mem.remember("huge", embedding=[0.0, 3e38, 0.0]).id
    for query, expected in (([1e-25, 0.0, 0.0], tiny), ([0.0, 1e30, 1e29], huge)):
        hits = mem.peek("?", query_embedding=query, k=2, explain=True)
        assert hits[0].record.id == expected
        assert all(np.isfinite(h.score) for h in hits)
        assert hits[0].breakdown is not None
        assert hits[0].breakdown.relevance_dense == pytest.approx(
            1.0 if expected == tiny else 0.995, abs=0.01
        )
