"""The int8 scan of large one-agent reads (chronomem.retrieval.compact): each approximate cosine's
interval holds the exact one, and reads return the hits of the float32 scan — same records, same
order, same scores — under every preset, through appends, touches, ratings, closings, removals
and a snapshot round trip."""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronomem import PRESETS, Memory, SimClock
from chronomem.retrieval import compact

from ..conftest import T0

pytestmark = pytest.mark.skipif(not compact.available(), reason="needs simsimd (the fast extra)")
DIM = 48


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), spread=st.sampled_from([1e-3, 1.0, 30.0]))
def test_every_exact_cosine_lies_within_its_bound(seed: int, spread: float) -> None:
    rng = np.random.default_rng(seed)
    rows = rng.normal(size=(300, DIM)) * rng.choice([1.0, spread], size=(300, DIM))
    rows[:3] = 0.0
    rows[3] = rows[4]  # duplicates
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-30)
    rows = rows.astype(np.float32)
    query = rng.normal(size=DIM).astype(np.float32)
    query /= np.linalg.norm(query)
    codes = compact.Codes.of(rows, rows.shape[0])
    approx, bound = compact.cosines(codes, rows.shape[0], query)
    exact = rows.astype(np.float64) @ query.astype(np.float64)
    assert np.all(np.abs(exact - approx) <= bound)
    assert np.all(bound < 0.1)


def _build(path: Path, n: int, seed: int) -> tuple[SimClock, list[str]]:
    """One agent, clusters of near-identical vectors (close cosines) and exact duplicates, every
    importance, facts that decay, ratings, validity windows."""
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    centres = rng.normal(size=(12, DIM))
    clock = SimClock(T0)
    ids = []
    with Memory.open(path, embedder=None, clock=clock, index_snapshot=None) as mem:
        for start in range(0, n, 250):
            clock.advance(hours=pick.randint(1, 40))
            items = []
            for i in range(start, min(n, start + 250)):
                vector = centres[i % 12] + rng.normal(size=DIM) * pick.choice([0.01, 0.3, 1.0])
                if i % 97 == 0 and i:
                    vector = centres[0]
                kind = "fact" if i % 7 == 0 else "observation"
                items.append(
                    {"text": f"record {i} " + " ".join(pick.sample("abcdefghij", 3)),
                     "importance": pick.randint(1, 10), "embedding": vector, "kind": kind,
                     "domain": f"d{i}" if kind == "fact" else None,
                     "valid_until": clock.now() + timedelta(days=3) if i % 11 == 0 else None}
                )  # fmt: skip
            ids.extend(r.id for r in mem.remember_many(items, agent="a") if r.id)
        clock.advance(days=2)
        for rid in pick.sample(ids, 30):
            mem.feedback(rid, pick.choice(["helpful", "harmful"]))
        mem.recall("a b", agent="a", k=40, query_embedding=rng.normal(size=DIM))
    return clock, ids


def _reads(mem: Memory, rng: np.random.Generator) -> list[list[tuple[str, float]]]:
    out = []
    for preset in sorted(PRESETS):
        for _ in range(4):
            q = rng.normal(size=DIM)
            hits = mem.peek("a b c", agent="a", k=15, preset=preset, query_embedding=q)
            out.append([(h.record.id, h.score) for h in hits])
    return out


def _same(fast: list[list[tuple[str, float]]], exact: list[list[tuple[str, float]]]) -> None:
    for got, want in zip(fast, exact, strict=True):
        assert [i for i, _ in got] == [i for i, _ in want]
        np.testing.assert_allclose([s for _, s in got], [s for _, s in want], atol=1e-6)


def test_reads_return_the_float32_scans_hits(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    clock, ids = _build(path, 3000, seed=1)
    kw = {"embedder": None, "clock": clock, "index_snapshot": 0}
    with (
        Memory.open(path, compact_vectors=0, **kw) as fast,  # type: ignore[arg-type]
        Memory.open(path, compact_vectors=None, **kw) as exact,  # type: ignore[arg-type]
    ):
        _same(_reads(fast, np.random.default_rng(2)), _reads(exact, np.random.default_rng(2)))
        arrays = fast._h.index._agents["a"]
        assert arrays.codes is not None  # the int8 scan ran
        assert exact._h.index._agents["a"].codes is None
        # the codes follow appends, touches, closings and removals
        pick = random.Random(3)
        fast.remember_many(
            [{"text": f"late {i}", "embedding": np.ones(DIM) * (i + 1)} for i in range(40)],
            agent="a",
        )
        fast.recall("late", agent="a", k=20, query_embedding=np.ones(DIM))
        gone = pick.sample(ids, 20)
        for rid in gone:
            fast.forget(rid, "noise")
        facts = [r for r in ids if r not in gone and fast.get(r).kind.value == "fact"]
        fast.close_record(next(r for r in facts if fast.get(r).status.value == "open"), "done")
        _same(_reads(fast, np.random.default_rng(4)), _reads(exact, np.random.default_rng(4)))
        assert arrays.codes is not None
        codes = compact.Codes.of(arrays.emb, arrays.n)  # type: ignore[arg-type]
        np.testing.assert_array_equal(arrays.codes.codes[: arrays.n], codes.codes[: arrays.n])
    # the codes travel in the snapshot
    with Memory.open(path, compact_vectors=0, **kw) as again:  # type: ignore[arg-type]
        again.peek("x", agent="a", query_embedding=np.ones(DIM))
        loaded = again._h.index._agents["a"]
        assert again._h.index.loaded_from == "snapshot"
        assert loaded.codes is not None
        np.testing.assert_array_equal(loaded.codes.codes[: loaded.n], codes.codes[: loaded.n])
