"""Importance scorers: documented heuristic rules, the validated LLM prompt, and remember()."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronomem import Memory, SimClock
from chronomem.errors import InvalidInputError, LLMResponseError
from chronomem.llm import ScriptedLLM
from chronomem.writing.importance import HeuristicImportance, LLMImportance


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Isabella is brushing her teeth", 1),  # routine caps at 1
        ("the espresso machine is idle", 1),
        ("Isabella is opening Hobbs Cafe", 2),  # the base
        ("I decided to repaint the shop", 3),  # a decision +1
        ("Klaus and Maria argued about the paper", 4),  # conflict +2
        ("My father died last night", 7),  # a life event +5
        ("We were terrified when the flood came", 10),  # life event + emotion, clamped at 10
        ("My father died while sleeping", 7),  # routine does not cap a life event
    ],
)
def test_heuristic_rules(text: str, expected: float) -> None:
    assert HeuristicImportance().score([text]) == [expected]


def test_llm_scorer_validates_and_retries() -> None:
    llm = ScriptedLLM([json.dumps({"rating": 11}), json.dumps({"rating": 7})])
    assert LLMImportance(llm).score(["a break up"]) == [7.0]
    assert "is not an integer from 1 to 10" in llm.calls[1][0]["content"]
    with pytest.raises(LLMResponseError):
        LLMImportance(ScriptedLLM(["seven", "7.5?"])).score(["x"])


def test_llm_scorer_falls_back_only_when_told() -> None:
    scorer = LLMImportance(ScriptedLLM(["nope", "nope"]), fallback=HeuristicImportance())
    assert scorer.score(["My father died last night"]) == [7.0]
    assert scorer.fallbacks == 1


def test_remember_uses_the_configured_scorer(db_path: Path, clock: SimClock) -> None:
    llm = ScriptedLLM([json.dumps({"rating": 9}), json.dumps({"rating": 2})])
    with Memory.open(db_path, embedder=None, clock=clock, importance=LLMImportance(llm)) as mem:
        ids = [r.id for r in mem.remember_many(["got married", "ate lunch"])]
        assert [mem.get(i).importance for i in ids] == [9.0, 2.0]
        given = mem.remember("explicit", importance=4).id
        assert mem.get(given).importance == 4.0  # a given importance is never re-scored
    with Memory.open(db_path, embedder=None, clock=clock) as mem:  # the default: heuristic
        assert mem.get(mem.remember("my father died").id).importance == 7.0


def test_a_scorer_returning_nonsense_is_an_error_and_writes_nothing(
    db_path: Path, clock: SimClock
) -> None:
    class Broken:
        def score(self, texts):  # type: ignore[no-untyped-def]
            return [42.0 for _ in texts]

    with Memory.open(db_path, embedder=None, clock=clock, importance=Broken()) as mem:
        with pytest.raises(InvalidInputError, match="1 to 10"):
            mem.remember("x")
        assert mem.stats()["records"] == 0


@pytest.mark.parametrize(
    ("text", "at_least", "at_most"),
    [
        ("할아버지가 어젯밤 돌아가셨다", 7, 10),  # a death
        ("친구와 크게 싸웠다", 4, 4),  # a quarrel with a friend: one rule, +2
        ("아침에 이를 닦았다", 1, 1),  # routine
        ("祖父が昨夜亡くなった", 7, 10),
        ("上司と口論になった", 4, 4),
        ("朝、歯を磨いた", 1, 1),
        ("爷爷昨晚去世了", 7, 10),
        ("决定下个月搬家", 3, 3),
        ("午饭吃了一碗面", 1, 1),
    ],
)
def test_the_rules_read_korean_japanese_and_chinese(
    text: str, at_least: float, at_most: float
) -> None:
    assert at_least <= HeuristicImportance().score_one(text) <= at_most
    assert HeuristicImportance(cjk=False).score_one(text) == 2.0  # the English words see nothing


def test_the_cjk_words_never_fire_on_latin_text() -> None:
    from chronomem.writing import importance

    for _, other in importance._RULES:
        for word in other.pattern.split("|"):
            assert not any(c.isascii() and c.isalpha() for c in word.replace(r"\s?", "")), word
