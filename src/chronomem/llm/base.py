"""The LLM contract: chat messages in, text out, errors typed (never returned as text)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from chronomem.errors import LLMResponseError

__all__ = ["LLMClient", "Message", "parse_json"]

Message = Mapping[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}


@runtime_checkable
class LLMClient(Protocol):
    """Something that completes a chat.

    ``schema`` (a JSON Schema object) asks for a JSON answer of that shape where the backend
    supports it; callers still validate what comes back. Failures raise
    :class:`~chronomem.errors.LLMError` subclasses — a client never returns an error message as if
    the model had written it.
    """

    @property
    def model(self) -> str: ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> str: ...


def parse_json(text: str) -> Any:
    """Parse a model's JSON answer, tolerating a Markdown code fence around it."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0]
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise LLMResponseError(f"the answer is not JSON ({exc.msg}): {text[:200]!r}") from None
