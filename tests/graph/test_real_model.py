"""auto_link and association with the real all-MiniLM-L6-v2 (slow)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from chronomem import Memory, SimClock

pytestmark = pytest.mark.slow


def test_auto_link_links_meaning_not_proximity(minilm, db_path: Path, clock: SimClock) -> None:  # type: ignore[no-untyped-def]
    with Memory.open(db_path, embedder=minilm, clock=clock) as mem:
        rain = mem.add_event("No rain has fallen in the valley for four months")
        clock.advance(days=2)
        guild = mem.add_event("The guild elected a new treasurer")  # close in time, unrelated
        clock.advance(hours=6)
        drought = mem.add_event("A drought destroyed the wheat harvest in the valley")
        made = mem.auto_link(drought.id, window=timedelta(days=30))  # MiniLM threshold 0.5
        assert [(x.cause, x.effect) for x in made] == [(rain.id, drought.id)]
        assert made[0].similarity is not None
        assert 0.5 <= made[0].similarity < 0.6
        assert guild.id not in {x.cause for x in mem.links()}
        # The inferred link now carries a witness of the rain into a crisis read on the drought.
        mem.remember("My barley has not seen water since the spring", agent="ada",
                     event_id=rain.id)  # fmt: skip
        mem.remember("The harvest festival was cancelled", agent="bo")
        hits = mem.peek("what went wrong with the harvest?", crisis=drought.id, explain=True)
        top = hits[0].breakdown.causal  # type: ignore[union-attr]
        assert hits[0].record.agent == "ada"
        assert top is not None
        assert (top.via, top.event_id) == ("witness", rain.id)
