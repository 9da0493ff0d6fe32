"""One scenario, every store, identical results (DESIGN §6).

The per-behaviour contract runs through the ``location`` fixture: every test that takes it (records
and all fields, touch, supersession, as-of, decay, feedback, forget and purge, events, links,
ancestors, audit, full text) runs once on SQLite and once on PostgreSQL. Here the same scripted
scenario runs on both stores in one test and everything they give back is compared for equality:
stored state, audit, graph, and the rankings, scores and explanations of reads under several
presets. Ids are made deterministic for the comparison (their random part is seeded)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import chronomem.model.ids as ids_module
from chronomem import Memory, SimClock

from ..conftest import T0
from ..scenario import dump, populate, populate_graph


class _SeededSecrets:
    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def randbits(self, k: int) -> int:
        return self._random.getrandbits(k)


def _run(location: str | Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(ids_module, "secrets", _SeededSecrets(2024))
    clock = SimClock(T0)
    with Memory.open(location, embedder=None, clock=clock, preset="generative-agents") as mem:
        populate(mem, clock)
        crisis = populate_graph(mem, clock)
        return dump(mem, crisis)


def test_the_same_scenario_gives_identical_results_on_sqlite_and_postgresql(
    db_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_sqlite = _run(db_path, monkeypatch)
    on_postgres = _run(postgres_url, monkeypatch)
    # The scenario really reaches every kind of state and read.
    assert len(on_sqlite["records"]) == 15
    assert {"supersede", "close", "verify", "feedback", "purge"} <= {
        a[1] for a in on_sqlite["audit"]
    }
    assert len(on_sqlite["events"]) == 3
    assert len(on_sqlite["links"]) == 3
    assert all(len(ranking) >= 3 for ranking in on_sqlite["rankings"])
    assert on_sqlite["lexical"]
    assert any(b and b["causal"] for _, _, b in on_sqlite["crisis_read"])
    for part, value in on_sqlite.items():
        assert on_postgres[part] == value, part
