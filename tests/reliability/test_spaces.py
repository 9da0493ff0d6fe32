"""Nothing crosses spaces, on every store (docs/reliability.md, "Isolation between spaces"):
two spaces of one store, with the same agents and the same texts, never see, score, touch,
change, cite, purge or export each other's records and events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chronomem import Memory, NotFoundError, SimClock

from ..conftest import T0
from .conftest import Stores

TEXTS = ["the lamp in the lighthouse is lit", "bread prices doubled", "the fog came in"]


def _fill(mem: Memory, extra: int) -> list[str]:
    ids = [mem.remember(t, agent="ada", embedding=[1.0, i, 0.0]).id for i, t in enumerate(TEXTS)]
    for i in range(extra):  # changes the space's BM25 statistics, only its own
        mem.remember(f"lamp lamp filler {i}", agent="bo", embedding=[0.0, 0.0, 1.0])
    return [i for i in ids if i]


def test_nothing_crosses_spaces(stores: Stores, figures: dict[str, Any], tmp_path: Path) -> None:
    checks = 0
    with stores.new() as location:
        clock = SimClock(T0)
        with (
            Memory.open(location, embedder=None, clock=clock, space="alpha") as a,
            Memory.open(location, embedder=None, clock=clock, space="beta") as b,
        ):
            in_a, in_b = _fill(a, extra=0), _fill(b, extra=30)
            event_b = b.add_event("a riot").id
            event_a = a.add_event("a drought").id
            alone_path = tmp_path / "alone.db"
            with Memory.open(alone_path, embedder=None, clock=clock, space="alpha") as alone:
                _fill(alone, extra=0)
                expected = [(h.record.text, h.score) for h in alone.peek("lamp", k=3)]
            # reads and their scores: beta's records and statistics change nothing in alpha
            assert [(h.record.text, h.score) for h in a.peek("lamp", k=3)] == expected
            assert {h.record.id for h in a.peek("lamp", k=50)} <= set(in_a)
            assert a.agents() == ["ada"]
            checks += 3
            # a touch in alpha leaves beta's access times alone
            before = [b.get(i).last_accessed_at for i in in_b]
            clock.advance(hours=1)
            a.recall("lamp", k=3)
            assert [b.get(i).last_accessed_at for i in in_b] == before
            checks += 1
            # beta's ids and events do not exist in alpha, for any verb
            for call in (
                lambda: a.get(in_b[0]),
                lambda: a.verify(in_b[0]),
                lambda: a.feedback(in_b[0], "harmful"),
                lambda: a.close_record(in_b[0], "no"),
                lambda: a.supersede(in_b[0], "replaced"),
                lambda: a.forget(in_b[0], "erase", purge=True),
                lambda: a.history(in_b[0]),
                lambda: a.remember("cites beta", evidence=[in_b[0]], embedding=[1.0, 0, 0]),
                lambda: a.remember("saw the riot", event_id=event_b, embedding=[1.0, 0, 0]),
                lambda: a.ancestors(event_b),
                lambda: a.link(event_b, event_a),
                lambda: a.recall("riot", crisis=event_b),
            ):
                with pytest.raises(NotFoundError):
                    call()
                checks += 1
            assert b.get(in_b[0]).feedback_score == 0
            # purging in alpha leaves beta's identical text where it was
            a.forget(in_a[0], "erasure", purge=True)
            assert b.get(in_b[0]).text == TEXTS[0]
            assert b.peek("lighthouse", k=1)[0].record.id == in_b[0]
            checks += 1
            # an export of alpha holds alpha only
            archive = tmp_path / "alpha.jsonl"
            a.export(archive)
            content = archive.read_text()
            assert all(i not in content for i in in_b)
            assert event_b not in content
            assert b.audit() == []
            checks += 3
    figures[f"isolation between spaces ({stores.name}): checks"] = checks
