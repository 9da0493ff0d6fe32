"""An explanation adds up: the parts of ``Breakdown.contributions`` sum to the hit's score
under every preset, with and without a crisis, with lifecycle factors and version bonuses."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chronomem import PRESETS, Memory, ScoringConfig, SimClock

from ..conftest import T0
from ..scenario import QUERY, populate, populate_graph

MULTIPLICATIVE = replace(
    PRESETS["default"], causal=replace(PRESETS["default"].causal, fusion="multiplicative")
)


@pytest.mark.parametrize(
    "preset",
    [*sorted(PRESETS), MULTIPLICATIVE],
    ids=lambda p: p if isinstance(p, str) else "default-multiplicative",
)
def test_the_parts_add_up_to_the_score(preset: str | ScoringConfig) -> None:
    clock = SimClock(T0)
    with Memory.open(":memory:", embedder=None, clock=clock) as mem:
        populate(mem, clock)
        crisis = populate_graph(mem, clock)
        seen = set()
        for extra in ({}, {"crisis": crisis}, {"include_history": True}):
            hits = mem.peek(
                "when does the cafe open", query_embedding=QUERY, explain=True, preset=preset,
                k=20, **extra,  # type: ignore[arg-type]
            )  # fmt: skip
            assert hits
            for hit in hits:
                assert hit.breakdown is not None
                parts = hit.breakdown.contributions()
                assert sum(parts.values()) == pytest.approx(hit.score, abs=1e-9)
                seen |= set(parts)
        assert {"relevance", "recency", "importance"} <= seen
        if preset is MULTIPLICATIVE:  # the factor's share is its own bar
            assert "causal boost" in seen
