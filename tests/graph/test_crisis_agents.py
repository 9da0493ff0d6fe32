"""Crisis reads over many agents: the boost computed once over every agent's rows, and only for
the rows that can reach the top k, equals the per-agent computation."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from chronomem import PRESETS, CausalConfig, Memory, SimClock
from chronomem.retrieval.columns import columns
from chronomem.retrieval.crisis import boost_rows, build_crisis
from chronomem.retrieval.query import Crisis

from ..conftest import T0, store_of

AGENTS, PER_AGENT, DIM = 30, 40, 16
MULTIPLICATIVE = replace(
    PRESETS["tcmf"], name="tcmf-mult", causal=CausalConfig(fusion="multiplicative")
)


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    out = rng.normal(size=(n, DIM))
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def _city(path: Path, seed: int) -> tuple[Memory, str, np.ndarray]:
    """A 4-link chain and 6 scope events; per agent a few records near an ancestor (cosine
    association, some only partly), a few witnesses, and texts many agents hold, which witnessed
    the crisis's strongest cause (so merging them takes a read past its first rows)."""
    rng = np.random.default_rng(seed)
    clock = SimClock(T0)
    mem = Memory.open(path, embedder=None, clock=clock)
    chain_vectors = _unit(rng, 5)
    chain = []
    for i in range(5):
        kind = "crisis" if i == 4 else "happening"
        chain.append(mem.add_event(f"e{i}", kind=kind, scope="city", embedding=chain_vectors[i]))
        clock.advance(days=2)
    for (cause, effect), weight in zip(pairwise(chain), (0.9, 0.6, 1.0, 0.8), strict=True):
        mem.link(cause.id, effect.id, weight)
    scope = [
        mem.add_event(f"s{i}", scope="city", embedding=vector,
                      occurred_at=chain[-1].occurred_at - timedelta(days=1 + i))
        for i, vector in enumerate(_unit(rng, 6))
    ]  # fmt: skip
    witnessed = [e.id for e in chain[:4]] + [e.id for e in scope]
    strongest = max(_crisis(mem, chain[-1].id).events, key=lambda e: e.effective).event_id
    for a in range(AGENTS):
        vectors = _unit(rng, PER_AGENT)
        noise = rng.uniform(0.1, 1.2, size=(6, 1))
        vectors[:6] = chain_vectors[a % 4] + noise * vectors[:6]
        items = []
        for i in range(PER_AGENT):
            text = f"rumour {i % 7}" if i % 9 == 4 else f"citizen {a} memory {i}"
            rumour = text.startswith("rumour")
            importance = 10 if rumour else 1 + (a + i) % 10
            item = {"text": text, "importance": importance, "embedding": vectors[i]}
            if (a * 7 + i) % 11 == 3:
                item["event_id"] = witnessed[(a + i) % len(witnessed)]
            if rumour and a % 2:
                item["event_id"] = strongest
            items.append(item)
        mem.remember_many(items, agent=f"citizen{a:02d}")
        clock.advance(minutes=7)
    clock.advance(days=1)
    return mem, chain[-1].id, _unit(rng, 5)


def _crisis(mem: Memory, crisis: str) -> Crisis:
    return build_crisis(
        store_of(mem), mem.space, mem.get_event(crisis), mem.clock.now(), mem.preset.causal,
        store_of(mem).embedding_meta().model,
    )  # fmt: skip


def _per_agent(mem: Memory, situation: Crisis) -> np.ndarray:
    """Each agent's boost from its own cosines and witnesses, as a plain loop over events."""
    events = situation.events
    out = []
    for agent in mem.agents():
        a = mem._h.index.arrays((agent,))[0]
        assert a.emb is not None
        boost = np.zeros(a.n)
        for event in events:
            assert event.vector is not None
            unit = event.vector / np.linalg.norm(event.vector)
            cosine = (a.emb[: a.n] @ unit.astype(np.float32)).astype(np.float64)
            association = np.where(
                cosine >= situation.threshold, np.minimum(cosine / situation.full, 1.0), 0.0
            )
            association[np.asarray(a.event_ids[: a.n]) == event.event_id] = 1.0
            boost = np.maximum(boost, association * event.effective)
        out.append(boost)
    return np.concatenate(out)


def test_the_boost_over_every_agent_equals_the_per_agent_computation(tmp_path: Path) -> None:
    mem, crisis, _ = _city(tmp_path / "m.db", seed=1)
    with mem:
        situation = _crisis(mem, crisis)
        cols = columns(mem._h.index.arrays(tuple(mem.agents())))
        together = boost_rows(cols, situation).value
        np.testing.assert_allclose(together, _per_agent(mem, situation), rtol=1e-6, atol=1e-7)
        lifted = np.count_nonzero(together)
        assert 0.05 * cols.size < lifted < 0.5 * cols.size  # the data exercise both kinds
        # Computing the cosines of some rows only leaves the others their witness boost.
        rows = np.arange(0, cols.size, 3)
        part = boost_rows(cols, situation, rows).value
        np.testing.assert_array_equal(part[rows], together[rows])
        others = np.setdiff1d(np.arange(cols.size), rows)
        assert np.all(part[others] <= together[others])


@pytest.mark.parametrize("preset", ["tcmf", "default", "generative-agents", MULTIPLICATIVE])
@pytest.mark.parametrize("seed", [1, 2])
def test_a_crisis_read_ranks_as_every_row_boosted(
    tmp_path: Path, preset: str | object, seed: int
) -> None:
    """The top k of a read equals the top k of the same read ranking every candidate (a k past
    the candidate count computes every row's boost), merged duplicates included."""
    mem, crisis, questions = _city(tmp_path / "m.db", seed=seed)
    with mem:
        situation = _crisis(mem, crisis)
        boosts = _per_agent(mem, situation)
        cols = columns(mem._h.index.arrays(tuple(mem.agents())))
        ids = [str(x) for x in cols.cat("ids")]
        for question in questions:
            read = {"query_embedding": question, "crisis": crisis, "preset": preset}
            every = mem.peek("q", k=cols.size + 1, explain=True, **read)  # type: ignore[arg-type]
            for hit in every[:40]:
                causal = hit.breakdown.causal  # type: ignore[union-attr]
                assert causal is not None
                assert causal.boost == pytest.approx(boosts[ids.index(hit.record.id)], abs=1e-6)
            for k in (1, 5, 12, 40):
                hits = mem.peek("q", k=k, **read)  # type: ignore[arg-type]
                assert [(h.record_ids, h.score) for h in hits] == [
                    (h.record_ids, h.score) for h in every[:k]
                ]


def test_a_rows_associations_do_not_depend_on_which_other_rows_are_computed(
    tmp_path: Path,
) -> None:
    """In float32, BLAS rounds a row's sums by the shape of the product it is in and the row's
    place in it. The record × event products are float32, with every entry that rounding could
    move into or across the association band [θ, full) recomputed in float64: so the band's
    entries, and every association, are bit for bit those of the product over every row (parts
    of several sizes, subsets from one row to all but one, dense parts and gathered ones)."""
    rng = np.random.default_rng(7)
    events = rng.normal(size=(7, 384)).astype(np.float32)
    events /= np.linalg.norm(events, axis=1, keepdims=True)
    with Memory.open(tmp_path / "m.db", embedder=None, clock=SimClock(T0)) as mem:
        for agent, n in (("a", 300), ("b", 77), ("c", 129)):
            near = events[rng.integers(0, 7, n)]  # cosines spread across the band
            vectors = near + rng.uniform(0.3, 1.6, (n, 1)) * rng.normal(size=(n, 384)) / 20
            mem.remember_many(
                [{"text": f"{agent} {i}", "embedding": v} for i, v in enumerate(vectors)],
                agent=agent,
            )
        cols = columns(mem._h.index.arrays(("a", "b", "c")))
        matrix = np.ascontiguousarray(events.T)
        band = (0.5, 0.65)
        every = cols.products(None, matrix, band)
        inside = (every >= band[0]) & (every < band[1])
        assert every.shape == (506, 7)
        assert inside.sum() > 50
        assert (every >= band[1]).sum() > 50

        def association(x: np.ndarray) -> np.ndarray:  # as graph/boost.raise_by computes it
            out = x * (x >= band[0])
            return np.minimum(out * np.float32(1.0 / band[1]), 1.0)

        for size in (1, 5, 37, 300, 505):
            rows = np.sort(rng.choice(cols.size, size, replace=False))
            some = cols.products(rows, matrix, band)
            np.testing.assert_array_equal(some[inside[rows]], every[rows][inside[rows]])
            np.testing.assert_array_equal(association(some), association(every[rows]))
        unsorted = rng.permutation(cols.size)[:50]
        some = cols.products(unsorted, matrix, band)
        np.testing.assert_array_equal(association(some), association(every[unsorted]))
