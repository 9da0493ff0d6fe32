"""One conversation, three shapes (DESIGN §9, issue 27): transcript lines ``"Name: words"``, prose
``'Name said, "words"'`` and the words alone with ``speaker=`` — read alike (the same terms, the
same vectors), ranked alike, and the speaker cue finds each speaker's lines in every shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronomem import InvalidInputError, Memory, SimClock
from chronomem.text import speaker, spoken

from ..conftest import T0, FixedEmbedder

TURNS = [
    ("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
    ("Melanie", "That's amazing! I've been painting a lot lately, mostly sunsets."),
    ("Caroline", "I'm thinking about a career in counseling."),
    ("Melanie", "You'd be great at it. I took my kids camping last weekend."),
]


def _store(mem: Memory, shape: str) -> None:
    for who, words in TURNS:
        if shape == "transcript":
            mem.remember(f"{who}: {words}")
        elif shape == "prose":
            mem.remember(f'{who} said, "{words}"')
        else:
            mem.remember(words, speaker=who)


@pytest.mark.parametrize("embedder", ["fixed", "none"])
def test_a_conversation_ranks_alike_in_every_shape(tmp_path: Path, embedder: str) -> None:
    questions = [
        "What did Caroline say about counseling?",
        "What does Melanie paint?",
        "Where did Melanie take her kids?",
        "What group did Caroline go to?",
    ]
    rankings = {}
    for shape in ("transcript", "prose", "roles"):
        with Memory.open(
            tmp_path / f"{shape}-{embedder}.db",
            embedder=FixedEmbedder(dim=16) if embedder == "fixed" else None,
            clock=SimClock(T0),
        ) as mem:
            _store(mem, shape)
            rankings[shape] = [
                [TURNS.index(_turn(h.record)) for h in mem.peek(q, k=4)] for q in questions
            ]
    assert rankings["prose"] == rankings["transcript"]
    assert rankings["roles"] == rankings["transcript"]


def _turn(record: object) -> tuple[str, str]:
    from chronomem import Record

    assert isinstance(record, Record)
    said = record.read_text
    who, _, words = said.partition(": ")
    return who, words


def test_the_text_is_read_in_one_shape() -> None:
    assert spoken('Caroline said, "I went home."', None) == "Caroline: I went home."
    assert spoken("I went home.", "Caroline") == "Caroline: I went home."
    assert spoken("Caroline: I went home.", "Caroline") == "Caroline: I went home."
    assert speaker('Melanie told Caroline, "I love painting!"') == "melanie"
    assert speaker('The sign said "closed"') is None
    assert speaker("I said no.") is None


def test_the_speaker_is_kept_and_bounded(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "s.db", embedder=None, clock=SimClock(T0)) as mem:
        rid = mem.remember("I moved to Shinjuku", speaker="user").id
        assert rid is not None
        record = mem.get(rid)
        assert (record.text, record.speaker, record.read_text) == (
            "I moved to Shinjuku", "user", "user: I moved to Shinjuku",
        )  # fmt: skip
        with pytest.raises(InvalidInputError, match="speaker"):
            mem.remember("x", speaker="a\nb")
        new = mem.supersede(rid, "I moved to Shibuya").id
        assert new is not None
        assert mem.get(new).speaker == "user"  # kept through a correction
