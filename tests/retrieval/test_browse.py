"""Browsing: ``Memory.records(status=...)`` partitions a space's history by state at any
``as_of``, and ``Memory.events`` filters and pages the causal graph's events."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from chronomem import Memory, SimClock
from chronomem.errors import InvalidInputError

from ..conftest import T0


def test_states_partition_the_history_at_every_instant(tmp_path: Path) -> None:
    clock = SimClock(T0)
    with Memory.open(tmp_path / "s.db", embedder=None, clock=clock) as mem:
        ids = [mem.remember(f"fact {i}", kind="fact").id for i in range(12)]
        instants = [clock.now()]
        for i, rid in enumerate(ids[:8]):
            clock.advance(hours=1)
            assert rid is not None
            if i % 2:
                mem.close_record(rid, "no longer true")
            else:
                mem.supersede(rid, f"fact {i}, revised")
            instants.append(clock.now())
        for at in instants:
            every = {r.id for r in mem.records(include_history=True, as_of=at, limit=1000)}
            parts = {
                state: {r.id for r in mem.records(status=state, as_of=at, limit=1000)}
                for state in ("open", "closed", "superseded")
            }
            assert set().union(*parts.values()) == every
            assert sum(map(len, parts.values())) == len(every)
            for state in parts:
                for record in mem.records(status=state, as_of=at, limit=1000):
                    ended = record.superseded_at is not None and record.superseded_at <= at
                    assert ended == (state != "open")
                    if ended:
                        assert record.status.value == state
        assert len(parts["closed"]) == 4
        assert len(parts["superseded"]) == 4
        page = mem.records(status="open", limit=3, offset=3)
        assert [r.id for r in page] == [r.id for r in mem.records(status="open", limit=100)][3:6]
        with pytest.raises(InvalidInputError):
            mem.records(status="archived")


def test_events_filter_and_page(tmp_path: Path) -> None:
    clock = SimClock(T0)
    with Memory.open(tmp_path / "e.db", embedder=None, clock=clock) as mem:
        made = []
        for i in range(6):
            kind = "crisis" if i % 3 == 2 else "happening"
            made.append(mem.add_event(f"event {i}", kind=kind, scope="north" if i < 3 else None))
            clock.advance(days=1)
        assert [e.id for e in mem.events()] == [e.id for e in made]
        assert [e.text for e in mem.events(kinds=["crisis"])] == ["event 2", "event 5"]
        assert [e.text for e in mem.events(scope="north")] == ["event 0", "event 1", "event 2"]
        window = mem.events(since=T0 + timedelta(days=1), until=T0 + timedelta(days=3))
        assert [e.text for e in window] == ["event 1", "event 2"]
        early = mem.events(as_of=T0 + timedelta(hours=30))
        assert [e.text for e in early] == ["event 0", "event 1"]
        assert [e.text for e in mem.events(limit=2, offset=2)] == ["event 2", "event 3"]
        with pytest.raises(InvalidInputError):
            mem.events(kinds=["storm"])
