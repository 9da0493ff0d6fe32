"""Full text on every store: the analyser, the postings table and BM25 (DESIGN §2 step 2)."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from chronomem import Memory, SimClock
from chronomem.analysis.analyser import default_analyser
from chronomem.stores.sql import SQLStore
from chronomem.stores.sqlite_schema import MIGRATIONS

from ..conftest import store_of


def _scores(mem: Memory, query: str, agents: list[str]) -> dict[str, float]:
    matches = store_of(mem).lexical(mem.space, agents, query)
    ids = dict(store_of(mem)._query("SELECT pk, id FROM records"))  # type: ignore[attr-defined]
    return {
        ids[pk]: score
        for pk, score in zip(matches.pk.tolist(), matches.score.tolist(), strict=True)
    }


def _bm25_part(tf: int, df: int, dl: int, n: int, total: int) -> float:
    """One term's part as the store computes it (the same float operations)."""
    idf = float(np.log1p((n - df + 0.5) / (df + 0.5)))
    return idf * tf * 2.2 / (tf + 1.2 * (1.0 - 0.75 + 0.75 * dl / (total / n)))


def _bm25(tf: int, df: int, dl: int, n: int, total: int) -> float:
    """One term's BM25 contribution, written out: k1 = 1.2, b = 0.75, Lucene's IDF."""
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / (total / n)))


def test_bm25_is_the_formula_over_the_space(location: str | Path, clock: SimClock) -> None:
    with Memory.open(location, embedder=None, clock=clock) as mem:
        d1 = mem.remember("the lamp, the lamp and its oil").id  # lamp lamp oil: 3 terms
        d2 = mem.remember("a lamp keeper").id  # lamp keeper: 2
        mem.remember("fish market prices")  # fish market price: 3
        d4 = mem.remember("Lamps!", agent="other").id  # lamp: 1
        n, total = 4, 9
        assert _scores(mem, "oil lamp", ["default"]) == pytest.approx(
            {
                d1: _bm25(2, 3, 3, n, total) + _bm25(1, 1, 3, n, total),
                d2: _bm25(1, 3, 2, n, total),
            },
            rel=1e-12,
        )
        # Other agents' records count in the statistics and are returned only when asked for.
        assert set(_scores(mem, "oil lamp", ["default", "other"])) == {d1, d2, d4}
        assert _scores(mem, "what is it?", ["default"]) == {}


def test_deleting_leaves_the_scores_of_a_store_that_never_had_the_record(
    location: str | Path, clock: SimClock, tmp_path: Path
) -> None:
    texts = ["the keeper trims the lamp", "lamp oil is scarce", "a storm hit the lamp house"]
    with Memory.open(location, embedder=None, clock=clock) as mem:
        ids = [mem.remember(t).id for t in texts]
        gone = mem.remember("lamp lamp lamp secret code 1234", sensitivity="secret").id
        (pk,) = store_of(mem)._query("SELECT pk FROM records WHERE id = ?", (gone,))[0]  # type: ignore[attr-defined]
        mem.forget(gone, "erasure request")
        after = _scores(mem, "lamp code", ["default"])
        postings = store_of(mem)._query("SELECT COUNT(*) FROM postings WHERE pk = ?", (pk,))  # type: ignore[attr-defined]
        assert postings[0][0] == 0
    with Memory.open(tmp_path / "never.db", embedder=None, clock=clock) as never:
        for t in texts:
            never.remember(t)
        expected = list(_scores(never, "lamp code", ["default"]).values())
    assert list(after) == ids
    assert list(after.values()) == expected  # identical floats, not approximately


def test_other_spaces_do_not_change_the_scores(location: str | Path, clock: SimClock) -> None:
    with Memory.open(location, embedder=None, clock=clock) as mem:
        mem.remember("the lamp is lit")
        mem.remember("bread is baked")
        before = list(_scores(mem, "lamp", ["default"]).values())
    with Memory.open(location, embedder=None, clock=clock, space="elsewhere") as other:
        for i in range(20):
            other.remember(f"lamp number {i}")
    with Memory.open(location, embedder=None, clock=clock) as mem:
        assert list(_scores(mem, "lamp", ["default"]).values()) == before


def test_a_store_indexed_by_another_analyser_is_reindexed_on_open(
    location: str | Path, clock: SimClock
) -> None:
    with Memory.open(location, embedder=None, clock=clock) as mem:
        for text in ("the lamp is lit", "lamp oil", "bread"):
            mem.remember(text)
        before = _scores(mem, "lamp oil", ["default"])
        store = store_of(mem)
        assert isinstance(store, SQLStore)
        with store.write():
            store._execute("UPDATE store_meta SET value = 'older' WHERE key = 'analyser'")
            store._execute("DELETE FROM postings")
            store._execute("UPDATE spaces SET docs = 0, doc_len_sum = 0")
        assert _scores(mem, "lamp oil", ["default"]) == {}
    with Memory.open(location, embedder=None, clock=clock) as mem:
        assert _scores(mem, "lamp oil", ["default"]) == before
        meta = dict(store_of(mem)._query("SELECT key, value FROM store_meta"))  # type: ignore[attr-defined]
        assert meta["analyser"] == default_analyser().name


def test_a_version_3_sqlite_store_moves_from_fts5_to_postings(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute(
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, description TEXT NOT NULL,"
        " applied_at TEXT NOT NULL)"
    )
    for migration in MIGRATIONS[:3]:
        for statement in migration.statements:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_version VALUES (?, ?, '2026-01-01')",
            (migration.version, migration.description),
        )
    conn.execute("INSERT INTO spaces (space, change_seq) VALUES ('default', 1)")
    conn.execute("INSERT INTO agents (space, agent) VALUES ('default', 'default')")
    for i, text in enumerate(["the lamp is lit", "bread is baked"]):
        conn.execute(
            "INSERT INTO records (id, space, agent, kind, text, importance, occurred_at,"
            " recorded_at, last_accessed_at, change_seq)"
            " VALUES (?, 'default', 'default', 'observation', ?, 5, 0, 0, 0, 1)",
            (f"01J{i:023d}", text),
        )
    conn.commit()
    conn.close()
    with Memory.open(db_path, embedder=None) as mem:
        assert store_of(mem).schema_version() == MIGRATIONS[-1].version
        assert list(_scores(mem, "lamps", ["default"])) == [f"01J{0:023d}"]
        tables = {r[0] for r in store_of(mem)._query("SELECT name FROM sqlite_master")}  # type: ignore[attr-defined]
        assert "records_fts" not in tables
        totals = store_of(mem)._query("SELECT docs, doc_len_sum FROM spaces")  # type: ignore[attr-defined]
        assert totals == [(2, 4)]  # lamp lit / bread bake


@pytest.mark.parametrize("spread", [1, 1000])  # keys close together (dense sums) or far apart
def test_scores_do_not_depend_on_the_order_postings_arrive_in(spread: int) -> None:
    from chronomem.stores.sql.fulltext import bm25 as _bm25

    def term(*rows: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pk, tf, dl = np.array(rows, dtype=np.int64).T
        return pk * spread, tf, dl

    first_term = term((9, 1, 8), (3, 1, 2), (7, 2, 5))
    second_term = term((7, 1, 5), (9, 3, 8))
    df = np.array([3.0, 2.0])
    first = _bm25([first_term, second_term], df, 10, 50)
    shuffled = [tuple(a[[1, 2, 0]] for a in first_term), tuple(a[::-1] for a in second_term)]
    again = _bm25(shuffled, df, 10, 50)  # type: ignore[arg-type]
    assert first.pk.tolist() == [3 * spread, 7 * spread, 9 * spread]
    assert again.pk.tolist() == first.pk.tolist()
    assert again.score.tolist() == first.score.tolist()
    want = {
        3: _bm25_part(1, 3, 2, 10, 50),
        7: _bm25_part(2, 3, 5, 10, 50) + _bm25_part(1, 2, 5, 10, 50),
        9: _bm25_part(1, 3, 8, 10, 50) + _bm25_part(3, 2, 8, 10, 50),
    }
    assert first.score.tolist() == [want[3], want[7], want[9]]


def test_dense_and_sorted_sums_are_the_same_additions() -> None:
    """Whether the sums are made in a dense array or at sorted keys, each document's parts are
    added in the query's term order: the same floats, bit for bit."""
    from chronomem.stores.sql import fulltext

    rng = np.random.default_rng(5)
    terms = []
    for size in (4000, 900, 60, 7):
        pk = np.sort(rng.choice(5000, size, replace=False)).astype(np.int64)
        terms.append((pk, rng.integers(1, 4, size), rng.integers(2, 40, size)))
    df = np.array([4000.0, 900.0, 60.0, 7.0])
    dense = fulltext.bm25(terms, df, 5000, 80_000)
    sparse = fulltext.bm25([(pk * 97, tf, dl) for pk, tf, dl in terms], df, 5000, 80_000)
    assert sparse.pk.tolist() == (dense.pk * 97).tolist()
    assert sparse.score.tolist() == dense.score.tolist()
