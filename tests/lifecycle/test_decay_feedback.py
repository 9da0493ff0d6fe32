"""Staleness decay with a floor, verify, and feedback push-down (DESIGN §2 step 5)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chronomem import PRESETS, InvalidInputError, Memory, NotFoundError, SimClock, Weights

from ..conftest import unit

# Relevance only, so the lifecycle factor is the one thing that differs.
RELEVANCE_ONLY = replace(
    PRESETS["default"],
    name="relevance-only",
    weights=Weights(relevance=1, recency=0, importance=0),
    versions=None,
)
Q = unit(1, 0, 0)


def test_stale_instructions_rank_lower_never_vanish_and_verify_restores(
    mem: Memory, clock: SimClock
) -> None:
    old = mem.remember("old", kind="instruction", embedding=unit(1, 1, 0)).id
    clock.advance(days=150)
    recent = mem.remember("recent", kind="instruction", embedding=unit(1, 0, 1)).id
    clock.advance(days=20)
    hits = mem.peek("q", query_embedding=Q, preset=RELEVANCE_ONLY, explain=True)
    assert [h.record.id for h in hits] == [recent, old]  # equally relevant; the stale one is lower
    decay = hits[1].breakdown.factors["decay"]  # type: ignore[union-attr]
    assert decay == pytest.approx(max(0.25, 0.5 ** (170 / 90)))
    assert hits[0].breakdown.factors["decay"] > decay  # type: ignore[union-attr]

    clock.advance(days=5 * 365)
    only = mem.peek("q", query_embedding=unit(1, 1, 0), kinds=["instruction"], k=1, explain=True,
                    preset=RELEVANCE_ONLY)  # fmt: skip
    assert only[0].record.id == old  # the only close match still comes back ...
    assert only[0].breakdown.factors["decay"] == 0.25  # type: ignore[union-attr]  # ... at the floor
    assert only[0].score > 0

    mem.verify(old)
    after = mem.peek("q", query_embedding=Q, preset=RELEVANCE_ONLY, explain=True)
    assert after[0].record.id == old
    assert "decay" not in after[0].breakdown.factors  # type: ignore[union-attr]  # factor 1 again
    assert mem.get(old).last_verified_at == clock.now()


def test_using_a_record_also_keeps_it_fresh(mem: Memory, clock: SimClock) -> None:
    rid = mem.remember("fact", kind="fact", embedding=unit(1, 0, 0)).id
    clock.advance(days=200)
    stale = mem.recall("q", query_embedding=Q, explain=True)[0]  # touches
    assert stale.breakdown.factors["decay"] < 1  # type: ignore[union-attr]
    fresh = mem.peek("q", query_embedding=Q, explain=True)[0]
    assert fresh.record.id == rid
    assert "decay" not in fresh.breakdown.factors  # type: ignore[union-attr]


def test_observations_do_not_decay(mem: Memory, clock: SimClock) -> None:
    mem.remember("saw a heron", embedding=unit(1, 0, 0))
    clock.advance(days=1000)
    hit = mem.peek("q", query_embedding=Q, explain=True, preset=RELEVANCE_ONLY)[0]
    assert hit.breakdown.factors == {}  # type: ignore[union-attr]


def test_a_harmful_rating_pushes_a_record_below_the_alternative(
    mem: Memory, clock: SimClock
) -> None:
    retry = mem.remember(
        "retry failing integration tests until they pass", kind="instruction",
        embedding=unit(1, 0.3, 0),
    ).id  # fmt: skip
    investigate = mem.remember(
        "investigate a failing integration test before re-running it", kind="instruction",
        embedding=unit(1, 0, 0.45),
    ).id  # fmt: skip
    question = "what do I do when integration tests fail?"
    before = mem.peek(question, query_embedding=Q, preset="default")
    assert [h.record.id for h in before] == [retry, investigate]

    rated = mem.feedback(retry, "harmful", "hid a real regression in March")
    assert rated.feedback_score == -1
    assert rated.text == "retry failing integration tests until they pass"  # text never changes
    after = mem.peek(question, query_embedding=Q, explain=True, preset="default")
    assert [h.record.id for h in after] == [investigate, retry]
    assert after[1].breakdown.factors["feedback"] == pytest.approx(2**-0.5)  # type: ignore[union-attr]

    mem.feedback(investigate, 0.5, "worked")
    assert mem.get(investigate).feedback_score == 0.5
    entries = [(e.action, e.record_id) for e in mem.audit()]
    assert ("feedback", retry) in entries
    assert ("feedback", investigate) in entries


def test_bad_feedback_is_refused(mem: Memory) -> None:
    rid = mem.remember("x", embedding=unit(1, 0, 0)).id
    for signal in ("great", 2, float("nan"), True):
        with pytest.raises(InvalidInputError):
            mem.feedback(rid, signal)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        mem.feedback("01ABCDEFGHJKMNPQRSTVWXYZ00", "helpful")
    assert mem.get(rid).feedback_score == 0


def test_the_code_compat_preset_has_no_lifecycle_factor(mem: Memory, clock: SimClock) -> None:
    rid = mem.remember("x", kind="fact", embedding=unit(1, 0, 0)).id
    mem.feedback(rid, "harmful")
    clock.advance(days=400)
    hit = mem.peek("q", query_embedding=Q, explain=True, preset="generative-agents-code")[0]
    assert hit.breakdown.factors == {}  # type: ignore[union-attr]
