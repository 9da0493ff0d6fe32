"""The space-wide layout (docs/design/space-wide-layout.md): agents loaded together — from a
snapshot or in one load from the store — hold their columns as views of one array per column, so
a read over all of them takes each column whole; changes in place stay visible through it, an
agent that outgrows its rows leaves it, and every read ranks as over a rebuild from the store."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from chronomem import Memory, SimClock
from chronomem.retrieval.columns import Columns, columns

from ..conftest import T0
from .test_snapshot import AGENTS, _arrays, _fill, _open, _same_arrays


def _read(mem: Memory) -> list[list[tuple[str, float]]]:
    out = []
    for preset in ("default", "generative-agents"):
        for text in ("river stone", "candle tower meadow", "ledger"):
            hits = mem.peek(text, agents=list(AGENTS), k=15, preset=preset, explain=True)
            out.append([(h.record.id, round(h.score, 12)) for h in hits])
    return out


def _columns(mem: Memory) -> Columns:
    return columns(_arrays(mem, list(AGENTS)))


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, SimClock, list[str]]:
    path = tmp_path / "memory.db"
    clock = SimClock(T0)
    with _open(path, clock) as mem:
        ids = _fill(mem, clock, random.Random(11), 150)
        mem.peek("warm", agents=list(AGENTS))
    return path, clock, ids


def test_a_snapshot_loads_one_array_per_column(saved: tuple[Path, SimClock, list[str]]) -> None:
    path, clock, _ = saved
    with _open(path, clock) as warm:
        assert _read(warm)
        assert warm._h.index.loaded_from == "snapshot"
        cols = _columns(warm)
        assert cols.run is not None
        span, first, row = cols.run
        assert (first, row) == (0, 0)
        for name in ("recorded_at", "importance", "kind", "ids", "emb"):
            laid = cols.cat(name)
            assert laid.base is not None
            assert np.shares_memory(laid, span.columns[name])
            parts = [getattr(a, name)[: a.n] for a in cols.arrays]
            np.testing.assert_array_equal(laid, np.concatenate(parts))
        assert np.shares_memory(cols.derived("event_keys"), span.columns["event_keys"])
        # the bounds computed for every agent at once are each agent's own
        for a in cols.arrays:
            loaded = a.bounds()
            a._bounds = None
            assert a.bounds() == loaded


def test_changes_in_place_stay_laid_out_and_an_agent_that_grows_leaves(
    saved: tuple[Path, SimClock, list[str]],
) -> None:
    path, clock, ids = saved
    rng = random.Random(4)
    with _open(path, clock) as warm, _open(path, clock, snapshot=None) as cold:
        assert _read(warm) == _read(cold)
        assert cold._h.index.loaded_from == "store"
        assert _columns(cold).run is not None  # one load of three agents from the store
        # touches, feedback and verifications write into the agents' rows of the span
        clock.advance(hours=3)
        for rid in rng.sample(ids, 8):
            warm.feedback(rid, rng.choice(["helpful", "harmful"]))
        for rid in rng.sample(ids, 5):
            warm.verify(rid)
        warm.recall("meadow garden", agents=list(AGENTS), k=10)
        assert _columns(warm).run is not None
        assert _read(warm) == _read(cold)
        # one forgotten and one new record of bob: the same row count, its rows moved
        bob = [r for r in ids if cold.get(r).agent == "bob" and cold.get(r).status.value == "open"]
        cold.forget(bob[3], "noise")
        cold.remember("bob lights a candle by the harbor tower", agent="bob")
        cols = _columns(cold)
        assert cols.run is not None  # still its rows of the span...
        derived = [a.text_keys() for a in cols.arrays]
        np.testing.assert_array_equal(cols.derived("text_keys"), np.concatenate(derived))
        # the removal copied the reopened arrays off the snapshot's mapping (a purge may be
        # among the removals): they are laid out no longer
        assert _read(warm) == _read(cold)
        assert _columns(warm).run is None
        # two more records of cy: its arrays grow past its rows, so it leaves the span
        for text in ("cy rows past the meadow", "cy sings by the river"):
            cold.remember(text, agent="cy")
        assert _columns(cold).run is None
        with _open(path, clock, snapshot=None) as fresh:
            assert _read(cold) == _read(warm) == _read(fresh)
            for a, b in zip(_arrays(cold, list(AGENTS)), _arrays(fresh, list(AGENTS)), strict=True):
                _same_arrays(a, b)


def test_a_load_from_the_store_lays_the_agents_out(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    clock = SimClock(T0)
    with _open(path, clock, snapshot=None) as mem:
        _fill(mem, clock, random.Random(12), 80)
    with _open(path, clock, snapshot=None) as mem:
        hits = mem.peek("river", agents=list(AGENTS), k=10)
        assert hits
        assert mem._h.index.loaded_from == "store"
        assert _columns(mem).run is not None


def test_laid_out_products_match_the_per_agent_ones(
    saved: tuple[Path, SimClock, list[str]],
) -> None:
    """The crisis read's record × event products over the span (one product, or one gather)
    equal the per-agent ones wherever the association band reads them."""
    path, clock, _ = saved
    rng = np.random.default_rng(0)
    with _open(path, clock) as warm:
        laid = _columns(warm)
        assert laid.run is not None
        apart = replace(laid, run=None)
        matrix = rng.normal(size=(16, 5)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=0)
        band = (0.2, 0.6)
        for rows in (None, np.arange(laid.size), np.sort(rng.choice(laid.size, 9, replace=False))):
            a, b = laid.products(rows, matrix, band), apart.products(rows, matrix, band)
            inside = (b >= band[0]) & (b < band[1])
            np.testing.assert_array_equal(a[inside], b[inside])
            np.testing.assert_array_equal(a >= band[1], b >= band[1])
            np.testing.assert_array_equal(a < band[0], b < band[0])
            np.testing.assert_allclose(a, b, atol=1e-5)
        wanted = np.array([0, laid.size - 1, 5])
        np.testing.assert_array_equal(laid.vectors(wanted, 16), apart.vectors(wanted, 16))
