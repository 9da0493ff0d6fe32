"""The reflection prompts (after Park et al. 2023, §4.2) and their answer schemas.

Answers are JSON with integer citations, validated by :mod:`chronomem.reflection.validate` — not
"(because of 1, 5, 3)" parsed with a regex.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "INSIGHTS_SCHEMA",
    "QUESTIONS_SCHEMA",
    "insights_prompt",
    "numbered",
    "questions_prompt",
]

QUESTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"questions": {"type": "array", "items": {"type": "string"}}},
    "required": ["questions"],
    "additionalProperties": False,
}

INSIGHTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "insights": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "insight": {"type": "string"},
                    "evidence": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["insight", "evidence"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["insights"],
    "additionalProperties": False,
}


def numbered(statements: Sequence[str]) -> str:
    return "\n".join(f"{i}. {s}" for i, s in enumerate(statements, start=1))


def questions_prompt(agent: str, statements: Sequence[str], n: int) -> str:
    return (
        f"Statements in {agent}'s memory, oldest first:\n{numbered(statements)}\n\n"
        f"Given only the information above, what are the {n} most salient high-level questions "
        f"we can answer about the subjects in the statements?\n"
        f'Answer with JSON: {{"questions": [<at most {n} distinct questions>]}}'
    )


def insights_prompt(agent: str, question: str, statements: Sequence[str], n: int) -> str:
    return (
        f"Statements about {agent}, relevant to: {question}\n{numbered(statements)}\n\n"
        f"What {n} high-level insights can you infer from the above statements? Cite the "
        f"statements each insight rests on by their numbers.\n"
        f'Answer with JSON: {{"insights": [{{"insight": "<one insight>", "evidence": '
        f"[<statement numbers, 1 to {len(statements)}>]}}, ...]}} with at most {n} insights."
    )
