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


# Each rule: the words that trigger it and what it adds. The rules, in order:
#   life events (death, birth, marriage, illness, jobs, disasters, violence, crime)  +5
#   strong emotions (love, fear, grief, anger, joy at their strongest)                +3
#   relationships and conflict (argue, betray, apologise, break up, friend, enemy)    +2
#   decisions, commitments and deadlines (decide, promise, plan, deadline, must)       +1
#   an exclamation mark                                                               +1
# Start at 2; routine activities (sleeping, eating, brushing teeth, idle...) cap the score at 1
# unless a life event is present; the result is clamped to 1..10.
_LIFE = _words(
    "die died dies dying death dead killed murder murdered funeral born birth pregnant",
    "married marry marries wedding engaged divorce divorced fired hired promoted promotion",
    "diagnosed cancer hospital surgery injured accident emergency crisis disaster war plague",
    "riot fire flood earthquake arrested prison stolen robbed attacked evicted bankrupt",
    "graduated graduation accepted admission elected resigned",
)
_EMOTION = _words(
    "love loved hate hated terrified afraid furious heartbroken grief grieving devastated",
    "ecstatic thrilled ashamed humiliated desperate panic panicked betrayed",
)
_RELATION = _words(
    "argue argued argument fight fought betray apologise apologize apologised apologized",
    "breakup friend friends enemy enemies rival quarrel confessed confess forgive forgave",
)
_COMMIT = _words("decide decided decision promise promised plan planned deadline must vowed")
_ROUTINE = _words(
    "idle sleeping asleep sleep napping eating breakfast lunch dinner brushing shower showering",
    "walking commuting waking resting browsing",
)


@dataclass(frozen=True, slots=True)
class HeuristicImportance:
    """Keyword rules, documented above and in docs/reflection.md (the default without an
    embedder)."""

    def score_one(self, text: str) -> float:
        life = bool(_LIFE.search(text))
        value = 2.0
        value += 5.0 if life else 0.0
        value += 3.0 if _EMOTION.search(text) else 0.0
        value += 2.0 if _RELATION.search(text) else 0.0
        value += 1.0 if _COMMIT.search(text) else 0.0
        value += 1.0 if "!" in text else 0.0
        if _ROUTINE.search(text) and not life:
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
