"""Supersession, closing, history, as-of and valid-at reads (DESIGN §2 step 1, §3)."""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronomem import (
    ConflictError,
    InvalidInputError,
    Memory,
    NotFoundError,
    SimClock,
    Status,
)

from ..conftest import T0, unit

NPM, PNPM, MAKE = unit(1, 0.2, 0), unit(1, 0.6, 0), unit(0, 0, 1)


def _npm_story(mem: Memory, clock: SimClock) -> tuple[str, str, str]:
    clock.set(T0 + timedelta(days=14))  # January
    npm = mem.remember("install packages with npm", kind="instruction", embedding=NPM).id
    make = mem.remember("run the tests with make test", kind="instruction", embedding=MAKE).id
    clock.set(T0 + timedelta(days=160))  # June
    pnpm = mem.supersede(npm, "install packages with pnpm", embedding=PNPM).id
    assert pnpm is not None
    clock.set(T0 + timedelta(days=330))  # November
    return npm, pnpm, make


def test_supersede_closes_the_old_record_atomically(mem: Memory, clock: SimClock) -> None:
    npm, pnpm, _ = _npm_story(mem, clock)
    old, new = mem.get(npm), mem.get(pnpm)
    june = T0 + timedelta(days=160)
    assert (old.status, old.superseded_by, old.superseded_at) == (Status.SUPERSEDED, pnpm, june)
    assert old.valid_until == new.valid_from == june
    assert new.supersedes == (npm,)
    assert new.kind.value == "instruction"  # taken from the old record
    hits = mem.peek("install", query_embedding=NPM)
    assert [h.record.id for h in hits][:1] == [pnpm]
    assert npm not in {h.record.id for h in hits}


def test_history_reads_see_the_world_as_it_was(mem: Memory, clock: SimClock) -> None:
    npm, pnpm, make = _npm_story(mem, clock)
    january = T0 + timedelta(days=20)
    as_of = mem.peek("install", query_embedding=NPM, as_of=january)
    assert {h.record.id for h in as_of} == {npm, make}
    valid_at = mem.peek("install", query_embedding=NPM, valid_at=january)
    assert {h.record.id for h in valid_at} == {npm, make}
    assert valid_at[0].record.superseded_by == pnpm  # marked with what replaced it
    everything = mem.peek("install", query_embedding=NPM, include_history=True)
    assert {h.record.id for h in everything} == {npm, pnpm, make}


def test_history_follows_the_chain_both_ways(mem: Memory, clock: SimClock) -> None:
    a = mem.remember("v1", kind="fact", embedding=unit(1, 0, 0)).id
    clock.advance(days=1)
    b = mem.supersede(a, "v2", embedding=unit(0, 1, 0)).id
    clock.advance(days=1)
    c = mem.supersede([b], "v3", embedding=unit(0, 0, 1)).id
    assert b is not None
    assert c is not None
    for start in (a, b, c):
        assert [r.id for r in mem.history(start)] == [a, b, c]
    lone = mem.remember("alone", embedding=unit(1, 1, 0)).id
    assert [r.id for r in mem.history(lone)] == [lone]


def test_one_record_may_replace_several(mem: Memory, clock: SimClock) -> None:
    a = mem.remember("the office is in Paris", kind="fact", embedding=unit(1, 0)).id
    b = mem.remember("the office is on rue X", kind="fact", embedding=unit(0, 1)).id
    clock.advance(days=3)
    c = mem.supersede([a, b], "the office moved to Lyon", embedding=unit(1, 1)).id
    assert {mem.get(a).superseded_by, mem.get(b).superseded_by} == {c}
    assert [r.id for r in mem.history(a)] == [a, b, c]


def test_close_ends_the_window_without_a_successor(mem: Memory, clock: SimClock) -> None:
    rid = mem.remember("the bridge is open", kind="fact", embedding=unit(1, 0)).id
    clock.advance(days=2)
    closed = mem.close_record(rid, "the bridge was demolished")
    assert closed.status is Status.CLOSED
    assert closed.closed_reason == "the bridge was demolished"
    assert mem.peek("bridge", query_embedding=unit(1, 0)) == []
    assert (
        len(mem.peek("bridge", query_embedding=unit(1, 0), as_of=clock.now() - timedelta(days=1)))
        == 1
    )
    with pytest.raises(ConflictError):
        mem.close_record(rid, "again")


def test_bad_lifecycle_input_writes_nothing(mem: Memory, clock: SimClock) -> None:
    rid = mem.remember("x", kind="fact", embedding=unit(1, 0)).id
    before = mem.stats()["records"]
    with pytest.raises(NotFoundError):
        mem.supersede("01ABCDEFGHJKMNPQRSTVWXYZ00", "y", embedding=unit(0, 1))
    with pytest.raises(NotFoundError):
        mem.remember("y", supersedes=[rid, "01ABCDEFGHJKMNPQRSTVWXYZ00"], embedding=unit(0, 1))
    assert mem.get(rid).status is Status.OPEN  # the valid id was not closed either
    with pytest.raises(InvalidInputError):
        mem.supersede(
            rid, "y", valid_from=T0 + timedelta(days=5), valid_until=T0, embedding=unit(0, 1)
        )
    with pytest.raises(ConflictError):
        mem.remember_many(
            [
                {"text": "y", "supersedes": [rid], "embedding": unit(0, 1)},
                {"text": "z", "supersedes": [rid], "embedding": unit(0, 1)},
            ]
        )
    assert mem.stats()["records"] == before
    assert mem.get(rid).status is Status.OPEN
    mem.supersede(rid, "y", embedding=unit(0, 1))
    with pytest.raises(ConflictError, match="already superseded"):
        mem.supersede(rid, "z", embedding=unit(1, 1))
    with pytest.raises(ConflictError):
        mem.close_record(rid, "closing a superseded record")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(min_value=0, max_value=1000),
    st.integers(min_value=1, max_value=1000),
    st.integers(min_value=-50, max_value=2100),
    st.booleans(),
)
def test_supersession_is_time_correct(
    written_h: int, gap_h: int, read_h: int, retroactive: bool
) -> None:
    """Before ``superseded_at`` the old record is visible and the new one is not; after, the
    reverse — also when the replacement's validity starts before it was written."""
    with tempfile.TemporaryDirectory() as tmp:
        clock = SimClock(T0 + timedelta(hours=written_h))
        with Memory.open(Path(tmp) / "m.db", embedder=None, clock=clock) as mem:
            old = mem.remember("old", kind="fact", embedding=unit(1, 0)).id
            superseded_at = clock.advance(hours=gap_h)
            valid_from = clock.now() - timedelta(hours=gap_h // 2) if retroactive else None
            new = mem.supersede(old, "new", embedding=unit(0, 1), valid_from=valid_from).id
            as_of = T0 + timedelta(hours=read_h)
            seen = {h.record.id for h in mem.peek("x", query_embedding=unit(1, 1), as_of=as_of)}
            if as_of < T0 + timedelta(hours=written_h):
                assert seen == set()
            elif as_of < superseded_at:
                assert seen == {old}
            else:
                assert seen == {new}


def test_a_replacement_keeps_what_it_does_not_set(mem: Memory, clock: SimClock) -> None:
    """Tags, metadata, importance and sensitivity come from the old record unless given; a
    personal fact corrected stays personal, so forgetting it still purges it."""
    old = mem.remember(
        "Ada's phone number is 555-0100", kind="fact", domain="ada.phone", importance=6,
        tags=["contact", "ada"], metadata={"source": "call"}, sensitivity="personal",
        embedding=NPM,
    ).id  # fmt: skip
    assert old is not None
    clock.advance(timedelta(days=1))
    new_id = mem.supersede(old, "Ada's phone number is 555-0199", embedding=PNPM).id
    assert new_id is not None
    new = mem.get(new_id)
    assert (new.tags, dict(new.metadata), new.importance) == (
        ("contact", "ada"), {"source": "call"}, 6,
    )  # fmt: skip
    assert (new.sensitivity.value, new.domain, new.kind.value) == ("personal", "ada.phone", "fact")
    forgotten = mem.forget(new_id, "the user asked")
    assert forgotten.purged
    tagged = mem.remember("the wifi is slow", tags=["net"], metadata={"a": 1}, embedding=MAKE)
    assert tagged.id is not None
    cleared = mem.supersede(tagged.id, "the wifi is fast", tags=(), metadata={}, embedding=NPM)
    assert cleared.id is not None
    assert (mem.get(cleared.id).tags, dict(mem.get(cleared.id).metadata)) == ((), {})


def test_a_replacement_of_several_takes_the_most_sensitive(mem: Memory) -> None:
    a = mem.remember("the door code is 1234", kind="fact", sensitivity="secret", embedding=NPM)
    b = mem.remember("the door is blue", kind="fact", embedding=MAKE)
    assert a.id is not None
    assert b.id is not None
    new = mem.supersede([b.id, a.id], "the door is blue, code 4321", embedding=PNPM)
    assert new.id is not None
    assert mem.get(new.id).sensitivity.value == "secret"
