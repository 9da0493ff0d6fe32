"""Asking a model for a validated answer (reflection, extraction): the answer is parsed and
validated, and when it does not validate it goes back to the model with what was wrong, up to a
number of attempts. An unreachable model, or answers that stay invalid, raise the caller's error
with every reason; nothing is returned that did not validate."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from chronomem.errors import LLMError, LLMResponseError
from chronomem.llm.base import LLMClient, Message, parse_json

__all__ = ["AnswerError", "ask"]

_T = TypeVar("_T")


class AnswerError(ValueError):
    """The answer does not validate; ``problems`` says why, one line each."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = tuple(problems)


def ask(
    llm: LLMClient,
    prompt: str,
    schema: Mapping[str, Any],
    validate: Callable[[Any], _T],
    attempts: int,
    calls: list[int],
    *,
    what: str,
    error: Callable[..., Exception],
) -> _T:
    """One validated answer to ``prompt``, retrying with the model's own answer and what was
    wrong; ``calls[0]`` counts the calls. ``error(message, reasons=...)`` is raised when the
    model cannot be used or every answer was invalid."""
    messages: list[Message] = [{"role": "user", "content": prompt}]
    reasons: list[str] = []
    for _ in range(attempts):
        calls[0] += 1
        try:
            text = llm.complete(messages, schema=schema)
        except LLMError as exc:
            raise error(
                f"{what} stopped, the model could not be used: {exc}",
                reasons=(*reasons, str(exc)),
            ) from exc
        try:
            return validate(parse_json(text))
        except (LLMResponseError, AnswerError) as exc:
            reasons.append(str(exc))
            messages = [
                *messages,
                {"role": "assistant", "content": text},
                {
                    "role": "user",
                    "content": f"That answer is invalid: {exc}. Answer again, with JSON only.",
                },
            ]
    raise error(
        f"{what} gave up after {attempts} invalid answers: " + " | ".join(reasons),
        reasons=tuple(reasons),
    )
