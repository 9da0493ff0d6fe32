"""A crisis read with the real all-MiniLM-L6-v2 where a memory that merely shares the crisis's
scope must not pass the evidence (issue 30): the scope fallback amplifies what answers the
question and cannot lift what does not; context blocks leave unrelated memories out."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from chronomem import Hit, Memory, SimClock

pytestmark = pytest.mark.slow

SYMPTOMS = [
    ("cai", "An angry crowd smashed the granary doors and carried off sacks of grain"),
    ("dev", "Rioters threw stones at the guards outside the granary"),
    ("eve", "People were shouting about bread as the granary burned"),
]
QUESTION = "why did the granary riot happen?"
UNRELATED = [
    ("fay", "Run the tests with make test before every push"),
    ("gus", "My daughter learned to swim in the lake this summer"),
    ("hal", "I repainted the fence of my garden blue"),
]


def _town(mem: Memory, clock: SimClock) -> dict[str, str]:
    """A three-link chain into a granary riot, witnesses of each cause, symptom memories, an
    unrelated event of the same scope inside the fallback window and its witness, and unrelated
    memories of other agents. Returns the ids the tests name."""
    scope = "market district"
    drought = mem.add_event("No rain fell on the farms for three months", scope=scope)
    clock.advance(days=3)
    contest = mem.add_event("The market district held a poetry contest", scope=scope)
    mem.remember("I recited a poem about the moon at the contest and won a ribbon",
                 agent="bea", event_id=contest.id)  # fmt: skip
    clock.advance(days=3)
    shortage = mem.add_event("The granary ran short of wheat", scope=scope)
    clock.advance(days=3)
    prices = mem.add_event("The baker doubled the price of bread", scope=scope)
    clock.advance(days=3)
    riot = mem.add_event("A riot broke out at the granary", kind="crisis", scope=scope)
    mem.link(drought.id, shortage.id, 0.9)
    mem.link(shortage.id, prices.id, 0.9)
    mem.link(prices.id, riot.id, 0.9)
    mem.remember("My wheat field dried out, nothing grew", agent="ada", event_id=drought.id)
    mem.remember("The granary keeper turned me away, the bins were empty",
                 agent="ada", event_id=shortage.id)  # fmt: skip
    mem.remember("Bread costs twice what it did last week", agent="cai", event_id=prices.id)
    for agent, text in SYMPTOMS + UNRELATED:
        mem.remember(text, agent=agent)
    clock.advance(hours=2)
    return {"riot": riot.id, "contest": contest.id}


@pytest.fixture
def town(minilm, db_path: Path, clock: SimClock) -> Iterator[tuple[Memory, dict[str, str]]]:  # type: ignore[no-untyped-def]
    with Memory.open(db_path, embedder=minilm, clock=clock) as mem:
        yield mem, _town(mem, clock)


def _crisis_read(mem: Memory, crisis: str, k: int = 20) -> list[Hit]:
    return mem.peek(QUESTION, agents=mem.agents(), crisis=crisis, k=k, explain=True)


def test_a_same_scope_unrelated_memory_stays_below_the_evidence(
    town: tuple[Memory, dict[str, str]],
) -> None:
    mem, ids = town
    hits = _crisis_read(mem, ids["riot"])
    texts = [h.record.text for h in hits]
    poem = next(i for i, h in enumerate(hits) if h.record.agent == "bea")
    assert poem >= 3, texts
    symptoms = [texts.index(text) for _, text in SYMPTOMS]
    assert poem > max(symptoms), texts
    causal = hits[poem].breakdown.causal  # type: ignore[union-attr]
    assert causal is not None
    assert causal.fallback
    assert causal.event_id == ids["contest"]
    assert causal.gate is not None
    assert causal.gate < 0.3  # its own weak answer gates it
    assert causal.boost == pytest.approx(causal.effective_strength * causal.gate, rel=1e-5)
    # The chain's witnesses are all in the top 5 (with 0.9 links the root and the cause
    # below it are equally strong: 0.9³ × 1.0 = 0.9² × 0.9).
    assert {
        "My wheat field dried out, nothing grew",
        "The granary keeper turned me away, the bins were empty",
        "Bread costs twice what it did last week",
    } <= set(texts[:5])


def test_the_ungated_fallback_would_have_lifted_it(town: tuple[Memory, dict[str, str]]) -> None:
    """The same read scored by the old rule, recomputed from each hit's explanation (its score
    minus λ × the gated fallback boost, plus λ × the ungated one): the old rule fails this
    scenario, so the test above says something."""
    mem, ids = town
    hits = _crisis_read(mem, ids["riot"])
    weight = mem.preset.causal.weight
    old = {}
    for h in hits:
        b = h.breakdown
        assert b is not None
        assert b.causal is not None
        if b.causal.fallback:  # what the ungated rule added: λ × association × strength
            assert b.causal.effective_strength is not None
            ungated = b.causal.association * b.causal.effective_strength
            old[h.record.text] = h.score - weight * b.causal.boost + weight * ungated
        else:
            old[h.record.text] = h.score
    ranked = sorted(old, key=old.__getitem__, reverse=True)
    poem = next(h.record.text for h in hits if h.record.agent == "bea")
    assert ranked.index(poem) < max(ranked.index(text) for _, text in SYMPTOMS)


def test_a_crisis_context_block_leaves_unrelated_memories_out(
    town: tuple[Memory, dict[str, str]],
) -> None:
    mem, ids = town
    block = mem.context(QUESTION, agents=mem.agents(), crisis=ids["riot"], k=10)
    kept = [e.text for e in block.evidence]
    for _, text in UNRELATED:
        assert text not in kept, kept
    assert "Bread costs twice what it did last week" in kept
    assert block.omitted_irrelevant >= len(UNRELATED)
    assert block.relevance_floor is not None
    assert block.relevance_floor > 0
    assert all(e.lifted or e.relevance >= block.relevance_floor for e in block.evidence)
    assert f"{block.omitted_irrelevant} less relevant" in block.text
    data = block.to_dict()
    assert data["omitted_irrelevant"] == block.omitted_irrelevant
    assert {"relevance", "lifted"} <= set(data["evidence"][0])
    everything = mem.context(
        QUESTION, agents=mem.agents(), crisis=ids["riot"], k=10,
        min_relevance=None,
    )  # fmt: skip
    assert len(everything.evidence) == 10
    assert everything.omitted_irrelevant == 0


def test_a_plain_context_block_keeps_what_answers(town: tuple[Memory, dict[str, str]]) -> None:
    mem, _ = town
    block = mem.context("what happened at the granary?", agents=mem.agents(), k=8)
    kept = [e.text for e in block.evidence]
    assert kept[0] in {text for _, text in SYMPTOMS} | {
        "The granary keeper turned me away, the bins were empty"
    }
    assert "Run the tests with make test before every push" not in kept
    assert block.omitted_irrelevant > 0
    with pytest.raises(ValueError, match="min_relevance"):
        mem.context("granary", k=3, min_relevance=1.5)


def test_the_fallback_still_amplifies_a_relevant_memory(
    town: tuple[Memory, dict[str, str]], clock: SimClock
) -> None:
    """A witness of a same-scope event that does answer the question gains on its peers."""
    mem, ids = town
    fair = mem.add_event(
        "Guards were posted at the granary", scope="market district",
        occurred_at=clock.now() - timedelta(days=2),
    )  # fmt: skip
    guarded = mem.remember("Guards stood at the granary gate all night", agent="ivy",
                           event_id=fair.id)  # fmt: skip
    hit = next(h for h in _crisis_read(mem, ids["riot"], 30) if h.record.id == guarded.id)
    causal = hit.breakdown.causal  # type: ignore[union-attr]
    assert causal is not None
    assert causal.fallback
    assert causal.boost > 0.05
    assert causal.gate is not None
    assert causal.effective_strength is not None
    assert causal.boost == pytest.approx(
        causal.association * causal.effective_strength * causal.gate, rel=1e-5
    )
