"""A scripted in-process client: answers from a list, records what it was asked. For tests of
logic that calls an LLM (the HTTP client itself is tested against a real local server)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from chronomem.errors import LLMError
from chronomem.llm.base import Message

__all__ = ["ScriptedLLM"]

Answer = str | LLMError | Callable[[Sequence[Message]], str]


class ScriptedLLM:
    """Returns the scripted answers in order; an :class:`LLMError` in the script is raised; a
    callable is called with the messages. Running out of answers is an :class:`LLMError`."""

    def __init__(self, answers: Iterable[Answer], *, model: str = "scripted") -> None:
        self._answers = list(answers)
        self._model = model
        self.calls: list[list[dict[str, str]]] = []

    @property
    def model(self) -> str:
        return self._model

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> str:
        self.calls.append([dict(m) for m in messages])
        if not self._answers:
            raise LLMError("the scripted LLM has no answers left")
        answer = self._answers.pop(0)
        if isinstance(answer, LLMError):
            raise answer
        return answer(messages) if callable(answer) else answer
