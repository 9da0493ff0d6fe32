"""Sessions as first-class scope (issue 28): a record's conversation, thread or run, written
with it and read alone or across sessions — on both stores, across a reopen, an export and an
import, over HTTP and from the CLI."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from chronomem import Memory, SimClock
from chronomem.client import Client
from chronomem.errors import InvalidInputError

from ..cli.invoke import run
from ..conftest import T0
from ..server.service import running


def _conversations(m: Memory, clock: SimClock) -> None:
    clock.set(T0)
    m.remember_many(
        ["user: I keep my bike in the hall", "assistant: Noted, the hall."],
        agent="assistant", session="monday",
    )  # fmt: skip
    clock.advance(timedelta(days=1))
    m.remember("user: my bike was stolen from the hall", agent="assistant", session="tuesday")
    m.remember("the user rides to work", agent="assistant", kind="fact")  # no session


def test_one_session_or_all_of_them(location: str | Path, clock: SimClock) -> None:
    with Memory.open(location, embedder=None, clock=clock) as m:
        _conversations(m, clock)
        this = m.peek("where is the bike?", agent="assistant", session="monday", k=10)
        assert {h.record.session for h in this} == {"monday"}
        assert len(this) == 2
        every = m.peek("bike", agent="assistant", k=10)
        assert {h.record.session for h in every} == {"monday", "tuesday", None}
        listed = m.records(session="tuesday")
        assert [r.text for r in listed] == ["user: my bike was stolen from the hall"]
        same = m.records(filter={"session": "tuesday"})
        assert [r.id for r in same] == [r.id for r in listed]
        assert len(m.records(filter={"session": {"$exists": False}})) == 1
        assert m.records(session="monday", filter={"kind": "fact"}) == []
        # a correction keeps its thread unless it names another
        old = listed[0]
        clock.advance(timedelta(minutes=5))
        new = m.supersede(old.id, "user: my bike was found in the yard", reason="found")
        assert m.get(str(new.id)).session == "tuesday"


def test_sessions_survive_a_reopen_and_an_archive(tmp_path: Path, clock: SimClock) -> None:
    db = tmp_path / "s.db"
    with Memory.open(db, embedder=None, clock=clock, index_snapshot=0) as m:
        _conversations(m, clock)
        m.export(tmp_path / "s.jsonl")
    for _ in range(2):  # rebuilt from the rows, then loaded from the index snapshot
        with Memory.open(db, embedder=None, clock=clock, index_snapshot=0) as m:
            assert len(m.records(session="monday")) == 2
    with Memory.open(tmp_path / "copy.db", embedder=None, clock=clock) as m:
        m.import_(tmp_path / "s.jsonl")
        assert sorted(r.session or "" for r in m.records()) == ["", "monday", "monday", "tuesday"]


def test_a_session_is_a_short_label(db_path: Path) -> None:
    with Memory.open(db_path, embedder=None) as m:
        for bad in ("x" * 101, "two\nlines"):
            with pytest.raises(InvalidInputError) as raised:
                m.remember("hello", session=bad)
            assert raised.value.field == "session"


def test_sessions_over_http_and_the_cli(
    tmp_path: Path, clock: SimClock, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.db"
    with running(db, embedder=None) as (url, _), Client(url) as client:
        client.remember_many(["user: hello", "user: I like tea"], agent="a", session="t1")
        client.remember("user: I like coffee now", agent="a", session="t2")
        assert {r.session for r in client.records(session="t1")} == {"t1"}
        hits = client.peek("what do I like?", agent="a", session="t2")
        assert [h.record.text for h in hits] == ["user: I like coffee now"]
    common = ("--db", str(db), "--no-embedder")
    code, _, _ = run(capsys, "remember", "user: bye", "--agent", "a", "--session", "t2", *common)
    assert code == 0
    code, out, _ = run(capsys, "list", "--session", "t2", "--json", *common)
    assert code == 0
    assert sorted(r["text"] for r in json.loads(out)) == ["user: I like coffee now", "user: bye"]
    code, out, _ = run(capsys, "recall", "like", "--session", "t1", "--no-touch", "--json", *common)
    assert {h["record"]["session"] for h in json.loads(out)} == {"t1"}


def test_a_context_block_keeps_to_a_session(db_path: Path, clock: SimClock) -> None:
    with Memory.open(db_path, embedder=None, clock=clock) as m:
        _conversations(m, clock)
        block = m.context(
            "where is the bike?", agent="assistant", session="monday", touch=False, min_relevance=0
        )
        assert len(block.evidence) == 2
        assert "stolen" not in block.text
        facts = m.context("bike", filter={"kind": "fact"}, touch=False)
        assert [e.text for e in facts.evidence] == ["the user rides to work"]
