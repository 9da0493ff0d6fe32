"""Passage vectors (a fact said in passing in a long record) and the speaker a question is about,
on every store."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from chronomem import PRESETS, Memory, SimClock

from ..conftest import FixedEmbedder, unit

TEA, CATS, DOGS, PARROT = unit(1, 0, 0, 0), unit(0, 1, 0, 0), unit(0, 0, 1, 0), unit(0, 0, 0, 1)
LONG = "user: I like tea. By the way, I have 3 cats!"
PARROTS = "user: Plain words here. I also have a parrot."
VECTORS = {
    LONG: unit(1, 0.3, 0, 0),  # the record as a whole is about tea
    "user: I like tea.": TEA,
    "user: By the way, I have 3 cats!": CATS,
    "user: Dogs are fine.": DOGS,
    PARROTS: unit(1, 0, 0, 0.3),
    "user: Plain words here.": TEA,
    "user: I also have a parrot.": PARROT,
    "how many cats do I have?": CATS,
    "which parrot?": PARROT,
}
RECORD_ONLY = replace(PRESETS["default"], passages=False)


def embedder() -> FixedEmbedder:
    return FixedEmbedder(VECTORS, dim=4)


def dense(mem: Memory, query: str, text: str, **kwargs: object) -> float:
    hits = mem.peek(query, k=10, explain=True, **kwargs)  # type: ignore[arg-type]
    hit = next(h for h in hits if h.record.text == text)
    assert hit.breakdown is not None
    assert hit.breakdown.relevance_dense is not None
    return hit.breakdown.relevance_dense


def test_a_fact_said_in_passing_matches_through_its_passage(
    location: str | Path, clock: SimClock, tmp_path: Path
) -> None:
    with Memory.open(location, embedder=embedder(), clock=clock, passages="sentences") as mem:
        mem.remember(LONG)
        mem.remember("user: Dogs are fine.")
        assert dense(mem, "how many cats do I have?", LONG) == pytest.approx(1.0)
        whole = dense(mem, "how many cats do I have?", LONG, preset=RECORD_ONLY)
        assert whole == pytest.approx(float(unit(1, 0.3, 0, 0) @ CATS))
        assert mem.peek("how many cats do I have?", k=1)[0].record.text == LONG
        mem.export(tmp_path / "space.jsonl")
    # stored with the record: another handle without an embedder reads them back
    with Memory.open(location, embedder=None, clock=clock) as mem:
        assert dense(mem, "how many cats?", LONG, query_embedding=CATS) == pytest.approx(1.0)
    # and the archive carries them
    with Memory.open(tmp_path / "copy.db", embedder=None, clock=clock) as copy:
        copy.import_(tmp_path / "space.jsonl")
        assert dense(copy, "how many cats?", LONG, query_embedding=CATS) == pytest.approx(1.0)


def test_passages_can_be_switched_off_at_open(location: str | Path, clock: SimClock) -> None:
    with Memory.open(location, embedder=embedder(), clock=clock, passages=False) as mem:
        mem.remember(LONG)
        assert dense(mem, "how many cats do I have?", LONG) == pytest.approx(
            float(unit(1, 0.3, 0, 0) @ CATS)
        )


def test_passages_stay_with_their_records_when_others_are_deleted(
    location: str | Path, clock: SimClock
) -> None:
    with Memory.open(location, embedder=embedder(), clock=clock) as mem:
        first = mem.remember(LONG).id
        mem.remember("user: Dogs are fine.")
        mem.remember(PARROTS)
        assert first is not None
        assert dense(mem, "which parrot?", PARROTS) == pytest.approx(1.0)  # the index is loaded
        mem.forget(first, "test", purge=True)
        assert dense(mem, "which parrot?", PARROTS) == pytest.approx(1.0)
        assert dense(mem, "which parrot?", "user: Dogs are fine.") == pytest.approx(0.0)
        # a fresh handle loads the same
    with Memory.open(location, embedder=None, clock=clock) as mem:
        assert dense(mem, "which?", PARROTS, query_embedding=PARROT) == pytest.approx(1.0)


def test_first_person_questions_prefer_the_askers_own_lines(
    location: str | Path, clock: SimClock
) -> None:
    with Memory.open(location, embedder=None, clock=clock) as mem:
        own = mem.remember("user: I keep my sneakers in the closet", embedding=CATS).id
        clock.advance(minutes=1)
        echo = mem.remember("assistant: Keeping sneakers in the closet is wise", embedding=CATS).id
        clock.advance(days=1)
        question = "where did I put them?"  # no word in common: equal relevance
        # the assistant's echo is as close and a minute newer: it wins without an asker
        assert mem.peek(question, query_embedding=CATS)[0].record.id == echo
        hits = mem.peek(question, query_embedding=CATS, asker="user", explain=True)
        assert [h.record.id for h in hits] == [own, echo]
        assert hits[0].breakdown is not None
        assert hits[0].breakdown.speaker == "user"
        assert hits[1].breakdown is not None
        assert hits[1].breakdown.speaker is None
        padded = mem.peek(question, query_embedding=CATS, asker=" User ")  # trimmed, case-folded
        assert [h.record.id for h in padded] == [own, echo]
        gain = hits[0].breakdown.relevance - hits[1].breakdown.relevance
        assert gain == pytest.approx(PRESETS["default"].speaker_weight)
        # a third-person question is not about the asker
        third = mem.peek("where were they put?", query_embedding=CATS, asker="user")
        assert third[0].record.id == echo
        # presets without a speaker weight ignore it
        ga = mem.peek(question, query_embedding=CATS, asker="user", preset="generative-agents",
                      explain=True)  # fmt: skip
        assert [h.breakdown.speaker for h in ga if h.breakdown] == [None, None]


def test_a_speaker_named_in_the_question_gains_nothing(
    location: str | Path, clock: SimClock
) -> None:
    with Memory.open(location, embedder=None, clock=clock) as mem:
        mem.remember("Caroline: I went to a support group today", embedding=DOGS)
        clock.advance(minutes=1)
        melanie = mem.remember("Melanie: Caroline went to a support group", embedding=DOGS).id
        clock.advance(days=1)
        hits = mem.peek("Where did Caroline go?", query_embedding=DOGS, explain=True,
                        asker="Melanie")  # fmt: skip
        assert hits[0].record.id == melanie  # the later of two equal matches (same BM25 too)
        assert [h.breakdown.speaker for h in hits if h.breakdown] == [None, None]


def test_malformed_passages_in_an_archive_are_refused(clock: SimClock, tmp_path: Path) -> None:
    import json

    from chronomem import InvalidInputError

    with Memory.open(tmp_path / "a.db", embedder=embedder(), clock=clock) as mem:
        mem.remember(LONG)
        mem.export(tmp_path / "space.jsonl")
    lines = (tmp_path / "space.jsonl").read_text().splitlines()
    record = json.loads(lines[1])
    assert record["passages"]  # two 4-d passages, base64
    for bad in ("AAAA", 42):  # one float: not rows of the embedding's width; not a string
        broken = [lines[0], json.dumps({**record, "passages": bad}), *lines[2:]]
        (tmp_path / "bad.jsonl").write_text("\n".join(broken) + "\n")
        with Memory.open(tmp_path / "b.db", embedder=None, clock=clock) as copy:
            with pytest.raises(InvalidInputError, match="passages"):
                copy.import_(tmp_path / "bad.jsonl")
            assert copy.stats()["records"] == 0


class _ShortEmbedder(FixedEmbedder):
    """Returns one vector too few."""

    def embed(self, texts, *, progress=False):  # type: ignore[no-untyped-def]
        return super().embed(texts)[:-1]


def test_an_embedder_returning_too_few_vectors_writes_nothing(
    clock: SimClock, tmp_path: Path
) -> None:
    from chronomem import EmbedderError

    with Memory.open(tmp_path / "e.db", embedder=_ShortEmbedder(VECTORS, dim=4), clock=clock) as m:
        with pytest.raises(EmbedderError, match="2 texts"):  # its two passages (derived)
            m.remember(LONG)
        assert m.stats()["records"] == 0


def test_embed_passages_backfills_records_without_them(
    location: str | Path, clock: SimClock
) -> None:
    from chronomem import ConfigError

    cats = "how many cats do I have?"
    with (
        Memory.open(location, embedder=embedder(), clock=clock, passages=False) as old,
        Memory.open(location, embedder=embedder(), clock=clock) as new,
    ):
        old.remember(LONG)  # written without passages
        new.remember(PARROTS)  # with them: its passages follow LONG's row in the arrays
        new.remember("user: Dogs are fine.")
        whole = float(unit(1, 0.3, 0, 0) @ CATS)
        for mem in (old, new):  # both handles load their arrays before the backfill
            assert dense(mem, cats, LONG) == pytest.approx(whole)
            assert dense(mem, "which parrot?", PARROTS) == pytest.approx(1.0)
        assert new.embed_passages() == 1  # LONG only: PARROTS has them, Dogs is one sentence
        assert new.embed_passages() == 0
        for mem in (old, new):  # the writer's arrays and another handle's both pick them up
            assert dense(mem, cats, LONG) == pytest.approx(1.0)
            assert dense(mem, "which parrot?", PARROTS) == pytest.approx(1.0)
            assert dense(mem, "which parrot?", LONG) == pytest.approx(
                float(unit(1, 0.3, 0, 0) @ PARROT)
            )
    with (
        Memory.open(location, embedder=None, clock=clock) as lexical,
        pytest.raises(ConfigError, match="embedder"),
    ):
        lexical.embed_passages()
