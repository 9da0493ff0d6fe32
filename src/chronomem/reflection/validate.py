"""Validation of reflection answers (DESIGN §5). Parsing a citation is not verifying it: every
index must be in range, every insight must cite something, nothing may repeat, and the model may
not answer more than it was asked. Each function returns the clean value or raises
:class:`AnswerError` listing every problem, which the caller sends back to the model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chronomem.llm.answers import AnswerError
from chronomem.text import normalise_text

__all__ = ["AnswerError", "Insight", "validate_insights", "validate_questions"]


@dataclass(frozen=True, slots=True)
class Insight:
    text: str
    citations: tuple[int, ...]  # 0-based indices into the statements, in the order cited


def _items(answer: Any, key: str, limit: int, problems: list[str]) -> list[Any]:
    """The list under ``key``, noting an empty or too long one in ``problems``."""
    if not isinstance(answer, dict) or not isinstance(answer.get(key), list):
        raise AnswerError([f'the answer must be an object {{"{key}": [...]}}'])
    items: list[Any] = answer[key]
    if not items:
        problems.append(f"no {key} were given")
    if len(items) > limit:
        problems.append(f"{len(items)} {key} were given; at most {limit} were asked for")
    return items


def validate_questions(answer: Any, *, limit: int) -> list[str]:
    problems: list[str] = []
    questions = _items(answer, "questions", limit, problems)
    seen: set[str] = set()
    clean = []
    for i, q in enumerate(questions, start=1):
        if not isinstance(q, str) or not q.strip():
            problems.append(f"question {i} is not a non-empty string")
            continue
        key = normalise_text(q)
        if key in seen:
            problems.append(f"question {i} repeats an earlier question")
        seen.add(key)
        clean.append(q.strip())
    if problems:
        raise AnswerError(problems)
    return clean


def validate_insights(
    answer: Any, *, statements: int, limit: int, known: set[str] | None = None
) -> list[Insight]:
    """``statements`` is how many numbered statements were shown (citations are 1-based);
    ``known`` holds normalised texts of insights already accepted in this reflection."""
    problems: list[str] = []
    items = _items(answer, "insights", limit, problems)
    seen = set(known or ())
    clean = []
    for i, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            problems.append(f"insight {i} is not an object")
            continue
        text, evidence = item.get("insight"), item.get("evidence")
        if not isinstance(text, str) or not text.strip():
            problems.append(f"insight {i} has no text")
            continue
        key = normalise_text(text)
        if key in seen:
            problems.append(f"insight {i} repeats an earlier insight: {text.strip()[:60]!r}")
        seen.add(key)
        if not isinstance(evidence, list) or not evidence:
            problems.append(f"insight {i} cites no statement; every insight needs a citation")
            continue
        bad = [
            e for e in evidence
            if isinstance(e, bool) or not isinstance(e, int) or not 1 <= e <= statements
        ]  # fmt: skip
        if bad:
            problems.append(f"insight {i} cites {bad}; statements are numbered 1 to {statements}")
            continue
        clean.append(Insight(text.strip(), tuple(dict.fromkeys(e - 1 for e in evidence))))
    if problems:
        raise AnswerError(problems)
    return clean
