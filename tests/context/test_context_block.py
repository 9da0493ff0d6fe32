"""Context blocks against golden files (`pytest --update-goldens` rewrites them)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from chronomem import Memory, SimClock
from chronomem.context.block import approximate_tokens

from ..conftest import T0

GOLDEN = Path(__file__).parent / "golden"
ID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")


def v(i: int, *extra: tuple[int, float]) -> np.ndarray:
    out = np.zeros(16)
    out[i] = 1.0
    for j, x in extra:
        out[j] = x
    return out / np.linalg.norm(out)


def _stable(text: str) -> str:
    """Ids carry random bits: number them in order of first appearance."""
    seen: dict[str, str] = {}
    return ID.sub(lambda m: seen.setdefault(m.group(0), f"<id{len(seen) + 1}>"), text)


def _check(name: str, text: str, request: pytest.FixtureRequest) -> None:
    path = GOLDEN / f"{name}.txt"
    stable = _stable(text)
    if request.config.getoption("--update-goldens") or not path.exists():
        path.write_text(stable)
    assert stable == path.read_text(), f"{path} differs; review and run with --update-goldens"


@pytest.fixture
def town(mem: Memory, clock: SimClock) -> tuple[Memory, str]:
    names = [
        ("Three months without rain in the river valley", "happening"),
        ("The council ordered grain rationing", "decision"),
        ("Bread is sold on a black market behind the tannery", "outcome"),
        ("Crowds gathered outside the granary", "outcome"),
        ("Riot in the market square", "crisis"),
    ]
    events = []
    for i, (text, kind) in enumerate(names):
        events.append(mem.add_event(text, kind=kind, scope="market", embedding=v(8 + i)))
        clock.advance(days=9)
    for (cause, effect), weight in zip(
        itertools.pairwise(events), (0.9, 0.8, 0.7, 1.0), strict=True
    ):
        mem.link(cause.id, effect.id, weight)
    mem.remember("The wells in the north ran dry", agent="farmer-ada", importance=6,
                 event_id=events[0].id, embedding=v(3))  # fmt: skip
    mem.remember("My ration card only buys half a loaf", agent="weaver-bo", importance=5,
                 event_id=events[1].id, embedding=v(4))  # fmt: skip
    for agent in ("guard-cy", "baker-di"):
        mem.remember("Stalls were smashed in the market square", agent=agent, importance=7,
                     embedding=v(0, (1, 0.2)))  # fmt: skip
    mem.remember("Someone threw a stone at the guards", agent="guard-cy", importance=8,
                 embedding=v(0, (1, 0.4)))  # fmt: skip
    retry = mem.remember("The granary is full, no need to worry", agent="clerk-ed",
                         kind="fact", embedding=v(0, (5, 1.0))).id  # fmt: skip
    mem.feedback(retry, "harmful", "the granary was empty")
    clock.advance(days=1)
    return mem, events[-1].id


def test_crisis_block(town: tuple[Memory, str], request: pytest.FixtureRequest) -> None:
    mem, riot = town
    block = mem.context("Why did the market riot break out?", crisis=riot, k=6, touch=False)
    _check("crisis_block", block.text, request)


def test_plain_block_without_a_crisis(
    town: tuple[Memory, str], request: pytest.FixtureRequest
) -> None:
    mem, _ = town
    # The layout of every hit (the fixed vectors make all but one irrelevant: kept on purpose).
    block = mem.context("What happened in the market square?", k=4, touch=False,
                        min_relevance=None)  # fmt: skip
    assert block.chain == ()
    assert "Causal chain" not in block.text
    _check("plain_block", block.text, request)


def test_a_tight_budget_keeps_the_proximate_cause(
    town: tuple[Memory, str], request: pytest.FixtureRequest
) -> None:
    mem, riot = town
    full = mem.context("Why did the market riot break out?", crisis=riot, k=6, touch=False,
                       min_relevance=None)  # fmt: skip
    tight = mem.context("Why did the market riot break out?", crisis=riot, k=6, touch=False,
                        min_relevance=None,
                        budget_tokens=full.tokens // 2)  # fmt: skip
    assert tight.tokens <= full.tokens // 2
    assert approximate_tokens(tight.text) == tight.tokens
    assert tight.omitted_links > 0
    assert tight.omitted_evidence > 0
    proximate = [c for c in full.chain if c.effect_is_crisis]
    assert proximate
    assert all(c in tight.chain for c in proximate)  # the proximate cause stays
    assert tight.evidence[0] == full.evidence[0]  # and the best evidence
    assert "omitted for the token budget" in tight.text
    _check("tight_block", tight.text, request)
    data = tight.to_dict()
    assert data["chain"][-1]["effect"]["id"] == riot
    assert [e["rank"] for e in data["evidence"]] == list(range(1, len(tight.evidence) + 1))


def test_the_default_token_count_counts_a_wide_character_as_a_token() -> None:
    """A CJK character is about one BPE token, not a quarter of one: a Korean block within a
    budget of 100 tokens holds about 100 syllables, not 400."""
    assert approximate_tokens("lighthouse keeper") == 5  # 17 characters / 4, rounded up
    assert approximate_tokens("회의는 매주 화요일") == 8 + 1  # eight syllables, two spaces
    assert approximate_tokens("東京の天気") == 5


def test_the_relevance_cut_holds_in_korean_and_japanese(tmp_path: Path) -> None:
    """The cut reads the read's own relevance, whatever the language: memories that share the
    question's words stay, the others are left out and counted (lexical relevance, no model)."""
    clock = SimClock(T0)
    with Memory.open(tmp_path / "m.db", embedder=None, clock=clock) as mem:
        for text in (
            "곡물 창고 앞에서 폭동이 일어났다", "곡물 창고가 비었다", "오늘 정원에 꽃을 심었다",
            "穀物倉庫の前で暴動が起きた", "今日は庭に花を植えた",
        ):  # fmt: skip
            mem.remember(text, agent="ada")
        ko = mem.context("곡물 창고 폭동", k=5, touch=False)
        assert ko.evidence[0].text == "곡물 창고 앞에서 폭동이 일어났다"
        assert "오늘 정원에 꽃을 심었다" not in [e.text for e in ko.evidence]
        assert ko.omitted_irrelevant >= 1
        ja = mem.context("穀物倉庫の暴動", k=5, touch=False)
        assert [e.text for e in ja.evidence] == ["穀物倉庫の前で暴動が起きた"]
        assert ja.omitted_irrelevant >= 1
        everything = mem.context("穀物倉庫の暴動", k=5, touch=False, min_relevance=0)
        assert len(everything.evidence) > 1
