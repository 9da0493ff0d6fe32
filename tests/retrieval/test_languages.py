"""Fusion that knows what its model reads (DESIGN §9, issue 27): where the embedding model does
not read the question's or a record's language, its cosine does not outvote the words; the
explanation says so; a model that reads everything is weighed as before."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt

from chronomem import Memory, SimClock

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
