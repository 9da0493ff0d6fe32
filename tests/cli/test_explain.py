"""``recall --explain`` prints each part of the score with its operation, and the printed parts
add up to the printed score; ids are shown in full or as unique prefixes."""

from __future__ import annotations

import re

import pytest

from chronomem import PRESETS, Memory, ScoringConfig, SimClock
from chronomem.cli.render import format_hit, unique_prefixes

from ..conftest import T0
from ..retrieval.test_contributions import MULTIPLICATIVE
from ..scenario import QUERY, populate, populate_graph

PART = re.compile(r"^   ([ +]) (.*?)\s+= +(-?\d+\.\d{4})$")
SCORE = re.compile(r"^   = score\s+(-?\d+\.\d{4})  \[")


@pytest.mark.parametrize(
    "preset",
    [*sorted(PRESETS), MULTIPLICATIVE],
    ids=lambda p: p if isinstance(p, str) else "default-multiplicative",
)
def test_the_printed_parts_add_up_to_the_printed_score(preset: str | ScoringConfig) -> None:
    clock = SimClock(T0)
    seen: set[str] = set()
    factors: set[str] = set()
    with Memory.open(":memory:", embedder=None, clock=clock) as mem:
        populate(mem, clock)
        crisis = populate_graph(mem, clock)
        questions = (
            "when does the cafe open",
            "how many cafe notes did I read about two days ago?",  # time window, every piece
        )
        for question in questions:
            for extra in ({}, {"crisis": crisis}, {"include_history": True}):
                hits = mem.peek(
                    question, query_embedding=QUERY, explain=True, preset=preset,
                    k=20, **extra,  # type: ignore[arg-type]
                )  # fmt: skip
                for rank, hit in enumerate(hits, start=1):
                    assert hit.breakdown is not None
                    factors |= set(hit.breakdown.factors)
                    lines = [
                        line
                        for line in format_hit(rank, hit).split("\n")[2:]
                        if not line.startswith("   (")  # the question's cues, before the parts
                    ]
                    parts = [PART.match(line) for line in lines[:-1]]
                    assert all(parts), lines
                    score = SCORE.match(lines[-1])
                    assert score, lines[-1]
                    values = [float(m.group(3)) for m in parts if m]
                    printed = float(score.group(1))
                    assert printed == pytest.approx(hit.score, abs=5e-5)
                    # each part rounded to 4 places: the sum is off by at most half a unit each
                    assert sum(values) == pytest.approx(printed, abs=5e-5 * (len(values) + 1))
                    ops = [m.group(1) for m in parts if m]
                    assert ops == [" "] + ["+"] * (len(ops) - 1)
                    for m in parts:
                        assert m is not None
                        text = m.group(2)
                        seen.add(text.split(" (")[0].split(" bonus")[0])
                        if "bonus" in text:  # added, never shown as a multiplier
                            assert "×" not in text
                            assert " x " not in text
    assert {"relevance", "recency", "importance"} <= {s.split(" ")[0] for s in seen}
    if preset in ("default", "current-facts"):  # the question's own factors were printed too
        assert {"time_window", "same_session"} <= factors


def test_a_bonus_is_added_not_multiplied() -> None:
    clock = SimClock(T0)
    with Memory.open(":memory:", embedder=None, clock=clock) as mem:
        populate(mem, clock)
        hits = mem.peek("when does the cafe open", query_embedding=QUERY, explain=True, k=20)
    text = "\n".join(format_hit(i, h) for i, h in enumerate(hits, start=1))
    bonuses = [line for line in text.split("\n") if "bonus" in line]
    assert bonuses  # the scenario's newest cafe notes get the band's bonus
    for line in bonuses:
        assert line.startswith("   + ")
        assert "×" not in line


def test_unique_prefixes_never_repeat_for_ids_made_together(tmp_path: object) -> None:
    clock = SimClock(T0)
    with Memory.open(":memory:", embedder=None, clock=clock) as mem:
        results = mem.remember_many([f"note {i}" for i in range(200)])
    ids = [r.id for r in results if r.id]
    assert len({i[:8] for i in ids}) < len(ids)  # a fixed cut would collide
    short = unique_prefixes(ids)
    assert len(set(short.values())) == len(ids)
    for full, prefix in short.items():
        assert full.startswith(prefix)
        assert len(prefix) >= 8
        assert [i for i in ids if i.startswith(prefix)] == [full]
    assert unique_prefixes(["ABCDEFGHIJ", "ABCDEFGHIJK"]) == {
        "ABCDEFGHIJ": "ABCDEFGHIJ",
        "ABCDEFGHIJK": "ABCDEFGHIJK",
    }


def test_the_cli_shows_full_ids(capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    from pathlib import Path

    from chronomem.cli.main import main

    db = str(Path(str(tmp_path)) / "ids.db")
    made = []
    for text in ("the lamp is broken", "the lamp is lit"):
        main(["remember", text, "--db", db, "--no-embedder", "--now", "2024-03-01T00:00:00Z"])
        made.append(capsys.readouterr().out.strip())
    main(["recall", "lamp", "--explain", "--no-touch", "--db", db, "--no-embedder"])
    out = capsys.readouterr().out
    assert all(len(i) == 26 and i in out for i in made)


def test_the_explanation_stays_aligned_with_wide_characters() -> None:
    """A Korean speaker's name in a line takes two columns a syllable: the ``=`` column holds."""
    from chronomem.text import display_width

    with Memory.open(":memory:", embedder=None) as mem:
        mem.remember("부산에 가자고 했다", speaker="민수")
        mem.remember("서울에 가자고 했다", speaker="지수")
        hit = mem.peek("민수가 뭐라고 했어?", k=1, explain=True)[0]
    lines = format_hit(1, hit).splitlines()[2:]
    assert any("민수's line" in line for line in lines)
    columns = {display_width(line[: line.rindex("=")]) for line in lines if PART.match(line)}
    assert len(columns) == 1, lines
