"""Fusion that knows what its model reads (DESIGN §9, issue 27): where the embedding model does
not read the question's or a record's language, its cosine does not outvote the words; the
explanation says so; a model that reads everything is weighed as before."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from chronomem import ConfigError, Memory, SimClock

from ..conftest import T0, FixedEmbedder

# Eight Korean memories; the question's words match only the one about installing.
MEMORIES = [
    "회의는 매주 화요일 오전 10시에 열린다",
    "패키지는 pnpm으로 설치한다",
    "금요일 오후에는 배포하지 않는다",
    "로그에는 개인정보를 남기지 않는다",
    "커밋 메시지는 영어로 쓴다",
    "테스트 서버는 매일 밤 재시작된다",
    "새 기능은 기능 플래그 뒤에 숨긴다",
    "리뷰어 두 명이 승인해야 머지한다",
]
QUESTION = "의존성 패키지 설치는 어떤 도구로 해?"
NOISE = "회의는 매주 화요일 오전 10시에 열린다"


class Monolingual(FixedEmbedder):
    """Fixed vectors whose cosines favour the meeting for every question (what an English model's
    cosines on Korean text look like: noise), declaring the languages it reads."""

    def __init__(self, languages: Sequence[str] | None) -> None:
        super().__init__(dim=4, model_id="test/monolingual")
        self.languages = None if languages is None else frozenset(languages)

    def vector(self, text: str) -> npt.NDArray[np.float32]:
        if text == NOISE or text.endswith("?"):
            return np.asarray([1, 0, 0, 0], dtype=np.float32)
        seed = sum(map(ord, text)) % 97
        v = np.asarray([0.1, 1 + seed, seed % 5, 1], dtype=np.float32)
        return v / np.linalg.norm(v)


def _top(tmp_path: Path, languages: Sequence[str] | None, question: str = QUESTION) -> list[str]:
    with Memory.open(
        tmp_path / f"{languages}.db", embedder=Monolingual(languages), clock=SimClock(T0)
    ) as mem:
        mem.remember_many(MEMORIES)
        hits = mem.peek(question, k=3, explain=True)
        return [h.record.text for h in hits]


def test_an_unread_question_is_answered_by_its_words(tmp_path: Path) -> None:
    assert _top(tmp_path, ["en"])[0] == "패키지는 pnpm으로 설치한다"
    # the same model said to read Korean: its cosines count, and the noise wins
    assert _top(tmp_path, ["en", "ko"])[0] == NOISE
    assert _top(tmp_path, None)[0] == NOISE  # a model that declares nothing: as before


def test_the_explanation_names_the_language_the_model_does_not_read(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "x.db", embedder=Monolingual(["en"]), clock=SimClock(T0)) as mem:
        mem.remember_many(MEMORIES)
        [hit] = mem.peek(QUESTION, k=1, explain=True)
    assert hit.breakdown is not None
    assert hit.breakdown.unread_language == "ko"
    assert "does not read" in hit.breakdown.cues["language"]
    assert hit.breakdown.relevance_dense is None  # the cosine was not used


def test_a_read_question_weighs_unread_records_by_their_words(tmp_path: Path) -> None:
    """An English question over English and Korean records: the English records' cosines count,
    the Korean records are weighed by their words alone (``unread_language`` on their hits)."""
    clock = SimClock(T0)
    with Memory.open(tmp_path / "m.db", embedder=Monolingual(["en"]), clock=clock) as mem:
        mem.remember("the office moved to Lyon")
        mem.remember("pnpm 패키지 설치 방법")
        clock.advance(timedelta(hours=1))
        hits = mem.peek("how to install pnpm packages?", k=2, explain=True)
    by_text = {h.record.text: h.breakdown for h in hits}
    korean = by_text["pnpm 패키지 설치 방법"]
    assert korean is not None
    assert korean.unread_language == "ko"
    assert korean.relevance_lexical is not None
    assert korean.relevance_lexical > 0
    english = by_text["the office moved to Lyon"]
    assert english is not None
    assert english.unread_language is None


class Declared(FixedEmbedder):
    """Every text on one vector (an English model's cosines on Chinese: 1.0 for any two
    sentences), declaring the languages it reads; explicit ``embedding=`` vectors win."""

    def __init__(self, languages: Sequence[str] | None) -> None:
        super().__init__(dim=16, model_id="test/declared")
        self.languages = None if languages is None else frozenset(languages)

    def vector(self, text: str) -> npt.NDArray[np.float32]:
        return _axis(0)


def _axis(i: int, *extra: tuple[int, float]) -> npt.NDArray[np.float32]:
    out = np.zeros(16, dtype=np.float32)
    out[i] = 1.0
    for j, x in extra:
        out[j] = x
    return out / np.linalg.norm(out)


def _open(tmp_path: Path, languages: Sequence[str] | None) -> Memory:
    return Memory.open(
        tmp_path / f"w{languages}.db", embedder=Declared(languages), clock=SimClock(T0)
    )


def test_the_gate_compares_texts_where_the_model_does_not_read(tmp_path: Path) -> None:
    """A dog is not a cat because an English model cannot tell them apart in Chinese."""
    with _open(tmp_path, ["en"]) as mem:
        assert mem.remember("小王养了一只狗", kind="fact").stored
        assert mem.remember("小王养了一只猫", kind="fact").stored
        assert not mem.remember("小王养了一只狗", kind="fact").stored  # the same text still is
        batch = mem.remember_many(["他住在北京", "他住在上海"], kind="fact")
        assert [r.stored for r in batch] == [True, True]
        # English is read: one vector for two sentences is a duplicate
        assert mem.remember("Wang has a dog", kind="fact").stored
        assert not mem.remember("Wang has a cat", kind="fact").stored
    with _open(tmp_path, None) as mem:  # a model that declares nothing: its cosine decides
        assert mem.remember("小王养了一只狗", kind="fact").stored
        assert not mem.remember("小王养了一只猫", kind="fact").stored


def test_a_crisis_associates_unread_records_only_through_witness_links(tmp_path: Path) -> None:
    for languages, via in ((["en"], None), (None, "cosine")):
        clock = SimClock(T0)
        with Memory.open(
            tmp_path / f"c{languages}.db", embedder=Declared(languages), clock=clock
        ) as mem:
            cause = mem.add_event("粮仓空了", embedding=_axis(3))
            clock.advance(days=1)
            riot = mem.add_event("市场发生骚乱", kind="crisis", embedding=_axis(4))
            mem.link(cause.id, riot.id)
            near = mem.remember("人们在抱怨粮食", embedding=_axis(3, (2, 0.2))).id
            witness = mem.remember("我看见粮仓是空的", event_id=cause.id, embedding=_axis(9)).id
            hits = {
                h.record.id: h.breakdown
                for h in mem.peek("为什么?", query_embedding=_axis(0), crisis=riot.id, explain=True)
            }
        assert hits[near] is not None
        assert hits[near].causal is not None
        assert hits[near].causal.via == via, languages
        assert hits[witness] is not None
        assert hits[witness].causal is not None
        assert hits[witness].causal.boost == 1.0  # a witness link needs no cosine


def test_auto_link_refuses_an_effect_the_model_cannot_read(tmp_path: Path) -> None:
    clock = SimClock(T0)
    with Memory.open(tmp_path / "a.db", embedder=Declared(["en"]), clock=clock) as mem:
        chinese = mem.add_event("连续几个月没有下雨", embedding=_axis(1))
        clock.advance(days=1)
        wells = mem.add_event("the wells ran dry", embedding=_axis(1, (2, 0.1)))
        clock.advance(days=1)
        drought = mem.add_event("drought destroyed the harvest", embedding=_axis(1))
        made = mem.auto_link(drought.id, window=timedelta(days=30), threshold=0.9)
        assert [x.cause for x in made] == [wells.id]  # the Chinese event's cosine is not read
        clock.advance(days=1)
        famine = mem.add_event("饥荒开始了", embedding=_axis(1))
        with pytest.raises(ConfigError, match="does not read"):
            mem.auto_link(famine.id, window=timedelta(days=30))
        assert chinese.id not in {x.cause for x in mem.links()}


def test_without_cosines_the_gate_compares_what_was_said_and_by_whom(tmp_path: Path) -> None:
    """An exact duplicate is the same words by the same speaker (``read_text``): the same words
    of another speaker are another memory, in a batch and against the store."""
    with Memory.open(tmp_path / "s.db", embedder=None, clock=SimClock(T0)) as mem:
        assert mem.remember("I like green tea", kind="fact", speaker="ann").stored
        assert not mem.remember("I like green tea", kind="fact", speaker="ann").stored
        assert mem.remember("I like green tea", kind="fact", speaker="bob").stored
        assert not mem.remember("ann: I like green tea", kind="fact").stored  # the same line
        batch = mem.remember_many(
            [{"text": "We met in Lyon", "speaker": s} for s in ("ann", "bob", "ann")], kind="fact"
        )
        assert [r.stored for r in batch] == [True, True, False]
