"""The postings a store object keeps for lexical reads (``stores/sql/postings_cache.py``): a
long-lived handle scores exactly as a handle opened afresh, whatever other handles write, touch
or delete in between, and nothing a write transaction saw outlives its rollback."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronomem import Memory, SimClock
from chronomem.errors import DependentsExistError
from chronomem.stores.sql import postings_cache

from ..conftest import store_of

WORDS = ["lamp", "oil", "keeper", "storm", "harbour", "bread", "market", "fish", "tide", "rope"]
AGENTS = ["ana", "ben", "cho"]


def _scores(mem: Memory, query: str, agents: list[str]) -> list[tuple[int, float]]:
    matches = store_of(mem).lexical(mem.space, agents, query)
    return list(zip(matches.pk.tolist(), matches.score.tolist(), strict=True))


def _fresh(location: str | Path, clock: SimClock, query: str, agents: list[str]) -> object:
    with Memory.open(location, embedder=None, clock=clock) as fresh:
        return _scores(fresh, query, agents)


def test_a_long_lived_handle_scores_as_a_fresh_one(location: str | Path, clock: SimClock) -> None:
    rng = random.Random(7)
    kept = Memory.open(location, embedder=None, clock=clock)
    other = Memory.open(location, embedder=None, clock=clock)
    ids: list[str] = []
    try:
        for step in range(60):
            clock.advance(minutes=1)
            op = rng.random()
            writer = kept if rng.random() < 0.3 else other
            agent = rng.choice(AGENTS)
            if op < 0.55 or not ids:  # (the gate takes no near-duplicate: texts are numbered)
                text = " ".join(rng.choices(WORDS, k=rng.randint(2, 6))) + f" n{step}"
                ids.append(writer.remember(text, agent=agent).id)
            elif op < 0.7:
                writer.recall(rng.choice(WORDS), agent=agent, k=3)  # touches: the counter moves
            elif op < 0.78:  # a closing: the counter moves, the postings stay
                target = rng.choice(ids)
                if writer.get(target).status.value == "open":
                    writer.close_record(target, "done")
            elif op < 0.86:  # a new version: a new record, the old one's postings stay
                target = rng.choice(ids)
                if writer.get(target).status.value == "open":
                    text = " ".join(rng.choices(WORDS, k=3)) + f" v{step}"
                    ids.append(writer.supersede(target, text).id)
            else:
                target = ids.pop(rng.randrange(len(ids)))
                try:
                    writer.forget(target, "test")
                except DependentsExistError:  # a newer version cites it: it stays
                    ids.append(target)
            query = " ".join(rng.sample(WORDS, 3))
            asked = rng.sample(AGENTS, rng.randint(1, 3))
            assert _scores(kept, query, asked) == _fresh(location, clock, query, asked), step
        assert store_of(kept)._postings._terms  # the comparisons went through held postings
    finally:
        kept.close()
        other.close()


def test_a_catch_up_reads_the_added_records_postings_only(
    location: str | Path, clock: SimClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After another handle touched held records and added some (two writes between two reads
    of the long-lived handle), its catch-up parses the postings of the added records alone (a
    touched record's postings cannot have changed), and it still scores as a fresh handle."""
    kept = Memory.open(location, embedder=None, clock=clock)
    other = Memory.open(location, embedder=None, clock=clock)
    try:
        for i, word in enumerate(WORDS):
            kept.remember(f"{word} {WORDS[(i + 3) % len(WORDS)]} n{i}", agent="ana")
        query = "lamp storm tide rope"
        assert _scores(kept, query, ["ana"])  # the terms are held
        clock.advance(minutes=1)
        assert other.recall("lamp storm", agent="ana", k=5)  # touches: their keys change too
        added = other.remember_many(
            [{"text": "lamp and tide at dusk", "agent": "ana"},
             {"text": "storm rope n99", "agent": "ana"}]
        )  # fmt: skip
        new = [r.id for r in added if r.stored]
        assert len(new) == 2
        new_pks = {
            int(pk)
            for (pk,) in store_of(kept)._query(
                "SELECT pk FROM records WHERE id IN (?, ?)", tuple(new)
            )
        }
        parsed: list[int] = []
        grouped = postings_cache._grouped

        def spy(rows: Any, agents: dict[str, int]) -> Any:
            parsed.extend(int(pk) for row in rows for pk in str(row[2]).split(","))
            return grouped(rows, agents)

        monkeypatch.setattr(postings_cache, "_grouped", spy)
        caught_up = _scores(kept, query, ["ana"])
        monkeypatch.undo()
        assert parsed
        assert set(parsed) <= new_pks
        assert caught_up == _fresh(location, clock, query, ["ana"])
    finally:
        kept.close()
        other.close()


def test_a_small_cache_lets_the_least_recent_terms_go(
    location: str | Path, clock: SimClock
) -> None:
    with Memory.open(location, embedder=None, clock=clock) as mem:
        for i, word in enumerate(WORDS):
            mem.remember(f"{word} and {WORDS[(i + 1) % len(WORDS)]} {word}", agent="ana")
        store_of(mem)._postings.limit = 8  # postings: each word is in two records
        for word in WORDS + WORDS[::-1]:
            query = f"{word} {WORDS[0]}"
            assert _scores(mem, query, ["ana"]) == _fresh(location, clock, query, ["ana"])
        cache = store_of(mem)._postings
        assert 0 < cache._size <= 8
        assert len(cache._terms) <= 4


def test_what_a_rolled_back_write_saw_is_not_kept(location: str | Path, clock: SimClock) -> None:
    with Memory.open(location, embedder=None, clock=clock) as mem:
        mem.remember("the lamp is lit", agent="ana")
        mem.remember("oil for the lamp", agent="ana")
        before = _scores(mem, "lamp", ["ana"])
        store = store_of(mem)
        (pk,) = store._query("SELECT MIN(pk) FROM records")[0]
        seen = []

        def write_then_fail() -> None:
            with store.write():
                store.lock_space(mem.space)  # the counter moves inside the write
                store._execute(
                    "INSERT INTO postings (space, term, pk, agent, tf, dl)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (mem.space, "oil", pk, "ana", 3, 9),
                )
                seen.append(_scores(mem, "oil", ["ana"]))
                raise RuntimeError("roll back")

        with pytest.raises(RuntimeError):
            write_then_fail()
        assert len(seen[0]) == 2  # the write's own posting was read inside it
        assert _scores(mem, "lamp", ["ana"]) == before
        assert _scores(mem, "lamp oil", ["ana"]) == _fresh(location, clock, "lamp oil", ["ana"])


def test_reindexing_drops_the_held_postings(location: str | Path, clock: SimClock) -> None:
    with Memory.open(location, embedder=None, clock=clock) as mem:
        mem.remember("the lamp is lit", agent="ana")
        assert _scores(mem, "lamp", ["ana"])
        store_of(mem).reindex_full_text()
        assert not store_of(mem)._postings._terms
        assert _scores(mem, "lamp", ["ana"]) == _fresh(location, clock, "lamp", ["ana"])


@pytest.mark.parametrize(
    ("writers", "unlisted"),
    [(AGENTS, 0), (AGENTS[:1], 0), (AGENTS[:2], 1)],
    ids=["three agents", "one agent", "an agent missing from the agents table"],
)
def test_fetched_postings_are_the_stored_rows(
    location: str | Path, clock: SimClock, writers: list[str], unlisted: int
) -> None:
    """A term's postings as fetched (joined rows parsed by numpy: per term and agent, or per
    term in a space of one agent) are exactly the table's rows for it, in pk order, with each
    row's agent — for terms of Korean, Japanese and English chat turns and prose, held by
    several agents or by one, and absent; also when the agents table lists one agent of two."""
    texts = [
        "Ana: 등대 불이 꺼졌어요", "Ben: 灯台の火が消えた", "the lamp in the lighthouse went out",
        "Cho: 시장에서 빵을 샀다", "bread from the market, 빵 and 港", "Ana: the lamp again",
    ]  # fmt: skip
    with Memory.open(location, embedder=None, clock=clock) as mem:
        for i in range(60):
            clock.advance(minutes=1)
            mem.remember(f"{texts[i % len(texts)]} {i}", agent=writers[i % len(writers)])
        db = store_of(mem)
        with db.write():
            for agent in writers[len(writers) - unlisted :]:
                db._execute("DELETE FROM agents WHERE space = ? AND agent = ?", (mem.space, agent))
        rows = db._query(
            "SELECT term, pk, agent, tf, dl FROM postings WHERE space = ? ORDER BY term, pk",
            (mem.space,),
        )
        assert {r[2] for r in rows} == set(writers)
        terms = sorted({r[0] for r in rows})
        assert len(terms) > 20
        assert any(not t.isascii() for t in terms)
        asked = [*terms, "an-absent-term"]
        agents: dict[str, int] = {}
        fetched = postings_cache._fetch(db, mem.space, asked, agents)
        names = {code: name for name, code in agents.items()}
        for term in asked:
            got = fetched[term]
            shown = list(
                zip(got.pk.tolist(), [names[c] for c in got.agent.tolist()],
                    got.tf.tolist(), got.dl.tolist(), strict=True)
            )  # fmt: skip
            assert shown == [tuple(r[1:]) for r in rows if r[0] == term], term


@settings(max_examples=60, deadline=None)
@given(
    held=st.sets(st.integers(0, 200), max_size=40),
    added=st.lists(st.sets(st.integers(0, 260), max_size=15), max_size=6),
)
def test_a_terms_postings_merge_as_a_sorted_union(held: set[int], added: list[set[int]]) -> None:
    """Merging the postings of changed records: the new records' (keys after every held one)
    are appended in place, a backfill's (keys in between) inserted, held ones left alone — the
    sorted union of keys each time, every row's columns with it, and a view taken before an
    append still the rows it showed."""

    def term(keys: set[int]) -> postings_cache._Term:
        pk = np.array(sorted(keys), dtype=np.int64)
        return postings_cache._Term(
            pk, (pk % 3).astype(np.int32), (pk % 5 + 1).astype(np.int32), (pk + 7).astype(np.int32)
        )

    current, union = term(held), set(held)
    for keys in added:
        before = current.columns()[0].copy()
        view = current.columns()[0]
        current = current.merge(term(keys))
        union |= keys
        pk, tf, dl = current.columns()
        assert pk.tolist() == sorted(union)
        assert tf.tolist() == (pk % 5 + 1).tolist()
        assert dl.tolist() == (pk + 7).tolist()
        assert current.agent[: current.n].tolist() == (pk % 3).tolist()
        assert view.tolist() == before.tolist()


def test_warming_holds_the_frequent_terms_and_scores_as_a_fresh_handle(
    location: str | Path, clock: SimClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``warm_lexical`` holds the terms in at least ``_WARM_DF`` records (lowered here), the most
    frequent first; reads after it, and after writes that append to the
    held terms, score as a handle that fetched nothing ahead."""
    from chronomem.stores.sql import fulltext

    monkeypatch.setattr(fulltext, "_WARM_DF", 10)
    rng = random.Random(3)
    with Memory.open(location, embedder=None, clock=clock) as mem:
        for i in range(120):
            clock.advance(minutes=1)
            words = ["lamp", *rng.sample(WORDS[1:], 2)] if i % 2 else rng.sample(WORDS[1:], 3)
            mem.remember(" ".join(words) + f" n{i}", agent=rng.choice(AGENTS))
    with Memory.open(location, embedder=None, clock=clock) as mem:
        cache = store_of(mem)._postings
        fetched = mem._h.store.warm_lexical(mem.space)
        held = {term for _, term in cache._terms}
        assert "lamp" in held  # in half the records: the most frequent
        assert fetched == sum(t.n for t in cache._terms.values())
        assert not any(term.startswith("n") and term[1:].isdigit() for term in held)  # rare
        for query in ("lamp oil", "storm tide", "lamp"):
            assert _scores(mem, query, AGENTS) == _fresh(location, clock, query, AGENTS)
        for i in range(5):
            clock.advance(minutes=1)
            mem.remember(f"lamp keeper late {i}", agent="ana")
        assert _scores(mem, "lamp keeper", AGENTS) == _fresh(location, clock, "lamp keeper", AGENTS)
        monkeypatch.setattr(fulltext, "_WARM_DF", 10_000)  # nothing that frequent
        cache.clear()
        assert mem._h.store.warm_lexical(mem.space) == 0
        assert not cache._terms


def test_warming_holds_every_frequent_term_and_grows_the_cache_for_them(
    location: str | Path, clock: SimClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache too small for the frequent terms grows to twice what they take, so every one of
    them is held (and as much room is left for the terms asked), up to ``_WARM_MOST`` postings,
    the most frequent first."""
    from chronomem.stores.sql import fulltext

    monkeypatch.setattr(fulltext, "_WARM_DF", 10)
    with Memory.open(location, embedder=None, clock=clock) as mem:
        for i in range(120):
            clock.advance(minutes=1)
            mem.remember(f"{WORDS[i % 10]} {WORDS[i % 7]} n{i}", agent="ana")
        store = store_of(mem)
        counts = dict(store._query("SELECT term, COUNT(*) FROM postings GROUP BY term"))
    frequent = {t for t, c in counts.items() if c >= 10}
    assert len(frequent) == len(WORDS)  # every word is in 12 to 18 records
    with Memory.open(location, embedder=None, clock=clock) as mem:
        cache = store_of(mem)._postings
        cache.limit = 20  # half of it holds one term
        fetched = mem._h.store.warm_lexical(mem.space)
        assert {term for _, term in cache._terms} == frequent
        assert fetched == sum(counts[t] for t in frequent)
        assert cache.limit == 2 * fetched
    monkeypatch.setattr(fulltext, "_WARM_MOST", 40)
    with Memory.open(location, embedder=None, clock=clock) as mem:
        cache = store_of(mem)._postings
        cache.limit = 20
        mem._h.store.warm_lexical(mem.space)
        held = {term for _, term in cache._terms}
        assert cache.limit == 4 * max(counts[t] for t in frequent)  # (the largest term fits)
        assert 0 < sum(counts[t] for t in held) <= 40
        assert min(counts[t] for t in held) >= max(counts[t] for t in frequent - held)
