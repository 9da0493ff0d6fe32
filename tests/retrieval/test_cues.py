"""What a question's words favour: whose lines (the other party's, a named speaker's, the
asker's own) and when (a time reference's window), on every store, with explanations."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from chronomem import PRESETS, Memory, SimClock

from ..conftest import unit

V = unit(1, 0, 0, 0)
NO_TIME = replace(PRESETS["default"], time_prior=0.0)


def test_a_question_about_what_the_other_party_said_favours_their_lines(
    location: str | Path, clock: SimClock
) -> None:
    with Memory.open(location, embedder=None, clock=clock) as mem:
        listed = mem.remember("assistant: 1. Oak 2. Pine 3. Birch", embedding=V).id
        clock.advance(minutes=1)
        asked = mem.remember("user: Thanks for the trees", embedding=V).id
        clock.advance(days=1)
        question = "Can you remind me of the third tree in the list you provided?"
        hits = mem.peek(question, query_embedding=V, asker="user", explain=True)
        assert [h.record.id for h in hits] == [listed, asked]
        b = hits[0].breakdown
        assert b is not None
        assert b.speaker == "assistant"
        assert "remind me" in b.cues["speaker"]
        assert hits[1].breakdown is not None
        assert hits[1].breakdown.speaker is None
        # the same words without an asker: nobody is "you", the newer line wins
        plain = mem.peek(question, query_embedding=V, explain=True)
        assert plain[0].record.id == asked
        assert plain[0].breakdown is not None
        assert "speaker" not in plain[0].breakdown.cues
        # a request for something new is no question about what was said
        new = mem.peek("Can you suggest a tree?", query_embedding=V, asker="user")
        assert new[0].record.id == asked


def test_a_question_about_what_a_named_speaker_said_favours_their_lines(
    location: str | Path, clock: SimClock
) -> None:
    with Memory.open(location, embedder=None, clock=clock) as mem:
        said = mem.remember("Melanie: Try the pottery class", embedding=V).id
        clock.advance(minutes=1)
        other = mem.remember("Caroline: Melanie, the pottery class is fun", embedding=V).id
        clock.advance(days=1)
        hits = mem.peek("What class did Melanie suggest?", query_embedding=V, explain=True)
        assert [h.record.id for h in hits] == [said, other]
        assert hits[0].breakdown is not None
        assert hits[0].breakdown.speaker == "melanie"
        # a deed is not a line: "Melanie make" names no speaker to favour
        for question in (
            "What did Melanie make in pottery class?",
            "What did Melanie suggest, and what did Caroline say?",  # no single speaker
        ):
            hits = mem.peek(question, query_embedding=V, explain=True)
            assert all(h.breakdown and h.breakdown.speaker is None for h in hits)
            assert all(h.breakdown and "speaker" not in h.breakdown.cues for h in hits)


def test_a_speaker_first_written_after_a_read_is_found_by_the_next(
    location: str | Path, clock: SimClock
) -> None:
    """The read's names of speakers are kept between reads (``AgentArrays.speaker_finder``):
    one added since, by this handle or another, is asked about like the others."""
    with Memory.open(location, embedder=None, clock=clock) as mem:
        mem.remember("Melanie: Try the pottery class", embedding=V)
        clock.advance(minutes=1)
        mem.peek("What class did Melanie suggest?", query_embedding=V)
        said = mem.remember("Zoë: Try the night market", embedding=V).id
        clock.advance(minutes=1)
        newer = mem.remember("Melanie: Zoë, the market was crowded", embedding=V).id
        clock.advance(days=1)
        hits = mem.peek("What did Zoë suggest?", query_embedding=V, explain=True)
        assert [h.record.id for h in hits][:2] == [said, newer]
        assert hits[0].breakdown is not None
        assert hits[0].breakdown.speaker == "zoë"


def test_a_time_reference_prefers_records_in_its_window(
    location: str | Path, clock: SimClock
) -> None:
    with Memory.open(location, embedder=None, clock=clock) as mem:
        start = clock.now()
        in_window = mem.remember("user: cooked pasta", embedding=V, occurred_at=start).id
        clock.advance(days=10)
        late = mem.remember("user: cooked rice", embedding=V).id
        clock.advance(hours=1)
        question = "What did I cook about ten days ago? A week ago, I think."
        hits = mem.peek(question, query_embedding=V, explain=True)
        assert [h.record.id for h in hits] == [in_window, late]
        first, second = (h.breakdown for h in hits)
        assert first is not None
        assert second is not None
        assert "time_window" not in first.factors
        assert 1.0 - PRESETS["default"].time_prior <= second.factors["time_window"] < 1.0
        assert '"ten days ago"' in second.cues["time"]  # the first reference
        for b in (first, second):  # the explanation still adds up
            assert sum(b.contributions().values()) == pytest.approx(b.final)
        # without the prior, the newer of two equal matches wins
        assert mem.peek(question, query_embedding=V, preset=NO_TIME)[0].record.id == late


def test_a_time_window_is_never_a_filter(location: str | Path, clock: SimClock) -> None:
    with Memory.open(location, embedder=None, clock=clock) as mem:
        old = mem.remember("user: planted tulips", embedding=V).id
        clock.advance(days=30)
        new = mem.remember("user: planted roses", embedding=V).id
        clock.advance(days=1)
        # nothing happened yesterday: both come back, the one nearest the window keeps its score
        hits = mem.peek("What did I plant yesterday?", query_embedding=V, explain=True)
        assert [h.record.id for h in hits] == [new, old]
        assert hits[0].breakdown is not None
        assert "time_window" not in hits[0].breakdown.factors
        assert hits[1].breakdown is not None
        assert hits[1].breakdown.factors["time_window"] < 1.0


def test_occurred_at_survives_a_reopen(tmp_path: Path, clock: SimClock) -> None:
    path = tmp_path / "m.db"
    with Memory.open(path, embedder=None, clock=clock, index_snapshot=0) as mem:
        mem.remember("user: cooked pasta", embedding=V, occurred_at=clock.now())
        clock.advance(days=10)
        late = mem.remember("user: cooked rice", embedding=V).id
    clock.advance(days=1)
    for source in ("store", "snapshot"):  # rebuilt from the store, then from the index snapshot
        with Memory.open(path, embedder=None, clock=clock, index_snapshot=0) as mem:
            hits = mem.peek("What did I cook a week ago?", query_embedding=V)
            assert mem._h.index.loaded_from == source
            assert hits[-1].record.id == late
            hits = mem.peek("What did I cook yesterday?", query_embedding=V)
            assert hits[0].record.id == late


def test_just_outside_a_window_a_record_has_lost_a_tenth_of_the_prior() -> None:
    """Read on a Thursday, "지난주" (last week) is Monday to Sunday before: this Monday's lunch is
    half a day outside it and loses more than the BM25 difference a longer dish name makes."""
    clock = SimClock(datetime(2025, 3, 27, 12, tzinfo=UTC))
    with Memory.open(":memory:", embedder=None, clock=clock) as mem:
        wednesday = mem.remember(
            "점심으로 비빔밥을 먹었다.", occurred_at=datetime(2025, 3, 19, 12, tzinfo=UTC)
        )
        monday = mem.remember(
            "점심으로 냉면을 먹었다.", occurred_at=datetime(2025, 3, 24, 12, tzinfo=UTC)
        )
        hits = mem.peek("지난주에 점심으로 뭘 먹었어?", explain=True)
        assert [h.record.id for h in hits] == [wednesday.id, monday.id]
        outside = hits[1].breakdown
        assert outside is not None
        prior = PRESETS["default"].time_prior
        assert outside.factors["time_window"] <= 1.0 - prior / 10
        assert mem.peek("점심으로 뭘 먹었어?")[0].record.id == monday.id  # without the window
