"""The int8 scan of large one-agent reads (chronomem.retrieval.compact): each approximate cosine's
interval holds the exact one, and reads return the hits of the float32 scan — same records, same
order, same scores — under every preset, through appends, touches, ratings, closings, removals
and a snapshot round trip."""

from __future__ import annotations

import random
import zlib
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronomem import PRESETS, Memory, SimClock
from chronomem.config import Normalisation
from chronomem.errors import ConfigError
from chronomem.retrieval import compact
from chronomem.scoring.score import Candidates, rank, score

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


def test_the_scan_runs_on_the_threads_set_with_the_same_products(
    scan_threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(7)
    rows = rng.normal(size=(2_000, DIM)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    query = rows[5] + 0.1 * rows[6]
    codes = compact.Codes.of(rows, rows.shape[0])
    real = compact._simsimd()
    asked: list[int] = []

    class Counted:
        def cdist(self, *args: Any, threads: int, **kwargs: Any) -> Any:
            asked.append(threads)
            return real.cdist(*args, threads=threads, **kwargs)

    monkeypatch.setattr(compact, "_simsimd", lambda: Counted())
    results = []
    for count in (0, 1, 2):
        compact.set_scan_threads(count)
        results.append(compact.cosines(codes, rows.shape[0], query))
    assert asked == [0, 1, 2]
    for approx, bound in results[1:]:  # the same integer dot products on any thread count
        assert np.array_equal(approx, results[0][0])
        assert bound == results[0][1]


@pytest.mark.parametrize("count", [-1, 1.5, True, "2"])
def test_a_scan_thread_count_must_be_a_whole_number(scan_threads: None, count: Any) -> None:
    with pytest.raises(ConfigError, match="scan threads"):
        compact.set_scan_threads(count)


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


def _columns(rng: np.random.Generator, n: int) -> tuple[np.ndarray, dict[str, object]]:
    """Unit vectors in clusters and one agent's columns: recorded one every few minutes over
    months (so recency separates blocks of rows), a few accessed later, every importance."""
    centres = rng.normal(size=(20, DIM))
    emb = (
        centres[rng.integers(0, 20, n)]
        + rng.normal(size=(n, DIM)) * rng.choice([0.05, 1.0], n)[:, None]
    )
    emb = (emb / np.linalg.norm(emb, axis=1, keepdims=True)).astype(np.float32)
    recorded = np.cumsum(rng.integers(1, 600, n)).astype(np.int64) * 1_000_000
    accessed = recorded.copy()
    later = rng.random(n) < 0.002
    accessed[later] += rng.integers(0, int(recorded[-1] - recorded[0]), int(later.sum()))
    return emb, {
        "importance": rng.integers(1, 11, n).astype(np.float64),
        "last_accessed_at": np.minimum(accessed, recorded[-1]),
        "recorded_at": recorded,
        "ids": np.asarray([f"r{i:06d}" for i in range(n)]),
    }


@pytest.mark.parametrize("preset", ["generative-agents", "tcmf", "default", "current-facts"])
@pytest.mark.parametrize(
    "variant", ["plain", "masked", "factor", "lexical", "common", "speaker", "unread"]
)
def test_block_bounds_score_only_what_can_reach_the_top_k(preset: str, variant: str) -> None:
    """Scoring the rows the block bounds keep gives the top k of scoring every row exactly.
    ``common``: a common word of the question matches 40% of the rows (weakly), a rare one 1%
    (strongly): the matching rows are bounded by their own words too, not all scored."""
    rng = np.random.default_rng(zlib.crc32(f"{preset} {variant}".encode()))
    n = 20_000
    emb, cols = _columns(rng, n)
    query = rng.normal(size=DIM).astype(np.float32)
    query /= np.linalg.norm(query)
    as_of = int(cols["recorded_at"][-1]) + 3_600_000_000  # type: ignore[index]
    extra: dict[str, object] = {}
    if variant == "masked":
        extra["mask"] = rng.random(n) < 0.9
    if variant == "factor":
        extra["factor"] = rng.uniform(0.3, 1.0, n)
    if variant in ("lexical", "speaker", "unread"):
        extra["lexical"] = np.where(rng.random(n) < 0.05, rng.uniform(0.5, 9.0, n), 0.0)
    if variant == "common":
        common = np.where(rng.random(n) < 0.4, rng.uniform(0.2, 1.2, n), 0.0)
        extra["lexical"] = common + np.where(rng.random(n) < 0.01, rng.uniform(4.0, 9.0, n), 0.0)
    if variant == "speaker":
        extra["speaker"] = (rng.random(n) < 0.3).astype(np.float64)
    if variant == "unread":  # rows in a language the model does not read: BM25 alone
        extra["unread"] = rng.random(n) < 0.2
    config = PRESETS[preset]  # default's floored fusion (fixed normalisation) included
    exact_dense = (emb @ query).astype(np.float64)
    exact = lambda rows: (emb[rows] @ query).astype(np.float64)  # noqa: E731
    want_scores = score(
        Candidates(dense=exact_dense, **{"mask": None, "lexical": None, **cols, **extra}),  # type: ignore[arg-type]
        config,
        as_of_us=as_of,
    )
    approx, bound = compact.cosines(compact.Codes.of(emb, n), n, query)
    c = Candidates(dense=approx, **{"mask": None, "lexical": None, **cols, **extra})  # type: ignore[arg-type]
    if config.normalisation is not Normalisation.FIXED:
        compact.widen_extremes(approx, bound, c.mask, exact)
    for k in (1, 10, 40):
        bounded = compact._bounded(c, config, as_of, bound, exact, k)
        assert bounded is not None  # the bounds pay on these columns
        got, ceiling = bounded
        # every row not scored exactly scores below the ceiling, exactly and as scored
        off = ~np.isclose(got.final, want_scores.final, rtol=0.0, atol=1e-6)
        assert off.any()
        assert (want_scores.final[off] < ceiling).all()
        assert (got.final[off] < ceiling).all()
        scored = np.count_nonzero(np.isfinite(got.final))
        assert scored <= n // 2
        if variant == "common":  # (scoring every matching row would be 40% of them)
            assert scored < n // 4
        top = rank(got.final, c.recorded_at, c.ids, k)
        want = rank(want_scores.final, c.recorded_at, c.ids, k)
        assert top.tolist() == want.tolist()
        # the exact cosines of a few rows and of all rows are float32 sums in other orders
        np.testing.assert_allclose(got.final[top], want_scores.final[want], atol=1e-6)
        for row in top[:3].tolist():
            mine, theirs = got.components(row), want_scores.components(row)
            assert (mine.recency, mine.importance, mine.relevance) == pytest.approx(
                (theirs.recency, theirs.importance, theirs.relevance), abs=1e-6
            )


def test_a_floored_fusion_with_min_max_normalisation_is_never_bounded_by_blocks() -> None:
    """Min-max ranges make a row's score depend on the others': only fixed normalisation lets
    a floored fusion score its rows again on their own."""
    rng = np.random.default_rng(7)
    n = 20_000
    emb, cols = _columns(rng, n)
    query = emb[0]
    approx, bound = compact.cosines(compact.Codes.of(emb, n), n, query)
    c = Candidates(dense=approx, **{"mask": None, "lexical": None, **cols})  # type: ignore[arg-type]
    exact = lambda rows: (emb[rows] @ query).astype(np.float64)  # noqa: E731
    config = replace(PRESETS["default"], normalisation=Normalisation.MINMAX)
    assert config.dense_floor > config.dense_share
    assert not compact.boundable(config)
    as_of = int(cols["recorded_at"][-1])  # type: ignore[index]
    assert compact._bounded(c, config, as_of, bound, exact, 10) is None
    assert compact._bounded(c, PRESETS["default"], as_of, bound, exact, 10) is not None


def test_default_reads_of_conversations_return_the_float32_scans_hits(tmp_path: Path) -> None:
    """``default`` (floored hybrid fusion, speaker cue, time prior, versions and the session
    spread) over the int8 copy: chat turns in English, Korean and Japanese, and prose."""
    path = tmp_path / "memory.db"
    clock = SimClock(T0)
    rng = np.random.default_rng(11)
    pick = random.Random(11)
    words = ["lamp", "harbour", "bread", "시장", "등대", "港", "灯台", "storm", "rope", "tide"]
    centres = rng.normal(size=(8, DIM))
    with Memory.open(path, embedder=None, clock=clock, passages=False) as mem:
        for session in range(30):
            items = []
            for turn in range(100):
                speaker = pick.choice(["Ana", "Ben", None])
                text = " ".join(pick.sample(words, 3)) + f" {session}.{turn}"
                items.append(
                    {"text": f"{speaker}: {text}" if speaker else text, "speaker": speaker,
                     "session": f"s{session}", "kind": "chat" if speaker else "observation",
                     "importance": pick.randint(1, 10),
                     "embedding": centres[turn % 8] + rng.normal(size=DIM) * 0.4}
                )  # fmt: skip
            mem.remember_many(items, agent="a")
            clock.advance(days=1)
    questions = [
        "What did Ana say about the lamp?", "How many times did Ben mention the harbour?",
        "When did Ana go to the 시장?", "灯台の話は?", "bread", "what happened yesterday?",
        "Which storm came before the tide?",
    ]  # fmt: skip
    kw = {"embedder": None, "clock": clock, "index_snapshot": 0}

    def reads(mem: Memory) -> list[list[tuple[str, float]]]:
        out = []
        for i, question in enumerate(questions * 3):
            q = centres[i % 8] + np.random.default_rng(i).normal(size=DIM) * 0.3
            hits = mem.peek(question, agent="a", k=10, preset="default", query_embedding=q)
            out.append([(h.record.id, h.score) for h in hits])
        return out

    with (
        Memory.open(path, compact_vectors=0, **kw) as fast,  # type: ignore[arg-type]
        Memory.open(path, compact_vectors=None, **kw) as exact,  # type: ignore[arg-type]
    ):
        _same(reads(fast), reads(exact))
        assert fast._h.index._agents["a"].codes is not None  # the int8 scan ran


@pytest.mark.parametrize("preset", ["default", "generative-agents"])
def test_reads_of_records_with_passages_return_the_float32_scans_hits(
    tmp_path: Path, preset: str
) -> None:
    """Records that also match by their passages (a third of them, passages near the questions,
    own vectors away from them), written in English, Korean and Japanese, as prose and as chat
    turns: the int8 scan of the records plus the exact passages gives the float32 scan's hits,
    and the passages decide some of them."""
    path = tmp_path / "memory.db"
    clock = SimClock(T0)
    rng = np.random.default_rng(5)
    centres = rng.normal(size=(6, DIM))
    items = []
    for i in range(3000):
        own = rng.normal(size=DIM)
        text = (f"Note {i}: the harbour lamp was lit at dusk.", f"Ana: {i}번째 항구 등대 이야기",
                f"{i}番目のメモ：港の灯台が点いた")[i // 3 % 3]  # fmt: skip
        item: dict[str, object] = {"text": text, "embedding": own, "importance": 1 + i % 10}
        if i % 3 == 0:
            item["passage_embeddings"] = [centres[i % 6] + rng.normal(size=DIM) * 0.5
                                          for _ in range(1 + i % 3)]  # fmt: skip
        items.append(item)
    with Memory.open(path, embedder=None, clock=clock, passages=False) as mem:
        for start in range(0, len(items), 500):
            mem.remember_many(items[start : start + 500], agent="a")
            clock.advance(hours=3)
    kw = {"embedder": None, "clock": clock, "index_snapshot": 0}

    def reads(mem: Memory, config: object = preset) -> list[list[tuple[str, float]]]:
        out = []
        for i in range(18):
            q = centres[i % 6] + np.random.default_rng(i).normal(size=DIM) * 0.3
            question = ("Who lit the harbour lamp?", "항구 등대는 누가?", "港の灯台は?")[i % 3]
            hits = mem.peek(question, agent="a", k=10, preset=config, query_embedding=q)  # type: ignore[arg-type]
            out.append([(h.record.id, h.score) for h in hits])
        return out

    with (
        Memory.open(path, compact_vectors=0, **kw) as fast,  # type: ignore[arg-type]
        Memory.open(path, compact_vectors=None, **kw) as exact,  # type: ignore[arg-type]
    ):
        got = reads(fast)
        _same(got, reads(exact))
        arrays = fast._h.index._agents["a"]
        assert arrays.codes is not None  # the int8 scan ran
        assert arrays.pn > 0
        if PRESETS[preset].passages:  # and the passages' int8 copy
            assert arrays.pcodes is not None
            assert arrays.pcoded == arrays.pn
        records_only = reads(exact, replace(PRESETS[preset], passages=False))
        if PRESETS[preset].passages:  # the passages decided some hits
            assert records_only != got
        else:  # a preset that reads records only
            assert records_only == reads(exact)


class _Ferry:
    """Records of one agent whose passages sit near one of four centres (own vectors away from
    them), and questions near those centres: reads that their passages decide."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.centres = self.rng.normal(size=(4, DIM))

    def items(self, start: int, count: int) -> list[dict[str, object]]:
        rng, centres = self.rng, self.centres
        return [
            {"text": f"turn {i}: the ferry left late", "embedding": rng.normal(size=DIM),
             "passage_embeddings": [centres[i % 4] + rng.normal(size=DIM) * 0.4
                                    for _ in range(1 + i % 2)]}
            for i in range(start, start + count)
        ]  # fmt: skip

    def reads(self, mem: Memory) -> list[list[tuple[str, float]]]:
        return [
            [(h.record.id, h.score) for h in mem.peek(
                "when did the ferry leave?", agent="a", k=10,
                query_embedding=self.centres[i % 4]
                + np.random.default_rng(i).normal(size=DIM) * 0.3,
            )]
            for i in range(8)
        ]  # fmt: skip


def _as_made_fresh(arrays: Any) -> None:
    """The passages' int8 copy covers every passage and is the one a fresh handle would make."""
    assert arrays.pcodes is not None
    assert arrays.pcoded == arrays.pn
    fresh = compact.Codes.of(arrays.pemb, arrays.pn)
    np.testing.assert_array_equal(arrays.pcodes.codes[: arrays.pn], fresh.codes[: arrays.pn])
    np.testing.assert_array_equal(arrays.pcodes.scale[: arrays.pn], fresh.scale[: arrays.pn])
    np.testing.assert_array_equal(arrays.pcodes.err[: arrays.pn], fresh.err[: arrays.pn])


def test_the_passages_int8_copy_keeps_step_with_appends_and_deletions(tmp_path: Path) -> None:
    """A live handle's int8 copy of the passages, made by a read, takes the passages written
    after it and loses those of deleted records: it stays the copy a fresh handle would make,
    and the reads stay the float32 scan's."""
    path = tmp_path / "memory.db"
    clock = SimClock(T0)
    ferry = _Ferry(11)
    items, reads = ferry.items, ferry.reads

    kw = {"embedder": None, "clock": clock, "index_snapshot": 0, "passages": False}
    with Memory.open(path, compact_vectors=0, **kw) as live:  # type: ignore[arg-type]
        ids = [r.id for r in live.remember_many(items(0, 600), agent="a")]
        clock.advance(hours=1)
        reads(live)
        arrays = live._h.index._agents["a"]
        assert arrays.pcodes is not None
        assert arrays.pcoded == arrays.pn
        live.remember_many(items(600, 300), agent="a")  # appended after the copy was made
        for record_id in ids[:200:3]:  # deleted: their passages leave the middle of the copy
            live.forget(record_id, "noise")
        clock.advance(hours=1)
        got = reads(live)
        arrays = live._h.index._agents["a"]
        _as_made_fresh(arrays)
        with Memory.open(path, compact_vectors=None, **kw) as exact:  # type: ignore[arg-type]
            _same(got, reads(exact))


def test_the_passages_int8_copy_travels_in_the_snapshot_as_far_as_it_went(tmp_path: Path) -> None:
    """The index snapshot holds the passages' int8 copy as far as it went when the snapshot was
    written: a reopened handle reads from it without making it again, and extends it with the
    passages written after that read — by the writing handle, and by another handle after the
    snapshot — to the copy a fresh handle would make, with the float32 scan's hits."""
    path = tmp_path / "memory.db"
    clock = SimClock(T0)
    ferry = _Ferry(12)
    items, reads = ferry.items, ferry.reads

    kw = {"embedder": None, "clock": clock, "index_snapshot": 0, "passages": False}
    with Memory.open(path, compact_vectors=0, **kw) as first:  # type: ignore[arg-type]
        first.remember_many(items(0, 600), agent="a")
        reads(first)  # makes the copy
        made = first._h.index._agents["a"].pcoded
        first.remember_many(items(600, 100), agent="a")  # written after it: not in the copy
    other = {**kw, "index_snapshot": None}  # another handle, after the snapshot: writes none
    with Memory.open(path, compact_vectors=0, **other) as writer:  # type: ignore[arg-type]
        writer.remember_many(items(700, 80), agent="a")
    with Memory.open(path, compact_vectors=0, **kw) as again:  # type: ignore[arg-type]
        again._h.index.arrays(["a"])
        assert again._h.index.loaded_from == "snapshot"
        arrays = again._h.index._agents["a"]
        assert arrays.pcodes is not None
        assert 0 < arrays.pcoded == made < arrays.pn
        assert arrays.n == 780
        got = reads(again)
        _as_made_fresh(arrays)
        with Memory.open(path, compact_vectors=None, **kw) as exact:  # type: ignore[arg-type]
            _same(got, reads(exact))


@given(st.integers(0, 2**32 - 1))
@settings(max_examples=30, deadline=None)
def test_a_rows_best_passage_is_the_one_the_full_product_finds(seed: int) -> None:
    """``passage_cosines`` over some rows (any order, repeated, some without passages) gives
    what raising every row to its best passage over the whole passage matrix gives: the exact
    cosines of an int8 read's rows with passages."""
    from chronomem.retrieval.index import AgentArrays

    rng = np.random.default_rng(seed)
    a = AgentArrays("a", DIM, capacity=64)
    n = int(rng.integers(1, 40))
    a.n = n
    held = sorted(rng.choice(n, size=int(rng.integers(0, n + 1)), replace=False))
    a._add_passages(
        [(int(o), rng.normal(size=(int(rng.integers(1, 4)), DIM)).astype(np.float32)) for o in held]
    )
    query = rng.normal(size=DIM).astype(np.float32)
    full = np.full(n, -np.inf)
    a.raise_to_passages(full, query)
    rows = rng.integers(0, n, size=int(rng.integers(0, 2 * n + 1)))
    got = a.passage_cosines(rows, query)
    # the same rows without passages; the others' float32 products, which BLAS rounds by the
    # product's shape (an ulp apart at most: columns.Columns.products)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(full[rows]))
    np.testing.assert_allclose(got, full[rows], rtol=0, atol=1e-6)


def test_a_session_spread_read_ranks_exact_scores_beyond_the_top_k(tmp_path: Path) -> None:
    """A question taking every piece of evidence ("how many") spreads the best
    ``spread_window`` rows over sessions: one session's near-duplicates give way to the other
    sessions' best rows, ranked 13th to 30th before the spread. Over the int8 copy those rows
    must be scored exactly too (``recall._exact_rows``), or the hits and scores they bring into
    the top k would be the int8 scan's approximations."""
    path = tmp_path / "memory.db"
    clock = SimClock(T0)
    rng = np.random.default_rng(5)
    query = rng.normal(size=DIM)
    query /= np.linalg.norm(query)

    def near(noise: float) -> npt.NDArray[np.float64]:
        v: npt.NDArray[np.float64] = query + rng.normal(size=DIM) * noise / np.sqrt(DIM)
        return v / float(np.linalg.norm(v))

    with Memory.open(path, embedder=None, clock=clock, passages=False) as mem:
        for session in range(30):  # a day apart: 30 sessions
            vectors = [rng.normal(size=DIM) for _ in range(100)]
            if session == 29:  # the latest: a dozen near-duplicates of the question
                vectors[:12] = [near(0.3) for _ in range(12)]
            elif session >= 9:  # twenty others: one row each, a little further away
                vectors[0] = near(0.6)
            mem.remember_many(
                [{"text": f"note {session}.{i}", "embedding": v, "importance": 5}
                 for i, v in enumerate(vectors)],
                agent="a",
            )  # fmt: skip
            clock.advance(days=1)
    kw = {"embedder": None, "clock": clock, "index_snapshot": 0}

    def reads(mem: Memory, question: str) -> list[list[tuple[str, float]]]:
        hits = mem.peek(question, agent="a", k=10, preset="default", query_embedding=query)
        return [[(h.record.id, h.score) for h in hits]]

    spread_question, plain_question = "How many notes were there?", "the notes"
    with (
        Memory.open(path, compact_vectors=0, **kw) as fast,  # type: ignore[arg-type]
        Memory.open(path, compact_vectors=None, **kw) as exact,  # type: ignore[arg-type]
    ):
        spread, plain = reads(exact, spread_question)[0], reads(exact, plain_question)[0]
        # (the case this test is for: the spread brings rows from beyond the top 10 into it)
        assert len({i for i, _ in spread} - {i for i, _ in plain}) >= 5
        _same(reads(fast, spread_question), [spread])
        _same(reads(fast, plain_question), [plain])
        assert fast._h.index._agents["a"].codes is not None  # the int8 scan ran


def test_a_spread_that_empties_its_window_scores_the_rows_beyond_it_exactly(
    tmp_path: Path,
) -> None:
    """One session's near-duplicates fill the whole spread window (30 of them): the spread
    lowers all but the best, so rows ranked past the window — one per later session — come into
    the top k. The int8 read had scored exactly only the rows that could reach the window (the
    older sessions' facts, close to the question but decayed, hold the blocks it probes first),
    so those rows came with their approximate scores. Now the read sees a ranking take in a
    score below its ceiling and scores more rows exactly (``recall.search``): the same hits and
    scores as the float32 scan. (Found at 100k dialogue turns: one LoCoMo question in 400, "How
    many times has Melanie gone to the beach in 2023?", returned an int8 score.)"""
    path = tmp_path / "memory.db"
    clock = SimClock(T0)
    rng = np.random.default_rng(8)
    query = rng.normal(size=DIM)
    query /= np.linalg.norm(query)

    def near(noise: float) -> npt.NDArray[np.float64]:
        v: npt.NDArray[np.float64] = query + rng.normal(size=DIM) * noise / np.sqrt(DIM)
        return v / float(np.linalg.norm(v))

    with Memory.open(path, embedder=None, clock=clock, passages=False) as mem:
        for session in range(60):  # a day apart
            items = [{"embedding": rng.normal(size=DIM)} for _ in range(100)]
            if session == 59:
                for item in items[:30]:
                    item["embedding"] = near(0.2)
            elif session >= 30:  # one row each, further away
                items[0]["embedding"] = near(0.9)
            else:  # close, but facts a month or two old: decayed
                for item in items[::25]:
                    item.update(embedding=near(0.5), kind="fact", domain=f"d{session}")
            mem.remember_many(
                [{"text": f"note {session}.{i}", "importance": 5, **item}
                 for i, item in enumerate(items)],
                agent="a",
            )  # fmt: skip
            clock.advance(days=1)
    kw = {"embedder": None, "clock": clock, "index_snapshot": 0}
    question = "How many notes were there?"

    def read(mem: Memory) -> list[tuple[str, float]]:
        hits = mem.peek(question, agent="a", k=10, preset="default", query_embedding=query)
        return [(h.record.id, h.score) for h in hits]

    with (
        Memory.open(path, compact_vectors=0, **kw) as fast,  # type: ignore[arg-type]
        Memory.open(path, compact_vectors=None, **kw) as exact,  # type: ignore[arg-type]
    ):
        want = read(exact)
        window = exact.peek("the notes", agent="a", k=30, query_embedding=query)
        beyond = {i for i, _ in want} - {h.record.id for h in window}
        assert len(beyond) >= 5  # rows from past the window came in
        _same([read(fast)], [want])
        assert fast._h.index._agents["a"].codes is not None  # the int8 scan ran


def test_the_write_gate_over_the_int8_copy_refuses_what_the_float32_gate_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two stores take the same facts — new directions, and copies of earlier ones moved by
    noise that puts their cosines on both sides of the threshold, in two domains, some stating a
    number, written in English, Korean and Japanese, as notes, prose and chat turns — one gating
    over the int8 copy, one over float32: the same results, record by record (stored or
    refused, and the duplicate named with its cosine)."""
    scans: list[int] = []
    scan = compact.cosines

    def counted(*args: Any) -> tuple[npt.NDArray[np.float64], float]:
        scans.append(1)
        return scan(*args)

    monkeypatch.setattr(compact, "cosines", counted)
    rng = np.random.default_rng(7)
    pick = random.Random(7)
    written: list[npt.NDArray[np.float64]] = []
    results: dict[str, list[tuple[bool, int | None, str]]] = {"int8": [], "float32": []}
    made: dict[str, dict[str, int]] = {"int8": {}, "float32": {}}  # id -> write number
    with (
        Memory.open(tmp_path / "a.db", embedder=None, compact_vectors=0) as fast,
        Memory.open(tmp_path / "b.db", embedder=None, compact_vectors=None) as exact,
    ):
        for i in range(400):
            if written and pick.random() < 0.6:  # σ 0.02–0.04 per dimension: cosine 0.93–0.99
                base = written[pick.randrange(len(written))]
                vector = base + rng.normal(scale=pick.uniform(0.02, 0.04), size=DIM)
            else:
                vector = rng.normal(size=DIM)
            vector /= np.linalg.norm(vector)
            written.append(vector)
            word = "".join(pick.choices("abcdefgh", k=6))
            said = pick.choice(
                [f"fact {word}", f"Ana: the {word} valve is shut.", f"{word} 밸브는 잠겨 있다",
                 f"{word}のバルブは閉まっている。"]
            )  # fmt: skip
            item = {
                "text": said + (" costs 3 dollars" if pick.random() < 0.2 else ""),
                "kind": "fact",
                "domain": pick.choice(["ops", "billing"]),
                "embedding": vector.astype(np.float32),
            }
            for name, mem in (("int8", fast), ("float32", exact)):
                r = mem.remember_many([item], agent="a")[0]
                if r.id is not None:
                    made[name][r.id] = i
                twin = None if r.duplicate_of is None else made[name][r.duplicate_of]
                why = (r.reason or "").replace(r.duplicate_of or "-", "#")
                results[name].append((r.stored, twin, why))
    refused = [r for r in results["float32"] if not r[0]]
    assert 40 <= len(refused) <= 200, len(refused)  # both sides of the threshold exercised
    assert results["int8"] == results["float32"]
    assert scans  # the int8 gate ran
