"""Reflection logic with a scripted client: depth, persistence, the trigger, evidence integrity."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from chronomem import EvidenceStatus, Memory, SimClock
from chronomem.config import ReflectionConfig
from chronomem.errors import ConfigError, LLMError, ReflectionError
from chronomem.llm import ScriptedLLM

from ..conftest import FixedEmbedder


def questions(*qs: str) -> str:
    return json.dumps({"questions": list(qs)})


def insights(*items: tuple[str, list[int]]) -> str:
    return json.dumps({"insights": [{"insight": t, "evidence": e} for t, e in items]})


def _day(mem: Memory, clock: SimClock, texts: list[str], importance: float = 6) -> None:
    for text in texts:
        clock.advance(hours=1)
        mem.remember(text, agent="isabella", importance=importance)
    clock.advance(hours=1)


CONFIG = ReflectionConfig(questions=1, insights=3, threshold=20, evidence_k=10)


def test_a_reflection_citing_a_reflection_has_depth_2_and_round_trips(
    location: str | Path, clock: SimClock, tmp_path: Path
) -> None:
    with Memory.open(location, embedder=None, clock=clock, reflection=CONFIG) as mem:
        _day(mem, clock, ["Isabella plans a party", "Maria decorates the cafe"])
        first = mem.reflect("isabella", llm=ScriptedLLM([
            questions("What is Isabella doing?"), insights(("Isabella hosts parties", [1, 2])),
        ])).records[0]  # fmt: skip
        assert first.depth == 1
        clock.advance(hours=1)

        # The evidence list for the second reflection contains the first one: cite it.
        def cite_reflection(messages) -> str:  # type: ignore[no-untyped-def]
            lines = messages[-1]["content"].splitlines()
            number = next(i for i, line in enumerate(lines) if "hosts parties" in line)
            return insights(("Isabella builds community through events", [number, 1]))

        second = mem.reflect("isabella", llm=ScriptedLLM([
            questions("Why does Isabella host parties?"), cite_reflection,
        ])).records[0]  # fmt: skip
        assert first.id in second.evidence
        assert second.depth == 2
        mem.export(tmp_path / "a.jsonl")
    with Memory.open(location, embedder=None, clock=clock) as again:
        assert (again.get(second.id).depth, again.get(second.id).evidence) == (2, second.evidence)
    with Memory.open(tmp_path / "b.db", embedder=None, clock=clock) as other:
        other.import_(tmp_path / "a.jsonl")
        assert (other.get(second.id).depth, other.get(second.id).evidence) == (2, second.evidence)


def test_the_trigger_accumulates_survives_a_restart_and_resets(
    location: str | Path, clock: SimClock
) -> None:
    llm = ScriptedLLM([questions("What matters?"), insights(("A busy week", [1]))])
    with Memory.open(location, embedder=None, clock=clock, reflection=CONFIG) as mem:
        _day(mem, clock, ["a", "b"], importance=6)  # 12 < 20
        assert mem.accumulated_importance("isabella") == 12
        assert mem.maybe_reflect("isabella", llm=llm) is None
    with Memory.open(location, embedder=None, clock=clock, reflection=CONFIG) as mem:
        assert mem.accumulated_importance("isabella") == 12  # persisted
        _day(mem, clock, ["c"], importance=8)  # 20 >= 20
        result = mem.maybe_reflect("isabella", llm=llm)
        assert result is not None
        assert len(result.records) == 1
        assert mem.accumulated_importance("isabella") == 0  # reset with the write
        assert mem.maybe_reflect("isabella", llm=llm) is None  # reflections do not count


def test_auto_reflect_on_remember_is_opt_in_and_never_loses_the_write(
    db_path: Path, clock: SimClock
) -> None:
    auto = ReflectionConfig(questions=1, insights=1, threshold=10, auto=True, attempts=1)
    llm = ScriptedLLM([questions("What happened?"), insights(("Things happened", [1])),
                       LLMError("the model is down")])  # fmt: skip
    with Memory.open(db_path, embedder=None, clock=clock, llm=llm, reflection=auto) as mem:
        mem.remember("the bakery burned down", agent="isabella", importance=6)
        assert mem.peek("x", agent="isabella", kinds=["reflection"]) == []
        mem.remember("the mayor resigned", agent="isabella", importance=6)  # 12 >= 10
        assert len(mem.peek("x", agent="isabella", kinds=["reflection"])) == 1
        assert mem.accumulated_importance("isabella") == 0
        mem.remember("a flood", agent="isabella", importance=6)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            written = mem.remember("a fire", agent="isabella", importance=6)  # model down
        assert written.stored  # the write is kept
        assert any("auto-reflection for isabella failed" in str(w.message) for w in caught)
        assert mem.accumulated_importance("isabella") == 12  # retried next time


def test_superseding_or_purging_evidence_flags_the_reflection(mem: Memory, clock: SimClock) -> None:
    _day(mem, clock, ["the cafe opens at 8", "Maria works mornings", "the cafe sells croissants"])
    reflection = mem.reflect("isabella", llm=ScriptedLLM([
        questions("When is the cafe busy?"), insights(("Mornings are busy", [1, 2, 3])),
    ])).records[0]  # fmt: skip
    cited = {mem.get(i).text: i for i in reflection.evidence}
    mem.supersede(cited["the cafe opens at 8"], "the cafe opens at 7")
    assert mem.get(reflection.id).evidence_status is EvidenceStatus.SUPERSEDED
    block = mem.context("When is the cafe busy?", agent="isabella", touch=False)
    assert "[evidence superseded]" in block.text
    with pytest.raises(Exception, match="depend"):
        mem.forget(cited["Maria works mornings"], "cleanup")  # cited: refused
    mem.forget(cited["Maria works mornings"], "personal data request", purge=True)
    assert mem.get(reflection.id).evidence_status is EvidenceStatus.MISSING
    mem.supersede(cited["the cafe sells croissants"], "the cafe sells bagels")  # no downgrade
    assert mem.get(reflection.id).evidence_status is EvidenceStatus.MISSING


def test_support_scores_need_vectors_and_flag_weak_support(db_path: Path, clock: SimClock) -> None:
    embedder = FixedEmbedder({"the party": [1, 0, 0, 0, 0, 0, 0, 0],
                              "unrelated insight": [0, 1, 0, 0, 0, 0, 0, 0]})  # fmt: skip
    with Memory.open(db_path, embedder=embedder, clock=clock, reflection=CONFIG) as mem:
        _day(mem, clock, ["the party"])
        [record] = mem.reflect("isabella", llm=ScriptedLLM([
            questions("q?"), insights(("unrelated insight", [1])),
        ])).records  # fmt: skip
        assert record.metadata["support"] == [0.0]
        assert record.metadata["weak_support"] is True
        assert record.metadata["question"] == "q?"


def test_reflect_refuses_without_an_llm_or_memories(mem: Memory) -> None:
    with pytest.raises(ConfigError, match="LLM"):
        mem.reflect("isabella")
    with pytest.raises(ReflectionError, match="no memories"):
        mem.reflect("isabella", llm=ScriptedLLM([]))
