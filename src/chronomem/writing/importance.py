"""Importance ("poignancy", 1..10) for records written without one (DESIGN §3).

Two scorers here: :class:`HeuristicImportance` — transparent, documented rules, no model, the
default of a Memory without an embedder — and :class:`LLMImportance`, the paper's prompt with the
answer validated. A failed LLM answer is an error, or, only when a ``fallback`` scorer is given,
that scorer's value; never ``None``. With an embedder the default is the anchor scorer
(:mod:`chronomem.writing.anchors`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from chronomem.errors import LLMError, LLMResponseError
from chronomem.llm.base import LLMClient, parse_json

__all__ = ["HeuristicImportance", "ImportanceScorer", "LLMImportance"]


@runtime_checkable
class ImportanceScorer(Protocol):
    """Scores texts 1..10 (1 mundane, 10 life-changing), one per text, in order."""

    def score(self, texts: Sequence[str]) -> list[float]: ...


def _words(*groups: str) -> re.Pattern[str]:
    words = "|".join(w for g in groups for w in g.split())
    return re.compile(rf"\b(?:{words})\b", re.IGNORECASE)


def _phrases(*groups: str) -> re.Pattern[str]:
    """Korean, Japanese and Chinese words of a rule: substrings (these scripts have no word
    boundaries; ``\\s?`` where Korean may or may not space), each only in its own script, so
    none can fire on an English text."""
    return re.compile("|".join(w for g in groups for w in g.split()))


# Each rule: the words that trigger it and what it adds. The rules, in order:
#   life events (death, birth, marriage, illness, jobs, disasters, violence, crime)  +5
#   strong emotions (love, fear, grief, anger, joy at their strongest)                +3
#   relationships and conflict (argue, betray, apologise, break up, friend, enemy)    +2
#   decisions, commitments and deadlines (decide, promise, plan, deadline, must)       +1
#   an exclamation mark                                                               +1
# Start at 2; routine activities (sleeping, eating, brushing teeth, idle...) cap the score at 1
# unless a life event is present; the result is clamped to 1..10. Each rule has English words
# and, translated from them (not from any labelled memory), Korean, Japanese and Chinese ones.
_LIFE = _words(
    "die died dies dying death dead killed murder murdered funeral born birth pregnant",
    "married marry marries wedding engaged divorce divorced fired hired promoted promotion",
    "diagnosed cancer hospital surgery injured accident emergency crisis disaster war plague",
    "riot fire flood earthquake arrested prison stolen robbed attacked evicted bankrupt",
    "graduated graduation accepted admission elected resigned",
)
_LIFE_CJK = _phrases(
    "죽었 죽음 죽는 사망 돌아가셨 돌아가시 살해 장례 태어 출산 임신 결혼 약혼 이혼 해고 채용 승진",
    "진단 암이 암을 암에 암으로 병원 수술 부상 다쳤 사고 응급 위기 재난 재해 전쟁 전염병 폭동",
    r"화재 불이\s?났 홍수 지진 체포 감옥 교도소 도난 도둑 강도 습격 쫓겨 파산",
    "졸업 합격 입학 당선 사직",
    "死 亡くな 殺 葬式 葬儀 生まれ 出産 妊娠 結婚 婚約 離婚 解雇 クビ 採用 昇進 診断 癌 がん 病院",
    "手術 怪我 けが 事故 救急 危機 災害 戦争 疫病 暴動 火事 火災 洪水 地震 逮捕 刑務所 盗ま 強盗",
    "襲わ 立ち退 破産 卒業 合格 入学 当選 辞職",
    "去世 逝世 杀 葬礼 出生 生下 怀孕 结婚 订婚 离婚 解雇 开除 录用 升职 晋升 诊断 医院 手术 受伤",
    "车祸 急救 急诊 危机 灾难 战争 瘟疫 暴乱 火灾 着火 洪水 地震 逮捕 监狱 被偷 抢劫 袭击 驱逐",
    "破产 毕业 录取 当选 辞职",
)
_EMOTION = _words(
    "love loved hate hated terrified afraid furious heartbroken grief grieving devastated",
    "ecstatic thrilled ashamed humiliated desperate panic panicked betrayed",
)
_EMOTION_CJK = _phrases(
    "사랑 증오 미워 무서 두려 겁이 분노 격분 비통 슬픔 절망 황홀 부끄러 수치 굴욕 필사 공황 배신",
    "愛し 大好き 憎 怖 恐ろし 激怒 悲し 絶望 失恋 恥ずかし 屈辱 必死 パニック 裏切",
    "爱上 深爱 我爱 恨 害怕 恐惧 愤怒 心碎 悲痛 伤心 绝望 狂喜 羞愧 羞辱 惊慌 背叛",
)
_RELATION = _words(
    "argue argued argument fight fought betray apologise apologize apologised apologized",
    "breakup friend friends enemy enemies rival quarrel confessed confess forgive forgave",
)
_RELATION_CJK = _phrases(
    "말다툼 다퉜 다투 싸우 싸웠 싸움 배신 사과했 사과하 헤어 친구 원수 라이벌 고백 용서",
    "口論 喧嘩 けんか 裏切 謝 別れ 友達 友人 親友 敵 ライバル 告白 許し 許す",
    "争吵 吵架 吵了 打架 背叛 道歉 分手 朋友 敌人 对手 告白 表白 原谅",
)
_COMMIT = _words("decide decided decision promise promised plan planned deadline must vowed")
_COMMIT_CJK = _phrases(
    "결정 결심 약속 계획 마감 반드시 해야 맹세",
    "決め 決定 決心 約束 計画 締め切り 締切 必ず なければならない 誓",
    "决定 决心 承诺 答应 约定 计划 截止 必须 发誓",
)
_ROUTINE = _words(
    "idle sleeping asleep sleep napping eating breakfast lunch dinner brushing shower showering",
    "walking commuting waking resting browsing",
)
_ROUTINE_CJK = _phrases(
    r"낮잠 잠자 아침\s?식사 아침밥 점심 저녁\s?식사 저녁밥 이를\s?닦 양치 샤워 산책 출근길 통근",
    "일어났 휴식",
    "昼寝 寝ている 朝ご飯 朝食 昼ご飯 昼食 晩ご飯 夕食 歯を磨 シャワー 散歩 通勤 起きた 休憩",
    "午睡 睡觉 早饭 早餐 午饭 午餐 晚饭 晚餐 刷牙 洗澡 淋浴 散步 上班路上 通勤 起床 休息",
)
_RULES = ((_LIFE, _LIFE_CJK), (_EMOTION, _EMOTION_CJK), (_RELATION, _RELATION_CJK),
          (_COMMIT, _COMMIT_CJK), (_ROUTINE, _ROUTINE_CJK))  # fmt: skip


@dataclass(frozen=True, slots=True)
class HeuristicImportance:
    """Keyword rules, documented above and in docs/reflection.md (the default without an
    embedder, and for texts in a language the embedder does not read).

    Attributes:
        cjk: the rules' Korean, Japanese and Chinese words too (``False``: English only, as
            before issue 27; kept to measure what they add).
    """

    cjk: bool = True

    def score_one(self, text: str) -> float:
        hits = [
            bool(english.search(text)) or (self.cjk and bool(other.search(text)))
            for english, other in _RULES
        ]
        life, emotion, relation, commit, routine = hits
        value = 2.0
        value += 5.0 if life else 0.0
        value += 3.0 if emotion else 0.0
        value += 2.0 if relation else 0.0
        value += 1.0 if commit else 0.0
        value += 1.0 if "!" in text or "！" in text else 0.0
        if routine and not life:
            value = 1.0
        return float(min(10.0, max(1.0, value)))

    def score(self, texts: Sequence[str]) -> list[float]:
        return [self.score_one(t) for t in texts]


POIGNANCY_PROMPT = (
    "On the scale of 1 to 10, where 1 is purely mundane (e.g., brushing teeth, making bed) and "
    "10 is extremely poignant (e.g., a break up, college acceptance), rate the likely poignancy "
    "of the following piece of memory.\n"
    "{persona}"
    "Memory: {text}\n"
    'Answer with JSON: {{"rating": <an integer from 1 to 10>}}'
)
RATING_SCHEMA = {
    "type": "object",
    "properties": {"rating": {"type": "integer", "minimum": 1, "maximum": 10}},
    "required": ["rating"],
    "additionalProperties": False,
}


class LLMImportance:
    """The paper's poignancy prompt (Park et al. 2023, §4.1), one call per text.

    The answer must be JSON ``{"rating": n}`` with an integer n in 1..10; anything else is
    retried ``retries`` times, then raises :class:`~chronomem.errors.LLMResponseError` — unless a
    ``fallback`` scorer is given, whose value is then used (an explicit choice, never silent:
    :attr:`fallbacks` counts them).

    Args:
        llm: the client.
        persona: an optional sentence about the agent ("Isabella is a cafe owner...").
        fallback: the scorer used when the model fails (e.g. :class:`HeuristicImportance`).
    """

    def __init__(
        self,
        llm: LLMClient,
        *,
        persona: str | None = None,
        retries: int = 1,
        fallback: ImportanceScorer | None = None,
    ) -> None:
        self.llm = llm
        self.persona = persona
        self.retries = retries
        self.fallback = fallback
        self.fallbacks = 0

    def _rate(self, text: str) -> float:
        persona = f"About the agent: {self.persona}\n" if self.persona else ""
        prompt = POIGNANCY_PROMPT.format(persona=persona, text=text)
        problem = ""
        for _ in range(self.retries + 1):
            answer = self.llm.complete(
                [{"role": "user", "content": prompt + problem}], schema=RATING_SCHEMA
            )
            try:
                rating = parse_json(answer)["rating"]
            except (LLMResponseError, KeyError, TypeError):
                problem = f'\nYour previous answer was not JSON {{"rating": n}}: {answer[:100]!r}'
                continue
            if (
                isinstance(rating, bool)
                or not isinstance(rating, int | float)
                or not math.isfinite(rating)
                or rating != int(rating)
                or not 1 <= rating <= 10
            ):
                problem = f"\nYour previous rating {rating!r} is not an integer from 1 to 10."
                continue
            return float(rating)
        raise LLMResponseError(f"no valid importance rating for {text[:80]!r}: {problem.strip()}")

    def score(self, texts: Sequence[str]) -> list[float]:
        out = []
        for text in texts:
            try:
                out.append(self._rate(text))
            except LLMError:
                if self.fallback is None:
                    raise
                self.fallbacks += 1
                out.append(self.fallback.score([text])[0])
        return out
